"""LongVideoBench with ``num_proc > 1``: videos decoded in worker processes ahead of the build
loop give the serial build's parquet byte for byte, and the same skipped records. Real clips
(friday.mp4, the Tears of Steel webm) from the shared samples."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("av")

from mmlbdata.dataset.build import build_configs  # noqa: E402
from test_lvb import FRIDAY_DURATION, _row, write_release  # noqa: E402

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def release(real_data, tmp_path_factory) -> Path:
    """test_lvb's friday release, plus the Tears of Steel clip, a missing video and a second
    question on the same clip (its frames come from the store)."""
    root = write_release(tmp_path_factory.mktemp("lvb") / "LongVideoBench", real_data)
    shutil.copy(real_data / "video" / "tears-of-steel-battle-clip-medium.webm", root / "videos" / "tos.webm")
    shutil.copy(real_data / "video" / "sintel-en.vtt", root / "subtitles" / "tos.vtt")
    rows = [_row(0, "tos.webm", "tos.vtt", 70.5, starting_timestamp_for_subtitles=15.0),
            _row(1, "friday.mp4", "friday.vtt", FRIDAY_DURATION),
            _row(2, "missing.mp4", "friday.vtt", FRIDAY_DURATION),
            _row(3, "tos.webm", "tos.vtt", 70.5, starting_timestamp_for_subtitles=30.0)]
    (root / "lvb_val.json").write_text(json.dumps(rows))
    return root


def built(release, out: Path, tokenizer, num_proc: int, **kwargs):
    [result] = build_configs(["lvb_val_64f"], {"lvb": release}, out, store_root=out / "store",
                             tokenizer=tokenizer, progress=False, num_proc=num_proc, **kwargs)
    assert result.ok, result.error
    files = sorted([*out.glob("*.metadata.parquet"), *(out / "images").rglob("*")])
    return result, {f.relative_to(out).as_posix(): f.read_bytes() for f in files if f.is_file()}


def test_parallel_decoding_is_byte_identical(release, tmp_path, tokenizer_path):
    serial, serial_bytes = built(release, tmp_path / "serial", tokenizer_path, 1)
    parallel, parallel_bytes = built(release, tmp_path / "parallel", tokenizer_path, 2)
    assert serial.stats.num_rows == 3 and serial_bytes and parallel_bytes == serial_bytes
    assert [s["record"] for s in parallel.report["skipped"]] == [s["record"] for s in serial.report["skipped"]] \
        == ["missing_2"]
    frames = sorted((tmp_path / "parallel" / "store").rglob("*.jpg"))
    assert len(frames) == serial.stats.num_images - 64  # row 3 reuses row 0's frames (same video)


def test_parallel_decoding_stops_at_the_limit(release, tmp_path, tokenizer_path):
    limited, _ = built(release, tmp_path / "limited", tokenizer_path, 2, limit=1)
    assert limited.stats.num_rows == 1


def test_worker_stores_the_frames_the_build_asks_for(release, tmp_path, counter):
    """The worker's job run in this process: a failure there is silent by design, so check it
    really stores the row's 64 frames (a broken worker would leave the store empty)."""
    import mmlb_builders.lvb as lvb
    from mmlbdata.sources.lvb import read_annotations
    from mmlbdata.core.store import ImageStore

    builder = lvb.LongVideoBench("lvb_val_64f", sources={"lvb": release}, store=ImageStore(tmp_path / "store"),
                                 counter=counter)
    lvb._set_worker_builder(builder.worker_arguments())
    row = next(iter(read_annotations(release, "val", builder.report)))
    assert lvb._store_row_frames((release, row, "interleaved")) == row
    assert len(list((tmp_path / "store").rglob("*.jpg"))) == 64
