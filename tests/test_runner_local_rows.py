"""The runner's local parquet reader (runner/local_rows.py) gives the rows ``datasets`` streams with
``decode(False)``: same values, same columns in the same order, same row order, whatever the
batch size; configs it cannot read the same way (the files layout) still stream through
``datasets``."""
from __future__ import annotations

import io

import datasets
import pytest
from PIL import Image

from mmlbdata.core.schema import make_example
from mmlbdata.core.store import ImageStore
from mmlbdata.dataset.build import store_config
from mmlbdata.runner import local_rows
from mmlbdata.runner.core import iter_examples
from mmlbdata.runner.prefetch import with_image_bytes
from mmlbdata.runner.smoke import write_built


def _streamed(folder, config):
    """What iter_examples gave before the local reader: datasets streaming, images undecoded."""
    ds = datasets.load_dataset(str(folder), config, split="test", streaming=True).decode(False)
    return list(with_image_bytes(ds))


def _jpeg(i: int) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (40 + i, 30), (20 * i % 256, 90, 160)).save(buffer, format="JPEG")
    return buffer.getvalue()


def _rows(refs, count):
    for r in range(count):
        picks = [refs[(r + k) % len(refs)] for k in range(r % 3 + 1)]
        yield make_example(id=f"r{r}", dataset="toy", length=8192, num_tokens=100 + r,
                           prompt=" ".join(["<image>"] * len(picks)) + f" q{r}", images=picks,
                           question="q?", answers=["a", str(r)], metric="binary_acc", meta={"r": r})


@pytest.mark.parametrize("layout", ["embedded", "files"])
def test_local_rows_are_the_rows_datasets_streams(tmp_path, monkeypatch, layout):
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf_cache"))
    store = ImageStore(tmp_path / "store")
    refs = [store.put_bytes(_jpeg(i), "jpg") for i in range(5)]
    out = tmp_path / "out"
    # small shards and row groups: several files, several batches, a batch cut inside a row group
    store_config(out, "toy_8k", _rows(refs, 23), manifest={"family": "toy"}, layout=layout,
                 shard_bytes=4000, row_group_bytes=2000)
    builder = datasets.load_dataset_builder(str(out), "toy_8k")
    files = local_rows.local_parquet_files(builder)
    if layout == "files":
        assert files is None  # the folder-based builder: not a plain parquet
        assert local_rows.local_files_layout(out, "toy_8k") is not None
    else:
        assert files is not None and len(files) > 1
        assert local_rows.readme_parquet_files(out, "toy_8k")[0] == files  # the README's answer, without the builder
        monkeypatch.setattr(local_rows, "BATCH_BYTES", 1)  # one row per conversion
        assert list(local_rows.parquet_rows(files, builder.info.features)) == _streamed(out, "toy_8k")
        monkeypatch.setattr(local_rows, "BATCH_BYTES", 3000)
    rows = list(iter_examples(out, "toy_8k"))
    assert rows == _streamed(out, "toy_8k")
    assert [list(r) for r in rows] == [list(r) for r in _streamed(out, "toy_8k")]
    assert len(rows) == 23 and all(image["bytes"] for r in rows for image in r["images"])


def test_a_parquet_without_features_in_the_readme_is_read_as_datasets_reads_it(tmp_path, monkeypatch):
    """runner.smoke.write_built's folders: no dataset_info, features from the parquet schema."""
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf_cache"))
    image = tmp_path / "a.jpg"
    image.write_bytes(_jpeg(1))
    rows = [{"id": f"x{i}", "dataset": "vh_single", "length": 8192, "num_tokens": 10 + i, "prompt": "<image> q",
             "images": [{"bytes": None, "path": str(image)}], "question": "q", "answers": ["yes"],
             "metric": "binary_acc", "meta": "{}"} for i in range(5)]
    built = write_built(tmp_path / "built", {"vhsingle_8k": rows})
    files = local_rows.local_parquet_files(datasets.load_dataset_builder(str(built), "vhsingle_8k"))
    assert files and local_rows.readme_parquet_files(built, "vhsingle_8k") == (files, None)
    shard = next((built / "data" / "vhsingle_8k").glob("*.parquet"))
    (shard.parent / ".stale.parquet").write_bytes(shard.read_bytes())  # hidden: datasets' glob leaves it out
    got = list(iter_examples(built, "vhsingle_8k"))
    assert got == _streamed(built, "vhsingle_8k") and got[0]["images"][0]["bytes"] == image.read_bytes()
    assert len(got) == 5


def test_files_layout_rows_are_the_rows_datasets_streams_from_any_folder_path(tmp_path, monkeypatch):
    """Two configs sharing images (re-partitioned under images/toy/<owner>), read from an absolute
    and a relative folder path: the rows (paths included) are datasets' folder-based builder's."""
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf_cache"))
    store = ImageStore(tmp_path / "store")
    refs = [store.put_bytes(_jpeg(i), "jpg") for i in range(6)]
    out = tmp_path / "out"
    store_config(out, "toy_8k", _rows(refs[:4], 7), manifest={"family": "toy"}, layout="files")
    store_config(out, "toy_32k", _rows(refs[2:], 5), manifest={"family": "toy"}, layout="files")
    monkeypatch.chdir(tmp_path)
    for folder in (out, "out"):
        for config in ("toy_8k", "toy_32k"):
            assert local_rows.local_files_layout(folder, config) is not None
            rows, streamed = list(iter_examples(folder, config)), _streamed(folder, config)
            assert rows == streamed and [list(r) for r in rows] == [list(r) for r in streamed]


def test_a_file_name_leaving_the_folder_is_refused_as_datasets_refuses_it(tmp_path, monkeypatch):
    import pyarrow as pa
    import pyarrow.parquet as pq

    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf_cache"))
    store = ImageStore(tmp_path / "store")
    out = tmp_path / "out"
    # two images: with one, datasets infers its parquet builder (one .parquet, one .jpg) and fails to cast
    store_config(out, "toy_8k", _rows([store.put_bytes(_jpeg(i), "jpg") for i in range(2)], 2),
                 manifest={"family": "toy"}, layout="files")
    metadata = out / "toy_8k.metadata.parquet"
    table = pq.read_table(metadata)
    names = pa.array([["../../secret.jpg"]] * table.num_rows, table.schema.field("images_file_names").type)
    pq.write_table(table.set_column(table.schema.get_field_index("images_file_names"), "images_file_names", names),
                   metadata)
    with pytest.raises(ValueError, match="relative path"):
        _streamed(out, "toy_8k")
    with pytest.raises(ValueError, match="relative path"):
        list(iter_examples(out, "toy_8k"))


def test_a_readme_entry_with_other_options_goes_through_datasets(tmp_path):
    from mmlbdata.dataset.card import join_front_matter, split_front_matter

    store = ImageStore(tmp_path / "store")
    out = tmp_path / "out"
    store_config(out, "toy_8k", _rows([store.put_bytes(_jpeg(0), "jpg")], 2), manifest={"family": "toy"},
                 layout="files")
    assert local_rows.local_files_layout(out, "toy_8k") is not None
    assert local_rows.local_files_layout(out, "toy_32k") is None  # no such config
    readme = out / "README.md"
    meta, body = split_front_matter(readme.read_text())
    meta["configs"][0]["filters"] = [["num_tokens", ">", 100]]
    readme.write_text(join_front_matter(meta, body))
    assert local_rows.local_files_layout(out, "toy_8k") is None


def test_a_dataset_info_written_as_one_mapping_still_gives_the_features(tmp_path):
    """A card with one config may carry ``dataset_info`` as a mapping rather than a list (as the
    Hub's card tools write it); the reader takes the features from it as from the list form."""
    from mmlbdata.dataset.card import join_front_matter, split_front_matter

    store = ImageStore(tmp_path / "store")
    out = tmp_path / "out"
    store_config(out, "toy_8k", _rows([store.put_bytes(_jpeg(0), "jpg")], 2), manifest={"family": "toy"},
                 layout="embedded")
    listed = local_rows.readme_entries(out, "toy_8k")
    readme = out / "README.md"
    meta, body = split_front_matter(readme.read_text())
    [meta["dataset_info"]] = meta["dataset_info"]
    readme.write_text(join_front_matter(meta, body))
    assert listed[1] is not None and local_rows.readme_entries(out, "toy_8k") == listed
