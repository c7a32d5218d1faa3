"""Exact duplicate images in a source (the same bytes under two names: a re-uploaded photo, a
repeated slide) are stored once, and the configs using them build, resume and load in both
layouts, from the folder and from a Hub repository pushed from it (issue 31)."""
from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import datasets
import pyarrow.parquet as pq
import pytest

from mmlbdata.dataset.build import build_all
from mmlbdata.dataset.stats import IMAGE_FILES_COLUMN, image_paths
from mmlbdata.dataset.writer import read_manifest
from mmlbdata.exports import iter_rows

CONFIGS = ["vh_single_8k", "vh_single_16k"]
TWIN = "twin_"  # the second name every photo also has


@pytest.fixture(scope="module")
def coco_twins(tmp_path_factory, coco_mini) -> Path:
    """coco_mini's val2017 where every photo also exists as ``twin_<name>`` (same bytes, its own
    image id and a copy of its instances): a real release with re-uploaded photos."""
    root = tmp_path_factory.mktemp("coco_twins")
    (root / "annotations").mkdir()
    shutil.copytree(coco_mini / "val2017", root / "val2017")
    data = json.loads((coco_mini / "annotations" / "instances_val2017.json").read_text())
    offset = 1 + max(image["id"] for image in data["images"])
    twins = []
    for image in data["images"]:
        shutil.copyfile(root / "val2017" / image["file_name"], root / "val2017" / (TWIN + image["file_name"]))
        twins.append({**image, "id": image["id"] + offset, "file_name": TWIN + image["file_name"]})
    first_annotation = 1 + max(a["id"] for a in data["annotations"])
    data["annotations"] += [{**a, "id": a["id"] + first_annotation, "image_id": a["image_id"] + offset}
                            for a in data["annotations"]]
    data["images"] += twins
    (root / "annotations" / "instances_val2017.json").write_text(json.dumps(data))
    return root


def _build(out: Path, sources: dict, tokenizer_path: Path, layout: str, **kwargs):
    return build_all(CONFIGS, sources, out, limit=2, layout=layout, store_root=out.parent / "store",
                     tokenizer=tokenizer_path, progress=False, **kwargs)


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _embedded_images(out: Path) -> list[dict]:
    return [image for config in CONFIGS for row in iter_rows(out, config, columns=["images"])
            for image in row["images"]]


class _TwinBuilds(dict):
    """layout -> the folder built from the twinned source in that layout, built when first asked."""

    def __init__(self, root: Path, sources: dict, tokenizer_path: Path):
        super().__init__()
        self.root, self.sources, self.tokenizer_path = root, sources, tokenizer_path

    def __missing__(self, layout: str) -> Path:
        out = self.root / layout / "mmlb"
        results = _build(out, self.sources, self.tokenizer_path, layout)
        assert all(r.ok for r in results), [r.error for r in results]  # files: FileNotFoundError before
        self[layout] = out
        return out


@pytest.fixture(scope="module")
def twin_builds(tmp_path_factory, coco_twins, tokenizer_path) -> dict[str, Path]:
    return _TwinBuilds(tmp_path_factory.mktemp("twin_builds"), {"coco": coco_twins}, tokenizer_path)


def test_the_rows_really_use_both_names_of_one_photo(twin_builds):
    """Otherwise the other tests would prove nothing: the builds draw a photo and its twin."""
    names = {image["path"] for image in _embedded_images(twin_builds["embedded"])}
    assert {name for name in names if TWIN + name in names}, sorted(names)[:10]


def test_files_layout_stores_each_distinct_image_once(twin_builds):
    out = twin_builds["files"]
    files = sorted(p for p in (out / "images").rglob("*") if p.is_file())
    contents = [_digest(p.read_bytes()) for p in files]
    assert len(set(contents)) == len(contents)  # no two files with the same bytes
    assert all(p.stem == digest for p, digest in zip(files, contents))
    referenced = set().union(*(image_paths(out / f"{c}.metadata.parquet") for c in CONFIGS))
    assert {p.relative_to(out).as_posix() for p in files} == referenced
    assert not [p for p in out.iterdir() if p.name.endswith(".partial")]
    slots = sum(len(v) for c in CONFIGS
                for v in pq.read_table(out / f"{c}.metadata.parquet").column(IMAGE_FILES_COLUMN).to_pylist())
    assert slots > len(files)
    for config in CONFIGS:
        stats = read_manifest(out, config)["stats"]
        assert stats["num_unique_images"] == len(image_paths(out / f"{config}.metadata.parquet"))


def test_embedded_layout_counts_and_stores_identical_bytes_once(twin_builds):
    out = twin_builds["embedded"]
    for config in CONFIGS:
        images = [image for row in iter_rows(out, config, columns=["images"]) for image in row["images"]]
        distinct = {_digest(image["bytes"]): len(image["bytes"]) for image in images}
        stats = read_manifest(out, config)["stats"]
        assert len({image["path"] for image in images}) > len(distinct)  # twins under two names
        assert (stats["num_unique_images"], stats["image_bytes_unique"]) == (len(distinct), sum(distinct.values()))
        for shard in sorted((out / "data" / config).glob("*.parquet")):
            _each_row_groups_dictionary_holds_its_distinct_bytes_once(shard)


def _each_row_groups_dictionary_holds_its_distinct_bytes_once(shard: Path) -> None:
    """The image bytes' dictionary page weighs the row group's distinct bytes (JPEG does not
    compress much), not those plus a twin's: each distinct image is stored once per row group."""
    parquet = pq.ParquetFile(shard)
    for group in range(parquet.metadata.num_row_groups):
        column = next(parquet.metadata.row_group(group).column(i) for i in range(parquet.metadata.num_columns)
                      if parquet.metadata.row_group(group).column(i).path_in_schema == "images.list.element.bytes")
        assert "RLE_DICTIONARY" in column.encodings  # rows share images: the dictionary pays
        page = column.data_page_offset - column.dictionary_page_offset
        rows = parquet.read_row_group(group, columns=["images"]).column("images").to_pylist()
        distinct = {_digest(image["bytes"]): len(image["bytes"]) for row in rows for image in row}
        assert 0.97 * sum(distinct.values()) < page < 1.02 * sum(distinct.values()) + 4096


@pytest.mark.parametrize("layout", ["files", "embedded"])
def test_a_rerun_keeps_the_configs_and_a_forced_rebuild_is_byte_identical(twin_builds, coco_twins,
                                                                           tokenizer_path, layout):
    out = twin_builds[layout]
    before = {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    assert [r.status for r in _build(out, {"coco": coco_twins}, tokenizer_path, layout)] == ["kept", "kept"]
    rebuilt = _build(out, {"coco": coco_twins}, tokenizer_path, layout, force=True)
    assert all(r.ok for r in rebuilt), [r.error for r in rebuilt]
    after = {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    assert after.keys() == before.keys()
    changed = [k for k in after if after[k] != before[k] and not k.startswith("manifests/")]
    assert changed == []  # manifests record the build's seconds; every data file is the same


READ = """
import hashlib, json, sys
import datasets
datasets.disable_progress_bars()
config, places = sys.argv[1], sys.argv[2:]
print(json.dumps({f"{where} {streaming}": [[hashlib.sha256(im.convert("RGB").tobytes()).hexdigest()[:16]
                                            for im in row["images"]]
                                           for row in datasets.load_dataset(where, config, split="test",
                                                                            streaming=streaming)]
                  for where in places for streaming in (False, True)}))
"""


@pytest.mark.parametrize("layout", ["files", "embedded"])
def test_twinned_configs_load_from_the_folder_and_the_hub_alike(twin_builds, tmp_path, layout):
    """In a fresh process, in memory and streaming, from the folder and from a pushed repository
    on a loopback Hub: every row gives its images, the folder's and the Hub's the same."""
    from loopback_hub import LoopbackHub

    from mmlbdata.dataset.card import render_card
    from mmlbdata.dataset.hub import FolderUploader, push_folder

    out = twin_builds[layout]
    render_card(out, repo_id="org/twins")
    hub = FolderUploader(tmp_path / "hub")
    push_folder(out, "org/twins", uploader=hub)
    repo = hub.repo_dir("org/twins")
    pushed = {p.relative_to(repo).as_posix(): p.read_bytes() for p in sorted(repo.rglob("*")) if p.is_file()}
    if layout == "files":
        assert sorted(p for p in pushed if p.startswith("images/")) == \
            sorted(p.relative_to(out).as_posix() for p in (out / "images").rglob("*") if p.is_file())
    with LoopbackHub(repos={"org/twins": pushed}) as server:
        stdout = server.run_client(READ, CONFIGS[0], str(out), "org/twins", hf_home=tmp_path / "hf",
                                   extra_env={"HF_DATASETS_CACHE": str(tmp_path / "hf" / "datasets")})
    got = json.loads(stdout.strip().splitlines()[-1])
    rows = got[f"{out} False"]
    assert len(rows) == read_manifest(out, CONFIGS[0])["stats"]["num_rows"] and all(rows)
    assert got == {f"{where} {streaming}": rows for where in (out, "org/twins") for streaming in (False, True)}


def test_one_content_under_names_with_other_extensions_is_one_file(tmp_path):
    """``a.jpg``, ``a_copy.jpeg``, a JPEG saved as ``b.png`` and one with no extension: one file,
    named by its bytes' kind, loaded four times."""
    import io

    from PIL import Image

    from mmlbdata.core.schema import make_example
    from mmlbdata.core.store import ImageStore
    from mmlbdata.dataset.build import store_config

    buffer = io.BytesIO()
    Image.new("RGB", (40, 30), (10, 120, 200)).save(buffer, format="JPEG")
    source = tmp_path / "source"
    source.mkdir()
    for name in ("a.jpg", "a_copy.jpeg", "b.png", "c"):
        (source / name).write_bytes(buffer.getvalue())
    store = ImageStore(tmp_path / "store")
    Image.new("RGB", (20, 30), (200, 20, 0)).save(source / "other.jpg", format="JPEG")  # a family needs two
    refs = [store.ref(source / name) for name in ("a.jpg", "a_copy.jpeg", "b.png", "c", "other.jpg")]
    rows = [make_example(id="r0", dataset="toy", length=8192, num_tokens=10, prompt="<image> " * 5,
                         images=refs, question="q?", answers=["a"], metric="binary_acc", meta={})]
    out = tmp_path / "mmlb"
    store_config(out, "toy_8k", rows, manifest={"family": "toy"})
    files = sorted(p.name for p in (out / "images").rglob("*") if p.is_file())
    assert f"{_digest(buffer.getvalue())}.jpg" in files and len(files) == 2
    row = datasets.load_dataset(str(out), "toy_8k", split="test")[0]
    assert [im.size for im in row["images"]] == [(40, 30)] * 4 + [(20, 30)]
