"""The rows ``mmlb run`` reads (runner.core.iter_examples) are the rows ``datasets`` streams with
``decode(False)``, each image's bytes read: same values, same columns in the same order, same row
order, in both layouts."""
from __future__ import annotations

import io

import datasets
import pytest
from PIL import Image

from mmlbdata.core.schema import make_example
from mmlbdata.core.store import ImageStore
from mmlbdata.dataset.build import store_config
from mmlbdata.runner.core import iter_examples


def _streamed(folder, config):
    """datasets streaming, images undecoded, and every image's bytes read from its file."""
    ds = datasets.load_dataset(str(folder), config, split="test", streaming=True).decode(False)
    rows = []
    for row in ds:
        images = [image if image["bytes"] is not None else {**image, "bytes": open(image["path"], "rb").read()}
                  for image in row["images"]]
        rows.append({**row, "images": images})
    return rows


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
def test_the_runner_reads_the_rows_datasets_streams(tmp_path, monkeypatch, layout):
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf_cache"))
    store = ImageStore(tmp_path / "store")
    refs = [store.put_bytes(_jpeg(i), "jpg") for i in range(5)]
    out = tmp_path / "out"
    # small shards and row groups: several files, several batches, a batch cut inside a row group
    store_config(out, "toy_8k", _rows(refs, 23), manifest={"family": "toy"}, layout=layout,
                 shard_bytes=4000, row_group_bytes=2000)
    rows, streamed = list(iter_examples(out, "toy_8k")), _streamed(out, "toy_8k")
    assert rows == streamed and [list(r) for r in rows] == [list(r) for r in streamed]
    assert len(rows) == 23 and all(image["bytes"] for r in rows for image in r["images"])
    assert [image["bytes"] for image in rows[4]["images"]] == [_jpeg(4), _jpeg(0)]  # refs[(4 + k) % 5]


def test_a_file_name_leaving_the_folder_is_refused(tmp_path, monkeypatch):
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
        list(iter_examples(out, "toy_8k"))


def test_the_runner_does_not_have_datasets_list_the_image_partitions(tmp_path, monkeypatch):
    """A streamed row reads its images by path: the runner names the config's metadata and hint
    files only, since resolving a partition's files costs ``datasets`` ~0.2 ms each before the
    first row (0.5-2.4 s for a 128K Visual Haystack config); the rows are those of the full entry."""
    import datasets.data_files

    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf_cache"))
    store = ImageStore(tmp_path / "store")
    out = tmp_path / "out"
    store_config(out, "toy_8k", _rows([store.put_bytes(_jpeg(i), "jpg") for i in range(5)], 7),
                 manifest={"family": "toy"}, layout="files")
    resolved, resolve = [], datasets.data_files.resolve_pattern
    monkeypatch.setattr(datasets.data_files, "resolve_pattern",
                        lambda pattern, *a, **k: resolved.append(pattern) or resolve(pattern, *a, **k))
    rows = list(iter_examples(out, "toy_8k"))
    assert resolved and not [p for p in resolved if p.endswith("**")], resolved
    monkeypatch.undo()
    assert rows == _streamed(out, "toy_8k")
