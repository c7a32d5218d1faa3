"""The writer: load_dataset from any cwd, deduplicated images, atomic configs, determinism."""
from __future__ import annotations

import io
import json
import os

import datasets
import pytest
from PIL import Image

from mmlbdata.core.schema import FEATURES, SchemaError, make_example
from mmlbdata.core.store import ImageStore
from mmlbdata.dataset.build import store_config as write_config
from mmlbdata.dataset.writer import read_manifest


def _images(store, count):
    refs = []
    for i in range(count):
        buffer = io.BytesIO()
        Image.effect_noise((96, 64), 40 + i).convert("RGB").save(buffer, format="JPEG", quality=90)
        refs.append(store.put_bytes(buffer.getvalue(), "jpg"))
    return refs


def _rows(refs, n_rows, per_row):
    for r in range(n_rows):
        imgs = [refs[(r + j) % len(refs)] for j in range(per_row)]
        yield make_example(id=f"row{r}", dataset="toy", length=8192, num_tokens=100 + r,
                           prompt="Look: " + " ".join(["<image>"] * per_row), images=imgs,
                           question="q?", answers=["yes"], metric="binary_acc", meta={"r": r, "b": [1, 2]})


def test_make_example_checks_placeholders(tmp_path):
    refs = _images(ImageStore(tmp_path), 1)
    with pytest.raises(SchemaError, match="1 images"):
        make_example(id="x", dataset="d", length=1, num_tokens=1, prompt="no placeholder", images=refs,
                     question="", answers=[], metric="m", meta={})


def test_roundtrip_dedup_and_loading_from_another_cwd(tmp_path, monkeypatch):
    store = ImageStore(tmp_path / "store")
    refs = _images(store, 5)
    out = tmp_path / "out"
    stats = write_config(out, "toy_8k", _rows(refs, 30, 8), FEATURES)
    assert stats.num_rows == 30 and stats.num_images == 240 and stats.num_unique_images == 5
    unique = sum(os.path.getsize(r.path) for r in refs)
    # 240 image slots, 5 distinct images: on disk close to the unique bytes, far below 240 copies
    assert stats.num_bytes < unique * 2 < unique * 240 / 10
    monkeypatch.chdir(tmp_path.parent)
    ds = datasets.load_dataset(str(out), "toy_8k", split="test")
    assert ds.num_rows == 30 and ds.features["images"] == FEATURES["images"]
    row = ds[3]
    assert [img.size for img in row["images"]] == [(96, 64)] * 8
    assert json.loads(row["meta"]) == {"r": 3, "b": [1, 2]}
    assert read_manifest(out, "toy_8k")["stats"]["num_rows"] == 30


def test_configs_are_added_and_replaced(tmp_path):
    refs = _images(ImageStore(tmp_path / "s"), 3)
    out = tmp_path / "out"
    write_config(out, "a_8k", _rows(refs, 2, 1))
    write_config(out, "b_8k", _rows(refs, 3, 1))
    write_config(out, "a_8k", _rows(refs, 4, 1))
    assert datasets.load_dataset(str(out), "a_8k", split="test").num_rows == 4
    assert datasets.load_dataset(str(out), "b_8k", split="test").num_rows == 3
    readme = (out / "README.md").read_text()
    assert readme.count("config_name: a_8k") == 2  # one configs entry, one dataset_info entry


@pytest.mark.parametrize("layout", ["files", "embedded"])
def test_a_failing_build_leaves_the_previous_config_intact(tmp_path, layout):
    refs = _images(ImageStore(tmp_path / "s"), 3)
    out = tmp_path / "out"
    write_config(out, "a_8k", _rows(refs, 2, 1), layout=layout)

    def broken():
        yield from _rows(refs, 3, 1)
        raise RuntimeError("source died")

    with pytest.raises(RuntimeError):
        write_config(out, "a_8k", broken(), row_group_bytes=1, row_group_rows=1, layout=layout)
    assert datasets.load_dataset(str(out), "a_8k", split="test").num_rows == 2
    if layout == "embedded":
        assert sorted(p.name for p in (out / "data").iterdir()) == ["a_8k"]  # no partial folder left
    else:  # no partial metadata left, and nothing but the complete config's metadata at the root
        assert sorted(p.name for p in out.iterdir() if p.is_file()) == ["README.md", "a_8k.metadata.parquet"]


def test_files_layout_is_byte_identical_across_builds(tmp_path):
    refs = _images(ImageStore(tmp_path / "s"), 6)
    first = write_config(tmp_path / "o1", "t_8k", _rows(refs, 12, 3), row_group_rows=5)
    second = write_config(tmp_path / "o2", "t_8k", _rows(refs, 12, 3), row_group_rows=5)
    assert first.fingerprint == second.fingerprint and first.num_row_groups == 3
    for folder in ("o1", "o2"):
        assert (tmp_path / folder / "t_8k.metadata.parquet").read_bytes() == \
            (tmp_path / "o1" / "t_8k.metadata.parquet").read_bytes()
    files = sorted(p.relative_to(tmp_path / "o1").as_posix() for p in (tmp_path / "o1" / "images").rglob("*"))
    assert files == sorted(p.relative_to(tmp_path / "o2").as_posix() for p in (tmp_path / "o2" / "images").rglob("*"))


def test_shards_split_and_are_byte_identical_across_builds(tmp_path):
    refs = _images(ImageStore(tmp_path / "s"), 6)
    first = write_config(tmp_path / "o1", "t_8k", _rows(refs, 12, 3), row_group_bytes=1, shard_bytes=1,
                         layout="embedded")
    second = write_config(tmp_path / "o2", "t_8k", _rows(refs, 12, 3), row_group_bytes=1, shard_bytes=1,
                          layout="embedded")
    # a row group holds two rows even over budget (datasets buffers one-row tables), a shard one group
    assert first.num_shards == first.num_row_groups == 6 and first.fingerprint == second.fingerprint
    names = sorted(p.name for p in (tmp_path / "o1" / "data" / "t_8k").iterdir())
    assert names[0] == "test-00000-of-00006.parquet"
    assert datasets.load_dataset(str(tmp_path / "o1"), "t_8k", split="test").num_rows == 12


def _image_bytes_encodings(folder, config):
    import pyarrow.parquet as pq

    encodings = set()
    for path in sorted((folder / "data" / config).glob("*.parquet")):
        meta = pq.ParquetFile(path).metadata
        for group in range(meta.num_row_groups):
            for column in range(meta.num_columns):
                chunk = meta.row_group(group).column(column)
                if chunk.path_in_schema == "images.list.element.bytes":
                    encodings.add("RLE_DICTIONARY" in chunk.encodings)
    return encodings


def test_decoded_bytes_bound_row_groups_and_dictionaries_only_where_they_pay(tmp_path):
    refs = _images(ImageStore(tmp_path / "s"), 12)
    sizes = [os.path.getsize(r.path) for r in refs]
    # 8 slots per row over 5 distinct images (rows share them): the dictionary pays
    shared = write_config(tmp_path / "o", "shared_8k", _rows(refs[:5], 20, 8), row_group_bytes=sum(sizes[:5]) * 4,
                          layout="embedded")
    decoded = sum(sizes[(r + j) % 5] for r in range(20) for j in range(8))
    assert shared.image_bytes_decoded == decoded and shared.image_bytes_unique == sum(sizes[:5])
    assert shared.num_row_groups == 20 // 2 and shared.row_group_decoded_max <= sum(sizes[:5]) * 4
    assert _image_bytes_encodings(tmp_path / "o", "shared_8k") == {True}
    # one image per row, none repeated: written plain, a reader holds no dictionary beside the values
    distinct = ({**row, "id": f"d{i}", "images": [refs[i]]} for i, row in enumerate(_rows(refs, 12, 1)))
    plain = write_config(tmp_path / "o", "distinct_8k", distinct, layout="embedded")
    assert plain.image_bytes_decoded == plain.image_bytes_unique == sum(sizes)
    assert _image_bytes_encodings(tmp_path / "o", "distinct_8k") == {False}
    for config, stats in (("shared_8k", shared), ("distinct_8k", plain)):
        ds = datasets.load_dataset(str(tmp_path / "o"), config, split="test")
        assert sum(len(r) for r in ds["images"]) == stats.num_images
        manifest = read_manifest(tmp_path / "o", config)["stats"]
        assert (manifest["num_bytes"], manifest["image_bytes_decoded"]) == (stats.num_bytes, stats.image_bytes_decoded)
