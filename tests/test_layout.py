"""The files layout: one copy of each image per folder, shared by configs, loaded by plain
``load_dataset`` in memory and streaming with the same rows as the embedded layout."""
from __future__ import annotations

import io
import os

import datasets
import numpy as np
import pytest
from PIL import Image

from mmlbdata.core.schema import make_example
from mmlbdata.core.store import ImageStore
from mmlbdata.dataset.build import completed_stats, store_config
from mmlbdata.dataset.stats import config_distribution, configs_in, shard_files


def _images(store, count):
    """Distinct small JPEGs (a colour gradient each, so decoded pixels tell them apart)."""
    refs = []
    for i in range(count):
        image = Image.linear_gradient("L").resize((48 + i, 32)).convert("RGB")
        image.paste((30 * i % 256, 90, 160), (0, 0, 8, 8))
        buffer = io.BytesIO()
        image.save(buffer, format="JPEG", quality=90)
        refs.append(store.put_bytes(buffer.getvalue(), "jpg"))
    return refs


def _rows(refs, pattern, length=8192):
    """One row per entry of ``pattern`` (indices into ``refs``; a repeat is a duplicate in the row)."""
    for r, picks in enumerate(pattern):
        yield make_example(id=f"r{r}", dataset="toy", length=length, num_tokens=100 + r,
                           prompt=" ".join(["<image>"] * len(picks)), images=[refs[i] for i in picks],
                           question="q?", answers=["a"], metric="binary_acc", meta={"r": r})


A = [[0, 1, 1, 2], [3], [2, 2, 0]]  # duplicates within a row and across rows
B = [[2, 4, 0], [4, 4]]  # shares images 0, 2 with A


def _build(out, layout, refs):
    for config, pattern in (("toy_8k", A), ("toy_32k", B)):
        store_config(out, config, _rows(refs, pattern), manifest={"family": "toy"}, layout=layout)


def _pixels(images):
    return [np.asarray(image.convert("RGB")) for image in images]


def _same_rows(left, right):
    left, right = list(left), list(right)
    assert len(left) == len(right)
    for a, b in zip(left, right):
        assert list(a) == list(b)  # same columns, same order
        assert {k: v for k, v in a.items() if k != "images"} == {k: v for k, v in b.items() if k != "images"}
        assert len(a["images"]) == len(b["images"])
        assert all(np.array_equal(x, y) for x, y in zip(_pixels(a["images"]), _pixels(b["images"])))


def test_two_configs_share_one_copy_of_each_image_and_load_both_ways(tmp_path):
    refs = _images(ImageStore(tmp_path / "store"), 5)
    _build(tmp_path / "files", "files", refs)
    images = sorted((tmp_path / "files" / "images").rglob("*.jpg"))
    assert len(images) == 5  # 5 distinct images over 2 configs and 17 slots: one file each
    assert {p.read_bytes() for p in images} == {open(r.path, "rb").read() for r in refs}
    assert all(p.parents[2].name == "toy" and p.parent.name == p.stem[:2] for p in images)
    # each image in the partition of the configs that use it, named after the first (shortest) of them
    owners = {p.read_bytes(): p.parents[1].name for p in images}
    parts = [owners[open(r.path, "rb").read()] for r in refs]
    assert parts[0] == parts[2] != parts[1] == parts[3] != parts[4]
    assert [part.split("-")[0] for part in parts] == ["toy_8k"] * 4 + ["toy_32k"]
    assert configs_in(tmp_path / "files") == ["toy_32k", "toy_8k"]
    for config, pattern in (("toy_8k", A), ("toy_32k", B)):
        for streaming in (False, True):
            ds = datasets.load_dataset(str(tmp_path / "files"), config, split="test", streaming=streaming)
            got = [_pixels(row["images"]) for row in ds]
            want = [[np.asarray(Image.open(refs[i].path).convert("RGB")) for i in picks] for picks in pattern]
            assert [len(r) for r in got] == [len(p) for p in pattern]
            assert all(np.array_equal(x, y) for g, w in zip(got, want) for x, y in zip(g, w))
    assert config_distribution(tmp_path / "files", "toy_8k").summary()["images"] == 8


def test_rows_equal_the_embedded_layout_image_for_image(tmp_path):
    refs = _images(ImageStore(tmp_path / "store"), 5)
    _build(tmp_path / "files", "files", refs)
    _build(tmp_path / "embedded", "embedded", refs)
    for config in ("toy_8k", "toy_32k"):
        embedded = datasets.load_dataset(str(tmp_path / "embedded"), config, split="test")
        for streaming in (False, True):
            files = datasets.load_dataset(str(tmp_path / "files"), config, split="test", streaming=streaming)
            _same_rows(files, embedded)
        assert datasets.load_dataset(str(tmp_path / "files"), config, split="test").features == embedded.features


def test_the_standard_idioms_work_on_the_files_layout(tmp_path):
    refs = _images(ImageStore(tmp_path / "store"), 5)
    _build(tmp_path / "files", "files", refs)
    ds = datasets.load_dataset(str(tmp_path / "files"), "toy_8k", split="test")
    raw = ds.cast_column("images", datasets.List(datasets.Image(decode=False)))
    assert all(image["bytes"] is None and os.path.isfile(image["path"]) for image in raw[0]["images"])
    assert ds.map(lambda r: {"n": len(r["images"])})["n"] == [4, 1, 3]
    assert ds.filter(lambda r: len(r["images"]) > 1).num_rows == 2
    assert ds.select([2])[0]["id"] == "r2"
    assert list(ds.remove_columns("images").to_pandas()["id"]) == ["r0", "r1", "r2"]


def test_switching_layout_replaces_the_old_files(tmp_path):
    refs = _images(ImageStore(tmp_path / "store"), 5)
    out = tmp_path / "out"
    store_config(out, "toy_8k", _rows(refs, A), manifest={"family": "toy"}, layout="embedded")
    assert [p.name for p in shard_files(out, "toy_8k")] == ["test-00000-of-00001.parquet"]
    store_config(out, "toy_8k", _rows(refs, A), manifest={"family": "toy"})
    assert not (out / "data").exists() and [p.name for p in shard_files(out, "toy_8k")] == ["toy_8k.metadata.parquet"]
    assert "data/toy_8k" not in (out / "README.md").read_text()
    store_config(out, "toy_8k", _rows(refs, A), manifest={"family": "toy"}, layout="embedded")
    assert not (out / "toy_8k.metadata.parquet").exists()
    assert datasets.load_dataset(str(out), "toy_8k", split="test").num_rows == 3


def test_one_folder_holds_one_layout(tmp_path):
    refs = _images(ImageStore(tmp_path / "store"), 5)
    _build(tmp_path / "out", "files", refs)
    with pytest.raises(ValueError, match="one layout per folder: build toy_x with --layout files"):
        store_config(tmp_path / "out", "toy_x", _rows(refs, A), layout="embedded")
    assert sorted(p.name for p in (tmp_path / "out").glob("*.parquet")) == ["toy_32k.metadata.parquet",
                                                                           "toy_8k.metadata.parquet"]
    assert not (tmp_path / "out" / "data").exists()


@pytest.mark.parametrize("damage", ["none", "image", "metadata"])
def test_resume_keeps_a_complete_files_config_only(tmp_path, damage):
    refs = _images(ImageStore(tmp_path / "store"), 5)
    out = tmp_path / "out"
    requested = {"family": "toy", "dataset": "toy", "length": 8192, "metric": "m", "seed": 0, "limit": None,
                 "options": {}, "sources": {}}
    store_config(out, "toy_8k", _rows(refs, A), manifest=requested)
    if damage == "image":
        next((out / "images").rglob("*.jpg")).unlink()
    elif damage == "metadata":
        with open(out / "toy_8k.metadata.parquet", "ab") as handle:
            handle.write(b"x")
    kept = completed_stats(out, "toy_8k", requested)
    assert (kept is not None) == (damage == "none")
    assert completed_stats(out, "toy_8k", requested, "embedded") is None  # another layout asked: rebuild


HUB_READ = """
import json, sys
import datasets
from mmlbdata.runner.core import iter_examples
datasets.disable_progress_bars()
repo, config = sys.argv[1], sys.argv[2]
out = {}
for streaming in (False, True):
    ds = datasets.load_dataset(repo, config, split="test", streaming=streaming)
    out[str(streaming)] = [[im.convert("RGB").tobytes().hex()[:64] + str(im.size) for im in row["images"]] for row in ds]
out["run"] = [[len(im["bytes"]) for im in row["images"]] for row in iter_examples(repo, config)]
print(json.dumps(out))
"""


def test_a_pushed_repo_loads_from_a_hub_endpoint_like_the_folder(tmp_path):
    """Push (FolderUploader) then serve the repo on a loopback Hub: in memory, streaming and
    `mmlb run`'s reader give the folder's rows, image for image."""
    import json

    from loopback_hub import LoopbackHub

    from mmlbdata.dataset.hub import FolderUploader, push_folder

    refs = _images(ImageStore(tmp_path / "store"), 5)
    _build(tmp_path / "files", "files", refs)
    hub = FolderUploader(tmp_path / "hub")
    push_folder(tmp_path / "files", "org/toy", uploader=hub, card=True)
    repo = hub.repo_dir("org/toy")
    pushed = {p.relative_to(repo).as_posix(): p.read_bytes() for p in sorted(repo.rglob("*")) if p.is_file()}
    assert sum(name.startswith("images/") for name in pushed) == 5
    with LoopbackHub(repos={"org/toy": pushed}) as server:
        stdout = server.run_client(HUB_READ, "org/toy", "toy_8k", hf_home=tmp_path / "hf")
    got = json.loads(stdout.strip().splitlines()[-1])
    local = datasets.load_dataset(str(tmp_path / "files"), "toy_8k", split="test")
    want = [[im.convert("RGB").tobytes().hex()[:64] + str(im.size) for im in row["images"]] for row in local]
    assert got["False"] == want and got["True"] == want
    assert got["run"] == [[os.path.getsize(refs[i].path) for i in picks] for picks in A]


def test_a_config_without_images_loads_beside_image_configs(tmp_path):
    """Its data files are its metadata alone: the folder's builder comes from its first config."""
    refs = _images(ImageStore(tmp_path / "store"), 5)
    out = tmp_path / "out"
    _build(out, "files", refs)
    store_config(out, "toy_text", _rows([], [[], []]), manifest={"family": "toy"})
    assert [p.name for p in shard_files(out, "toy_text")] == ["toy_text.metadata.parquet"]
    for streaming in (False, True):
        rows = list(datasets.load_dataset(str(out), "toy_text", split="test", streaming=streaming))
        assert [r["id"] for r in rows] == ["r0", "r1"] and [r["images"] for r in rows] == [[], []]


def test_a_config_without_images_listed_first_still_loads_with_the_others(tmp_path):
    """datasets takes the folder's one builder from the first config its README lists: ``a_text``
    (first by name) names its metadata and the image-folder hint, so the folder stays an image
    folder, and a folder holding it alone loads too."""
    refs = _images(ImageStore(tmp_path / "store"), 5)
    out = tmp_path / "out"
    _build(out, "files", refs)
    store_config(out, "a_text", _rows([], [[], []]), manifest={"family": "toy"})
    store_config(tmp_path / "alone", "a_text", _rows([], [[], []]), manifest={"family": "toy"})
    for streaming in (False, True):
        rows = list(datasets.load_dataset(str(out), "toy_8k", split="test", streaming=streaming))
        assert rows and all(len(r["images"]) > 0 for r in rows)
        for folder in (out, tmp_path / "alone"):
            text = list(datasets.load_dataset(str(folder), "a_text", split="test", streaming=streaming))
            assert [r["images"] for r in text] == [[], []]


def test_a_family_of_one_image_loads_first_or_not(tmp_path):
    """One image file against one metadata parquet was a draw datasets gives to parquet; the
    hint's two PNGs outnumber the metadata whatever the config holds."""
    refs = _images(ImageStore(tmp_path / "store"), 2)
    store_config(tmp_path / "out", "one_8k", _rows(refs, [[0], [0, 0]]), manifest={"family": "toy"})
    assert [len(r["images"]) for r in datasets.load_dataset(str(tmp_path / "out"), "one_8k", split="test")] == [1, 2]
    store_config(tmp_path / "out", "big_8k", _rows(refs, [[1], [0]]), manifest={"family": "toy"})
    for config, sizes in (("one_8k", [1, 2]), ("big_8k", [1, 1])):
        assert [len(r["images"]) for r in datasets.load_dataset(str(tmp_path / "out"), config, split="test",
                                                                  cache_dir=str(tmp_path / config))] == sizes


def test_manifests_do_not_depend_on_the_build_order(tmp_path):
    """Configs sharing images built in either order give byte-identical manifests (the image files
    a build added depend on what the folder held before: a fact of the run, not of the config)."""
    refs = _images(ImageStore(tmp_path / "store"), 5)
    orders = {"ab": (("toy_8k", A), ("toy_32k", B)), "ba": (("toy_32k", B), ("toy_8k", A))}
    for name, order in orders.items():
        for config, pattern in order:
            store_config(tmp_path / name, config, _rows(refs, pattern), manifest={"family": "toy"})
    for config in ("toy_8k", "toy_32k"):
        assert (tmp_path / "ab" / "manifests" / f"{config}.json").read_bytes() == \
            (tmp_path / "ba" / "manifests" / f"{config}.json").read_bytes()


def test_push_refuses_to_mix_layouts_in_one_repo(tmp_path):
    """The Hub reads a repo with one builder as a folder: a files-layout push beside configs the repo
    holds embedded (pushed from elsewhere) would leave one of the two unreadable; refused before
    anything is sent. Replacing every config of the other layout is fine."""
    from mmlbdata.dataset.hub import FolderUploader, push_folder

    refs = _images(ImageStore(tmp_path / "store"), 5)
    store_config(tmp_path / "emb", "toy_8k", _rows(refs, A), manifest={"family": "toy"}, layout="embedded")
    store_config(tmp_path / "files", "toy_32k", _rows(refs, B), manifest={"family": "toy"})
    hub = FolderUploader(tmp_path / "hub")
    push_folder(tmp_path / "emb", "org/toy", uploader=hub)
    sent = len(hub.commits)
    with pytest.raises(ValueError, match="holds 1 config.s. in the embedded layout .toy_8k."):
        push_folder(tmp_path / "files", "org/toy", uploader=hub)
    assert len(hub.commits) == sent
    store_config(tmp_path / "files", "toy_8k", _rows(refs, A), manifest={"family": "toy"})
    push_folder(tmp_path / "files", "org/toy", uploader=hub)  # both configs now in the files layout
    for config in ("toy_8k", "toy_32k"):
        assert datasets.load_dataset(str(hub.repo_dir("org/toy")), config, split="test").num_rows > 0


def test_a_writer_that_cannot_open_leaves_no_staging_folder(tmp_path, monkeypatch):
    """A failure (a full disk, `kill`) between the staging folder's creation and the metadata
    writer's: the folder goes with it (write_config can only abort a writer that exists)."""
    from mmlbdata.dataset import writer as writer_module

    refs = _images(ImageStore(tmp_path / "store"), 2)
    out = tmp_path / "out"

    def no_space(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(writer_module.pq, "ParquetWriter", no_space)
    with pytest.raises(OSError, match="No space"):
        store_config(out, "toy_8k", _rows(refs, A), manifest={"family": "toy"})
    assert not out.exists()
