"""Image partitions (mmlbdata/dataset/partitions.py): each config's data files name exactly the
images its rows use, from a folder and from a Hub, whatever order the configs were built in."""
from __future__ import annotations

import json
from pathlib import Path

from test_layout import _images, _rows

from mmlbdata.core.store import ImageStore, file_sha256
from mmlbdata.dataset.build import completed_stats, store_config
from mmlbdata.dataset.stats import image_paths
from mmlbdata.dataset.writer import IMAGE_FOLDER_HINT

# toy_8k and toy_32k share images 0 and 2; toy_32k adds 4; other_8k (another dataset of the family)
# shares image 3 with toy_8k and adds 5, 6
PATTERNS = {"toy_8k": [[0, 1, 1, 2], [3], [2, 2, 0]], "toy_32k": [[2, 4, 0], [4, 4]], "other_8k": [[5, 3], [6]]}
REQUESTED = {"family": "toy", "dataset": "toy", "metric": "m", "seed": 0, "limit": None, "options": {}, "sources": {}}


def _build(out: Path, refs, order) -> None:
    for config in order:
        store_config(out, config, _rows(refs, PATTERNS[config]), manifest={**REQUESTED, "length": 8192})


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_the_build_order_changes_no_byte_and_resume_keeps_every_config(tmp_path):
    """Partitions follow which configs use an image, not which was built first: building the
    longer config first, then the shorter ones (whose images then move), gives the same folder."""
    refs = _images(ImageStore(tmp_path / "store"), 7)
    _build(tmp_path / "short_first", refs, ["toy_8k", "other_8k", "toy_32k"])
    _build(tmp_path / "long_first", refs, ["toy_32k", "toy_8k", "other_8k"])
    first, second = _files(tmp_path / "short_first"), _files(tmp_path / "long_first")
    assert sorted(first) == sorted(second)
    assert [name for name in first if first[name] != second[name]] == []
    assert sum(name.startswith("images/") for name in first) == 7  # one copy of each image
    for config in PATTERNS:
        assert completed_stats(tmp_path / "long_first", config, {**REQUESTED, "length": 8192}) is not None


def test_each_config_names_exactly_the_images_its_rows_use(tmp_path):
    import yaml

    refs = _images(ImageStore(tmp_path / "store"), 7)
    out = tmp_path / "out"
    _build(out, refs, ["toy_32k", "toy_8k", "other_8k"])
    front = yaml.safe_load((out / "README.md").read_text().split("---")[1])
    for entry in front["configs"]:
        config = entry["config_name"]
        patterns = entry["data_files"][0]["path"]
        assert patterns[1:3] == list(IMAGE_FOLDER_HINT)  # the image builder's two PNGs, in no row
        assert all(pattern.endswith("/**") for pattern in patterns[3:])
        named = {p.relative_to(out).as_posix() for pattern in patterns[3:]
                 for p in (out / pattern[:-3]).rglob("*") if p.is_file()}
        assert named == set(image_paths(out / f"{config}.metadata.parquet")), config
        assert len(named) == len({i for row in PATTERNS[config] for i in row})


HUB_LOAD = """
import sys
import datasets
datasets.disable_progress_bars()
ds = datasets.load_dataset(sys.argv[1], sys.argv[2], split="test")
print(sum(len(row["images"]) for row in ds))
"""


def test_an_in_memory_load_from_the_hub_downloads_only_its_own_images(tmp_path):
    """The acceptance of issue 31 in small: a config's in-memory load GETs its metadata and the
    images its rows use, not those of the other configs of its family (on the Hub side)."""
    from loopback_hub import LoopbackHub

    from mmlbdata.dataset.hub import FolderUploader, push_folder

    refs = _images(ImageStore(tmp_path / "store"), 7)
    out = tmp_path / "out"
    _build(out, refs, ["toy_8k", "toy_32k", "other_8k"])
    hub = FolderUploader(tmp_path / "hub")
    push_folder(out, "org/toy", uploader=hub, card=True)
    repo = hub.repo_dir("org/toy")
    for config in PATTERNS:
        with LoopbackHub(repos={"org/toy": _files(repo)}) as server:
            stdout = server.run_client(HUB_LOAD, "org/toy", config, hf_home=tmp_path / f"hf-{config}")
            got = {path.split("/resolve/", 1)[1].split("/", 1)[1] for method, path in server.requests
                   if method == "GET" and "/resolve/" in path and "/images/" in path}
        assert int(stdout.split()[-1]) == sum(len(row) for row in PATTERNS[config])
        assert got == set(image_paths(out / f"{config}.metadata.parquet")), config
        assert json.loads(json.dumps(sorted(got)))  # named, not empty


HUB_STREAM_FIRST_ROW = """
import sys
import datasets
datasets.disable_progress_bars()
row = next(iter(datasets.load_dataset(sys.argv[1], sys.argv[2], split="test", streaming=True)))
print(len(row["images"]), row["images"][0].size)
"""


def test_streaming_from_the_hub_fetches_the_images_of_the_rows_read(tmp_path):
    """datasets 5.2 decodes a Hub-streamed folder config 64 rows ahead in 32 threads; the README
    sets decode_num_threads: 0, so reading one row fetches that row's images only."""
    from loopback_hub import LoopbackHub

    from mmlbdata.dataset.hub import FolderUploader, push_folder

    refs = _images(ImageStore(tmp_path / "store"), 40)
    out = tmp_path / "out"
    store_config(out, "toy_8k", _rows(refs, [[i] for i in range(40)]), manifest={"family": "toy"})
    hub = FolderUploader(tmp_path / "hub")
    push_folder(out, "org/toy", uploader=hub, card=True)
    with LoopbackHub(repos={"org/toy": _files(hub.repo_dir("org/toy"))}) as server:
        stdout = server.run_client(HUB_STREAM_FIRST_ROW, "org/toy", "toy_8k", hf_home=tmp_path / "hf")
        fetched = {path for method, path in server.requests if method == "GET" and "/images/" in path}
    assert stdout.split()[0] == "1"
    assert [path.rsplit("/", 1)[1] for path in fetched] == [f"{file_sha256(refs[0].path)}.jpg"]


def test_the_readme_and_the_card_say_the_datasets_version_and_the_bounded_filter_first(tmp_path):
    """datasets 3.6 fails on these folders (NonMatchingSplitsSizesError) and a plain filter decodes
    1,000 rows of images: both are said where a user reads the load line, bounded idiom first."""
    from mmlbdata.dataset.card import MIN_DATASETS_VERSION
    from mmlbdata.dataset.hub import FolderUploader, push_folder

    pyproject = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text()
    assert f'"datasets>={MIN_DATASETS_VERSION}"' in pyproject
    refs = _images(ImageStore(tmp_path / "store"), 7)
    out = tmp_path / "out"
    _build(out, refs, ["toy_8k"])
    plan = push_folder(out, "org/toy", uploader=FolderUploader(tmp_path / "hub"), card=True)
    project_readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    for text in ((out / "README.md").read_text(), plan.readme, project_readme):
        assert f"datasets>={MIN_DATASETS_VERSION}" in text
        bounded = text.index('input_columns=["num_tokens"]')
        assert text.index("load_dataset(") < bounded < text.index("load_dataset(") + 400  # beside the first load
        assert 'r["num_tokens"]' not in text[:bounded]  # the unbounded form is never shown before it


def test_a_folder_built_before_partitions_is_moved_into_them_by_the_next_build(tmp_path):
    """images/<family>/ab/<sha>.<ext> (the layout before partitions): the next build of the family
    moves those images into partitions and rewrites the old configs' paths; everything loads."""
    import datasets

    from mmlbdata.dataset.partitions import rewrite_metadata

    refs = _images(ImageStore(tmp_path / "store"), 7)
    out = tmp_path / "out"
    _build(out, refs, ["toy_8k"])
    path = out / "toy_8k.metadata.parquet"
    flat = {name: "images/toy/" + "/".join(name.split("/")[-2:]) for name in image_paths(path)}
    for name, old in flat.items():
        (out / old).parent.mkdir(parents=True, exist_ok=True)
        (out / name).rename(out / old)
    rewrite_metadata(path, flat)
    _build(out, refs, ["toy_32k"])
    assert sorted(image_paths(path)) == sorted(_files_named(out, "toy_8k"))
    assert all(len(name.split("/")) == 5 for name in image_paths(path))  # images/toy/<partition>/ab/<file>
    for config in ("toy_8k", "toy_32k"):
        rows = datasets.load_dataset(str(out), config, split="test", cache_dir=str(tmp_path / config))
        assert [len(r["images"]) for r in rows] == [len(p) for p in PATTERNS[config]]


def _files_named(out: Path, config: str) -> list[str]:
    return [name for name in image_paths(out / f"{config}.metadata.parquet") if (out / name).is_file()]


def _build_one(out: str, store: str, config: str) -> None:
    refs = _images(ImageStore(Path(store)), 7)
    _build(Path(out), refs, [config])


def test_configs_of_one_family_built_at_once_give_the_sequential_folder(tmp_path):
    """Parallel builds share the family's lock for placing and re-partitioning; the manifests
    and README entries of configs whose images moved are refreshed whoever moved them."""
    import multiprocessing

    refs = _images(ImageStore(tmp_path / "store"), 7)
    _build(tmp_path / "sequential", refs, list(PATTERNS))
    context = multiprocessing.get_context("spawn")
    with context.Pool(3) as pool:
        pool.starmap(_build_one, [(str(tmp_path / "parallel"), str(tmp_path / "store"), c) for c in PATTERNS])
    first, second = _files(tmp_path / "sequential"), _files(tmp_path / "parallel")
    assert sorted(first) == sorted(second)
    assert [name for name in first if first[name] != second[name]] == []


def test_a_build_checks_only_the_manifests_its_repartitioning_touched_unless_one_was_killed(tmp_path, monkeypatch):
    """Each build refreshes the manifests of the configs whose metadata its re-partitioning rewrote,
    not every config of the folder (hashing all metadata at every build grows with the square of the
    configs in a full build); a build killed between re-partitioning and that refresh leaves a mark,
    and the next build then checks every config, so the folder is repaired."""
    from mmlbdata.dataset import build as build_module
    from mmlbdata.dataset.partitions import relayout_pending_path

    refs = _images(ImageStore(tmp_path / "store"), 7)
    out = tmp_path / "mmlb"
    _build(out, refs, ["toy_8k", "toy_32k"])
    hashed = []
    real_digest = build_module.file_digest
    monkeypatch.setattr(build_module, "file_digest", lambda path, algo: hashed.append(Path(path).name) or
                        real_digest(path, algo))
    _build(out, refs, ["other_8k"])  # shares image 3 with toy_8k only: toy_8k's metadata is rewritten
    # (other_8k's own digest is the writer's); toy_32k's metadata is not read
    assert sorted(hashed) == ["toy_8k.metadata.parquet"]
    assert not relayout_pending_path(out, "toy").exists()
    stale = json.loads((out / "manifests" / "toy_8k.json").read_text())
    stale["stats"]["fingerprint"] = "from a build killed before its refresh"
    (out / "manifests" / "toy_8k.json").write_text(json.dumps(stale))
    relayout_pending_path(out, "toy").write_text("12345-1")  # the mark of a build killed before its refresh
    hashed.clear()
    _build(out, refs, ["toy_32k"])
    assert set(hashed) == {"toy_8k.metadata.parquet", "toy_32k.metadata.parquet", "other_8k.metadata.parquet"}
    assert completed_stats(out, "toy_8k", {**REQUESTED, "length": 8192}) is not None  # repaired
    assert not relayout_pending_path(out, "toy").exists()


def test_no_other_build_of_the_family_repartitions_between_a_configs_relayout_and_its_entry(tmp_path, monkeypatch):
    """toy_32k's manifest and README entry are written under the family's lock, with its
    re-partitioning: a parallel build of toy_8k (which moves toy_32k's shared images to the 8K
    partition) cannot run in between, so toy_32k's entry names the partitions its metadata has
    (a race seen in CI with three parallel builds: the README differed from the sequential build's)."""
    from mmlbdata.core import locks
    from mmlbdata.dataset import build
    from mmlbdata.dataset.partitions import family_lock_path

    refs = _images(ImageStore(tmp_path / "store"), 7)
    out = tmp_path / "out"
    real_write_manifest, held = build.write_manifest, []

    def write_and_look(folder, config, content):
        held.append(locks.is_held(family_lock_path(out, "toy")))  # held by this process through another descriptor
        return real_write_manifest(folder, config, content)

    monkeypatch.setattr(build, "write_manifest", write_and_look)
    _build(out, refs, ["toy_32k", "toy_8k"])
    assert len(held) == 3 and all(held)  # two builds, and toy_32k's manifest refreshed by the second
    _build(tmp_path / "sequential", refs, ["toy_8k", "toy_32k"])
    assert _files(out)["README.md"] == _files(tmp_path / "sequential")["README.md"]
