"""``mmlb build --executor ray --num-proc 2``: the units of work inside the heaviest configs run
as Ray tasks (counted through ``mmlbdata.core.parallel.UNIT_LOG``) and the parquet is the local
build's, byte for byte, on the real samples."""
from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("ray")
pytest.importorskip("av")

from mmlbdata.core import parallel  # noqa: E402
from mmlbdata.dataset.build import build_configs  # noqa: E402
from test_lvb_prefetch import release  # noqa: E402,F401 - the LongVideoBench fixture
from test_ray_build import cli, parquet_bytes  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def unit_log(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("units")


@pytest.fixture(scope="module")
def local_ray(unit_log):
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {parallel.UNIT_LOG: str(unit_log)}})
    yield ray
    ray.shutdown()


def ray_units(unit_log: Path, fn_name: str) -> int:
    """How many units of ``fn_name`` ran as Ray tasks so far (and forget them)."""
    files = list(unit_log.glob(f"{fn_name}.*"))
    for f in files:
        f.unlink()
    return len(files)


def local_and_ray(config: str, source: str, path: Path, tmp_path: Path, tokenizer: Path, *options,
                  limit: int | None = None) -> tuple:
    """Parquet bytes of the serial local build and of ``--executor ray --num-proc 2``."""
    if limit is not None:
        options += ("--limit", limit)
    [local] = build_configs([config], {source: path}, tmp_path / "local", store_root=tmp_path / "s1",
                            tokenizer=tokenizer, progress=False, limit=limit,
                            options=dict(o.split("=", 1) for o in options[1::2] if o != limit))
    assert local.ok, local.error
    assert cli("build", config, "--source", f"{source}={path}", "--out", tmp_path / "ray", "--tokenizer", tokenizer,
               "--cache-dir", tmp_path / "s2", "--executor", "ray", "--num-proc", 2, "--no-progress", *options) == 0
    return local, parquet_bytes(tmp_path / "local"), parquet_bytes(tmp_path / "ray")


def test_map_units_keeps_input_order_on_ray(local_ray, unit_log, monkeypatch):
    monkeypatch.setenv(parallel.UNITS_ON_RAY, "1")
    ray_units(unit_log, "sqrt")
    import math

    assert list(parallel.map_units(math.sqrt, [16, 1, 9, 4, 0], num_proc=2, window=2)) == [4, 1, 3, 2, 0]
    assert ray_units(unit_log, "sqrt") == 5


def test_a_units_error_comes_back_as_itself(local_ray, tmp_path, monkeypatch):
    """A broken page fails its Ray task; the caller meets the PdfError naming the file, as locally."""
    from mmlbdata.media import pdf

    monkeypatch.setenv(parallel.UNITS_ON_RAY, "1")
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4 not really")
    with pytest.raises(pdf.PdfError, match="broken.pdf") as caught:
        list(pdf.iter_render_jobs([(tmp_path / "broken.pdf", 0)], num_proc=2))
    assert type(caught.value) is pdf.PdfError


def test_lvb_videos_decoded_as_ray_tasks(release, local_ray, unit_log, tmp_path, tokenizer_path):  # noqa: F811
    ray_units(unit_log, "_store_row_frames")
    local, ours, theirs = local_and_ray("lvb_val_64f", "lvb", release, tmp_path, tokenizer_path)
    assert local.stats.num_rows == 3 and ours and ours == theirs
    assert ray_units(unit_log, "_store_row_frames") == 4  # one per question, the missing video's too


def distinct_images(out: Path) -> int:
    """Distinct images the built rows point at (each MMNeedle grid is one)."""
    from mmlbdata.dataset.stats import image_paths

    return len({path for f in sorted(out.glob("*.metadata.parquet")) for path in image_paths(f)})


def test_mmneedle_grids_stitched_as_ray_tasks(coco_mini, local_ray, unit_log, tmp_path, tokenizer_path):
    ray_units(unit_log, "_stitch_job")
    local, ours, theirs = local_and_ray("mmneedle_m1_n2_k1", "coco", coco_mini, tmp_path, tokenizer_path,
                                        "--option", "num_samples=6", "--option", "pool_size=12")
    assert local.stats.num_rows == 6 and ours and ours == theirs
    assert ray_units(unit_log, "_stitch_job") == distinct_images(tmp_path / "local") > 1


def test_pdf_pages_rendered_as_ray_tasks(real_data, local_ray, unit_log, tmp_path, tokenizer_path):
    ray_units(unit_log, "_worker_render")
    local, ours, theirs = local_and_ray("mmlongbench_doc_8k", "mmlongbench_doc", real_data / "mmlongbench_doc",
                                        tmp_path, tokenizer_path, limit=3)
    assert local.stats.num_rows == 3 and ours and ours == theirs
    assert ray_units(unit_log, "_worker_render") == distinct_images(tmp_path / "local") > 1
