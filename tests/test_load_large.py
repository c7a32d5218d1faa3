"""Configs at real size load both ways, with reader memory bounded by the row group (embedded
layout) or by a row (files layout: rows hold image paths), not by the config.

The configs are built from generated 640x480 JPEGs (real pixel size: 391 tokens each, so a 128K
row holds 335 images), as ``benchmarks/bench_load.py`` does at larger scale. Before the writer
bounded row groups by decoded bytes, each of these configs was one row group holding all of its
decoded images (the 600-row vh_single_8k: 2.2 GB, which ``load_dataset`` could not read at all).
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from benchmarks.bench_load import images_per_row, make_jpegs, synthetic_rows
from mmlbdata.dataset.build import store_config
from mmlbdata.core.store import ImageStore
from mmlbdata.dataset.writer import DEFAULT_ROW_GROUP_BYTES, MIN_ROW_GROUP_ROWS

pytestmark = pytest.mark.slow

SIZES = {"synthetic_8k": (8192, 300), "synthetic_128k": (131072, 24)}

LOAD = """
import json, sys
import datasets, pyarrow as pa
datasets.disable_progress_bars()
folder, config, cache, streaming = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1"
ds = datasets.load_dataset(folder, config, split="test", cache_dir=cache, streaming=streaming)
if streaming:
    images = [len(row["images"]) for row in ds.decode(False)]
else:
    images = [len(ds[i]["images"]) for i in (0, ds.num_rows - 1)]
print(json.dumps({"images": images, "pool_peak": pa.default_memory_pool().max_memory(),
                  # VmHWM, this process's own: ru_maxrss carries pytest's peak over fork + exec
                  "rss_peak": next(int(line.split()[1]) * 1024 for line in open("/proc/self/status")
                                   if line.startswith("VmHWM:"))}))
"""


LAYOUTS = ("embedded", "files")


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """``<root>/<layout>``: both configs in both layouts, from the same 64 images."""
    root = tmp_path_factory.mktemp("large")
    refs = make_jpegs(ImageStore(root.parent / "large_store"), 64, sigma=30)
    for layout in LAYOUTS:
        for config, (length, rows) in SIZES.items():
            store_config(root / layout, config, synthetic_rows(refs, length, rows), layout=layout)
    return root


@pytest.fixture(scope="module")
def large(built) -> Path:
    return built / "embedded"


def _row_group_decoded_bytes(path: Path) -> list[tuple[int, int]]:
    """(rows, decoded image bytes) of every row group, read one group at a time."""
    parquet = pq.ParquetFile(path)
    groups = []
    for index in range(parquet.num_row_groups):
        table = parquet.read_row_group(index, columns=["images"])
        blobs = table.column("images").combine_chunks().flatten().field("bytes")
        groups.append((table.num_rows, sum(len(b) for b in blobs.to_pylist())))
    return groups


def _load(folder: Path, config: str, cache: Path, streaming: bool) -> dict:
    done = subprocess.run([sys.executable, "-c", LOAD, str(folder), config, str(cache), "1" if streaming else "0"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("config", sorted(SIZES))
def test_row_groups_are_bounded_by_decoded_image_bytes(large, config):
    manifest = json.loads((large / "manifests" / f"{config}.json").read_text())["stats"]
    length, rows = SIZES[config]
    assert manifest["num_rows"] == rows and manifest["num_images"] == rows * images_per_row(length)
    groups = [g for path in sorted((large / "data" / config).glob("*.parquet")) for g in _row_group_decoded_bytes(path)]
    assert sum(r for r, _ in groups) == rows and len(groups) == manifest["num_row_groups"] > 1
    assert sum(b for _, b in groups) == manifest["image_bytes_decoded"] > 5 * DEFAULT_ROW_GROUP_BYTES
    row_bytes = manifest["image_bytes_decoded"] / rows
    for num_rows, decoded in groups:  # over the budget only by the rows a group must hold
        assert decoded <= max(DEFAULT_ROW_GROUP_BYTES, MIN_ROW_GROUP_ROWS * row_bytes * 1.1)
    assert manifest["row_group_decoded_max"] == max(b for _, b in groups)
    # 64 distinct images: the shared haystacks are stored once per row group
    assert manifest["num_bytes"] < manifest["image_bytes_decoded"] / 3


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("streaming", [False, True], ids=["in_memory", "streaming"])
@pytest.mark.parametrize("config", sorted(SIZES))
def test_large_configs_load_with_memory_bounded_by_the_row_group(built, config, streaming, layout, tmp_path):
    large = built / layout
    stats = json.loads((large / "manifests" / f"{config}.json").read_text())["stats"]
    result = _load(large, config, tmp_path / "cache", streaming)
    per_row = images_per_row(SIZES[config][0])
    expected = [per_row] * SIZES[config][1] if streaming else [per_row, per_row]
    assert result["images"] == expected
    # Arrow's own high-water mark: a few row groups at most (5-6 measured in memory, whatever the
    # number of rows: `python -m benchmarks.bench_load --sizes 128k:12 128k:48`), below the config
    if layout == "embedded":
        assert result["pool_peak"] < 8 * stats["row_group_decoded_max"], result
    else:  # the files layout's rows hold paths: Arrow holds no image bytes at all
        assert result["pool_peak"] < 0.01 * stats["image_bytes_decoded"], result
        assert stats["num_bytes"] < 1.1 * stats["image_bytes_unique"] + stats["metadata_bytes"]
    assert result["pool_peak"] < 0.8 * stats["image_bytes_decoded"], result
    assert result["rss_peak"] < 2.5e9, result
