"""A built folder that is moved, copied, or rebuilt byte-identically elsewhere loads its own images
in a fresh process that shares the ``datasets`` cache with earlier loads (issue 31).

``datasets`` keys an in-memory load's Arrow cache by the folder's name and README, not its
location, and a files-layout row caches absolute image paths; ``mmlbdata.dataset.loading`` gives
each (location, build) its own cache. Every load here runs in a fresh process with one
``HF_DATASETS_CACHE`` shared by all of a test's loads, as a user's machine has.
"""
from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from mmlbdata.core.schema import make_example
from mmlbdata.core.store import ImageStore
from mmlbdata.dataset.build import store_config

CONFIG = "toy_8k"

LOAD = """
import json, sys
import datasets
datasets.disable_progress_bars()
how, folder = sys.argv[1], sys.argv[2]
if how == "load_built":
    from mmlbdata.dataset.loading import load_built
    ds = load_built(folder, "toy_8k")
elif how == "plain":
    ds = datasets.load_dataset(folder, "toy_8k", split="test")
else:  # the idiom README gives a plain load_dataset user after a move
    ds = datasets.load_dataset(folder, "toy_8k", split="test", download_mode="force_redownload")
paths = [im["path"] for row in ds.cast_column("images", datasets.List(datasets.Image(decode=False)))
         for im in row["images"]]
sizes = [list(im.size) for row in ds for im in row["images"]]
print(json.dumps({"paths": paths, "sizes": sizes}))
"""


def _rows(store: ImageStore):
    refs = []
    for i in range(4):
        buffer = io.BytesIO()
        Image.new("RGB", (40 + i, 30), (60 * i, 100, 200)).save(buffer, format="PNG")
        refs.append(store.put_bytes(buffer.getvalue(), "png"))
    for r, picks in enumerate([[0, 1], [2, 3, 0]]):
        yield make_example(id=f"r{r}", dataset="toy", length=8192, num_tokens=100 + r,
                           prompt=" ".join(["<image>"] * len(picks)), images=[refs[i] for i in picks],
                           question="q?", answers=["a"], metric="binary_acc", meta={"r": r})


def _build(out: Path) -> Path:
    store_config(out, CONFIG, _rows(ImageStore(out.parent / "store")), manifest={"family": "toy"})
    return out


def _load(folder: Path, cache: Path, how: str = "load_built") -> dict:
    """Load ``folder`` in memory in a fresh process with ``cache`` as HF_DATASETS_CACHE."""
    env = {**os.environ, "HF_DATASETS_CACHE": str(cache), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", LOAD, how, str(folder)], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _assert_own_images(loaded: dict, folder: Path) -> None:
    inside = str(folder.resolve()) + os.sep
    assert loaded["paths"] and all(p.startswith(inside) for p in loaded["paths"]), (folder, loaded["paths"][:2])
    assert loaded["sizes"] == [[40, 30], [41, 30], [42, 30], [43, 30], [40, 30]]


@pytest.fixture
def cache(tmp_path) -> Path:
    return tmp_path / "hf_datasets_cache"


def test_a_moved_folder_loads_its_own_images(tmp_path, cache):
    first = _build(tmp_path / "x" / "mmlb")
    _assert_own_images(_load(first, cache), first)
    moved = tmp_path / "y" / "mmlb"
    moved.parent.mkdir()
    first.rename(moved)
    _assert_own_images(_load(moved, cache), moved)


def test_a_copy_and_its_original_each_load_their_own_images(tmp_path, cache):
    original = _build(tmp_path / "p" / "mmlb")
    copy = tmp_path / "q" / "mmlb"
    shutil.copytree(original, copy)
    for folder in (original, copy, original):
        _assert_own_images(_load(folder, cache), folder)


def test_a_byte_identical_rebuild_elsewhere_loads_its_own_images(tmp_path, cache):
    first = _build(tmp_path / "p" / "mmlb")
    _assert_own_images(_load(first, cache), first)
    files = {p.relative_to(first): p.read_bytes() for p in sorted(first.rglob("*"))
             if p.is_file() and "manifests" not in p.parts}
    shutil.rmtree(first)
    second = _build(tmp_path / "q" / "mmlb")
    assert {p.relative_to(second): p.read_bytes() for p in sorted(second.rglob("*"))
            if p.is_file() and "manifests" not in p.parts} == files  # the same bytes: one README, one key
    _assert_own_images(_load(second, cache), second)


def test_a_rebuild_in_place_with_other_images_loads_the_new_ones(tmp_path, cache):
    folder = _build(tmp_path / "p" / "mmlb")
    before = _load(folder, cache)
    store_config(folder, CONFIG, [{**row, "images": row["images"][::-1]} for row in _rows(ImageStore(tmp_path / "s"))],
                 manifest={"family": "toy"})
    after = _load(folder, cache)
    _assert_own_images({**after, "sizes": before["sizes"]}, folder)
    assert after["sizes"] == [[41, 30], [40, 30], [40, 30], [43, 30], [42, 30]]


def test_the_documented_plain_datasets_idiom_reads_the_moved_folder(tmp_path, cache):
    """README's advice to a user without mmlbdata: after a move, ``download_mode="force_redownload"``."""
    first = _build(tmp_path / "x" / "mmlb")
    _assert_own_images(_load(first, cache, "plain"), first)
    moved = tmp_path / "y" / "mmlb"
    moved.parent.mkdir()
    first.rename(moved)
    _assert_own_images(_load(moved, cache, "force_redownload"), moved)


COMMANDS = """
import json, sys
import datasets
datasets.disable_progress_bars()
from mmlbdata.dataset.hub import push_folder
from mmlbdata.evaluation.evaluate import load_examples
from mmlbdata.runner.core import iter_examples

class DecodingUploader:  # what push --method push_to_hub does with the rows: reads every image
    def __init__(self):
        self.sizes = []
    def push_config(self, dataset, repo_id, config, **kwargs):
        self.sizes += [list(im.size) for row in dataset for im in row["images"]]

folder = sys.argv[1]
uploader = DecodingUploader()
push_folder(folder, "org/toy", uploader=uploader, method="push_to_hub")
print(json.dumps({"push": uploader.sizes, "eval": [r["id"] for r in load_examples(folder, "toy_8k")],
                  "run": [len(im["bytes"]) > 0 for r in iter_examples(folder, "toy_8k") for im in r["images"]]}))
"""


def test_mmlb_commands_read_a_moved_folder_after_a_plain_load_of_the_old_place(tmp_path, cache):
    """A user loaded ``x/mmlb`` in memory with plain datasets, then moved it: push (its
    push_to_hub method loads in memory), eval's and run's readers read the moved folder's images."""
    first = _build(tmp_path / "x" / "mmlb")
    _assert_own_images(_load(first, cache, "plain"), first)
    moved = tmp_path / "y" / "mmlb"
    moved.parent.mkdir()
    first.rename(moved)
    env = {**os.environ, "HF_DATASETS_CACHE": str(cache), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", COMMANDS, str(moved)], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got == {"push": [[40, 30], [41, 30], [42, 30], [43, 30], [40, 30]], "eval": ["r0", "r1"],
                   "run": [True] * 5}
