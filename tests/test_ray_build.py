"""``mmlb build --executor ray`` on a local Ray: the same parquet bytes as a local build for two
configs from the real COCO sample, and a resumed ``--all`` keeps complete configs."""
from __future__ import annotations

import argparse
from pathlib import Path

import pytest

pytest.importorskip("ray")

from mmlbdata.dataset.build import build_all, build_configs, run_locally  # noqa: E402
from mmlbdata.dataset.ray_build import RayExecutor  # noqa: E402
from mmlbdata.cli import build as build_cmd  # noqa: E402
from mmlbdata.dataset.writer import read_manifest  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

CONFIGS = ["vh_single_8k", "vh_multi_8k"]


@pytest.fixture(scope="module")
def local_ray():
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


def parquet_bytes(out: Path) -> dict[str, bytes]:
    """Every config's rows (metadata files) and the image tree, byte for byte."""
    files = sorted([*out.glob("*.metadata.parquet"), *(out / "images").rglob("*")])
    return {str(f.relative_to(out)): f.read_bytes() for f in files if f.is_file()}


def cli(*argv) -> int:
    parser = argparse.ArgumentParser(prog="mmlb")
    build_cmd.register(parser.add_subparsers())
    args = parser.parse_args([str(a) for a in argv])
    return args.func(args)


def test_ray_build_is_byte_identical_to_local(coco_mini, tokenizer_path, local_ray, tmp_path):
    common = dict(limit=4, tokenizer=tokenizer_path, progress=False)
    local = build_configs(CONFIGS, {"coco": coco_mini}, tmp_path / "local", store_root=tmp_path / "s1", **common)
    assert all(r.ok for r in local)
    assert cli("build", *CONFIGS, "--source", f"coco={coco_mini}", "--out", tmp_path / "ray", "--limit", 4,
               "--tokenizer", tokenizer_path, "--cache-dir", tmp_path / "c2", "--executor", "ray",
               "--no-progress") == 0
    ours, theirs = parquet_bytes(tmp_path / "ray"), parquet_bytes(tmp_path / "local")
    assert sorted(ours) == sorted(theirs) and sum(name.endswith(".metadata.parquet") for name in ours) == 2
    assert ours == theirs
    assert all(r.stats.num_rows > 0 for r in local)


def test_ray_and_local_manifests_name_source_files_alike(real_data, tokenizer_path, local_ray, tmp_path,
                                                         monkeypatch):
    """A Ray task gets the sources made absolute, a local build the relative path typed: the file of
    a skipped entry was recorded absolute by one and relative by the other (issue #27)."""
    from test_mmlb_release import _needle_release

    _needle_release(tmp_path / "mmneedle", real_data)  # its entry 2 escapes the release: skipped
    monkeypatch.chdir(tmp_path)
    common = dict(tokenizer=tokenizer_path, progress=False, store_root=tmp_path / "store")
    for out, executor in (("local", run_locally), ("ray", RayExecutor())):
        [result] = build_configs(["mmneedle_m1_n2_k1"], {"mmneedle_release": Path("mmneedle")}, tmp_path / out,
                                 executor=executor, **common)
        assert result.ok, result.error
    local, ray = (read_manifest(tmp_path / out, "mmneedle_m1_n2_k1") for out in ("local", "ray"))
    assert (local["sources"], local["report"]) == (ray["sources"], ray["report"])
    assert [s["file"] for s in ray["report"]["skipped"]] == ["mmneedle/metadata_stitched/annotations_1_2_2.json"]
    assert parquet_bytes(tmp_path / "local") == parquet_bytes(tmp_path / "ray")


def test_ray_build_all_resumes(coco_mini, tokenizer_path, local_ray, tmp_path):
    out = tmp_path / "out"
    kwargs = dict(limit=3, tokenizer=tokenizer_path, progress=False, store_root=tmp_path / "store",
                  executor=RayExecutor())
    first = build_all(CONFIGS, {"coco": coco_mini}, out, **kwargs)
    assert [r.status for r in first] == ["built", "built"]
    before = parquet_bytes(out)
    # one config lost (as if its node died before the move): only that one is rebuilt
    (out / f"{CONFIGS[1]}.metadata.parquet").unlink()
    second = build_all(CONFIGS, {"coco": coco_mini}, out, **kwargs)
    assert [r.status for r in second] == ["kept", "built"]
    assert parquet_bytes(out) == before
