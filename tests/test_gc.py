"""``mmlb gc``: images no config uses and stale staging folders leave a built folder (either
layout), never an image a config uses; ``mmlb push`` deletes the same images from the Hub repo,
resumably, and never those a config pushed from elsewhere may use (issue 31)."""
from __future__ import annotations

import io
import shutil
from pathlib import Path

import datasets
import numpy as np
import pytest
from PIL import Image

from mmlbdata.cli import main
from mmlbdata.core import locks
from mmlbdata.core.schema import make_example
from mmlbdata.core.store import ImageStore
from mmlbdata.dataset import hub as hub_module
from mmlbdata.dataset.build import config_lock_path, store_config
from mmlbdata.dataset.cleanup import FolderBusyError, apply_cleanup, image_files, plan_cleanup, referenced_images
from mmlbdata.dataset.hub import FolderUploader, push_folder
from mmlbdata.dataset.stats import DamagedShardError


def _images(store: ImageStore, count: int, shade: int = 0):
    refs = []
    for i in range(count):
        buffer = io.BytesIO()
        Image.new("RGB", (32 + i, 24), (shade, 20 * i, 90)).save(buffer, format="JPEG", quality=95)
        refs.append(store.put_bytes(buffer.getvalue(), "jpg"))
    return refs


def _rows(refs, pattern):
    for r, picks in enumerate(pattern):
        yield make_example(id=f"r{r}", dataset="toy", length=8192, num_tokens=100 + r,
                           prompt=" ".join(["<image>"] * len(picks)), images=[refs[i] for i in picks],
                           question="q?", answers=["a"], metric="binary_acc", meta={"r": r})


def _store(out: Path, config: str, refs, pattern, layout: str = "files"):
    store_config(out, config, _rows(refs, pattern), manifest={"family": "toy"}, layout=layout)


def _pixels(folder: Path, config: str, streaming: bool = False):
    ds = datasets.load_dataset(str(folder), config, split="test", streaming=streaming)
    return [[np.asarray(im.convert("RGB")).tobytes() for im in row["images"]] for row in ds]


@pytest.fixture
def rebuilt(tmp_path) -> dict:
    """toy_8k and toy_32k share images; toy_8k is then rebuilt from other photos, orphaning those
    of its first build that toy_32k does not use."""
    store = ImageStore(tmp_path / "store")
    old, new = _images(store, 5), _images(store, 3, shade=200)
    out = tmp_path / "mmlb"
    _store(out, "toy_8k", old, [[0, 1], [2, 3]])
    _store(out, "toy_32k", old, [[3, 4, 4]])
    before = set(image_files(out))
    first_copy = tmp_path / "first_build"  # the rebuild may move shared images to other partitions
    shutil.copytree(out, first_copy)
    _store(out, "toy_8k", new, [[0, 1], [2, 0]])
    return {"out": out, "old": old, "new": new, "first_build": before, "first_copy": first_copy}


def test_gc_removes_exactly_the_images_no_config_uses_and_the_configs_still_load(rebuilt):
    out = rebuilt["out"]
    want = {"toy_8k": _pixels(out, "toy_8k"), "toy_32k": _pixels(out, "toy_32k")}
    used = referenced_images(out)
    assert len(used) == 2 + 3  # toy_32k's images 3 and 4, toy_8k's three new ones
    plan = plan_cleanup(out)
    # images 0, 1, 2 of the first toy_8k (image 3 moved to toy_32k's own partition: used, not orphaned)
    orphans = sorted(set(image_files(out)) - used)
    assert len(orphans) == 3 and set(orphans) <= rebuilt["first_build"]
    assert plan.unused_images == orphans and plan.unused_bytes == sum((out / p).stat().st_size for p in orphans)
    assert (plan.used_images, plan.configs, plan.missing_images, plan.staging) == (5, ["toy_32k", "toy_8k"], [], [])
    assert set(image_files(out)) == used | set(orphans)  # planning removed nothing
    apply_cleanup(plan)
    assert set(image_files(out)) == used
    assert plan_cleanup(out).empty
    for config, pixels in want.items():
        assert _pixels(out, config) == pixels and _pixels(out, config, streaming=True) == pixels
    assert not [p for p in (out / "images").rglob("*") if p.is_dir() and not any(p.iterdir())]


def test_mmlb_gc_is_a_dry_run_unless_delete(rebuilt, capsys):
    out = rebuilt["out"]
    assert main(["gc", str(out), "--list"]) == 0
    said = capsys.readouterr().out
    assert "would remove 3 image file(s) no config uses" in said and "dry run: nothing removed" in said
    assert "2 config(s) use 5 image file(s)" in said
    assert all(f"  {p}" in said for p in plan_cleanup(out).unused_images)
    assert len(image_files(out)) == 8
    assert main(["gc", str(out), "--delete"]) == 0
    assert "removed 3 image file(s)" in capsys.readouterr().out and len(image_files(out)) == 5
    assert main(["gc", str(out)]) == 0
    assert "would remove 0 image file(s)" in capsys.readouterr().out


def test_gc_removes_stale_staging_folders_and_nothing_while_a_build_runs(rebuilt, capsys):
    out = rebuilt["out"]
    staging = [out / ".toy_8k.partial" / "images" / "toy", out / "data" / ".toy_32k.partial",
               out / "data" / ".toy_32k.old"]
    for folder in staging:
        folder.mkdir(parents=True)
        (folder / "shard-00000.parquet").write_bytes(b"x" * 10)
    (out / ".mmlb-toy_32k.lock").write_text("")  # left by a killed build: its flock is gone
    plan = plan_cleanup(out)
    assert plan.staging == [".toy_8k.partial", "data/.toy_32k.old", "data/.toy_32k.partial"]
    assert plan.staging_bytes == 30
    with locks.hold(config_lock_path(out, "toy_8k")):  # a build is writing: nothing is known, nothing goes
        with pytest.raises(FolderBusyError, match="mmlb-toy_8k.lock"):
            plan_cleanup(out)
        with pytest.raises(FolderBusyError):
            apply_cleanup(plan)
        assert main(["gc", str(out), "--delete"]) == 1
        assert "a build is writing into it" in capsys.readouterr().err
    assert all(folder.exists() for folder in staging) and len(image_files(out)) == 8
    apply_cleanup(plan)
    assert not any(folder.exists() for folder in staging)
    assert not (out / "data").exists()  # emptied: the files layout has none
    assert len(image_files(out)) == 5


def test_a_build_between_planning_and_removing_stops_the_removal(rebuilt):
    out = rebuilt["out"]
    plan = plan_cleanup(out)
    _store(out, "toy_8k", rebuilt["old"], [[0, 1], [2, 3]])  # uses the planned orphans again
    with pytest.raises(FolderBusyError, match="built since the clean-up was planned"):
        apply_cleanup(plan)
    assert rebuilt["first_build"] <= set(image_files(out))  # nothing removed
    assert plan_cleanup(out).unused_images == sorted(set(image_files(out)) - referenced_images(out))


def test_gc_in_the_embedded_layout_removes_a_former_files_layout_image_tree(tmp_path):
    refs = _images(ImageStore(tmp_path / "store"), 4)
    out = tmp_path / "mmlb"
    _store(out, "toy_8k", refs, [[0, 1], [2, 3]])
    want = _pixels(out, "toy_8k")
    _store(out, "toy_8k", refs, [[0, 1], [2, 3]], layout="embedded")  # its images/ stay behind
    assert len(image_files(out)) == 4
    plan = plan_cleanup(out)
    assert plan.used_images == 0 and len(plan.unused_images) == 4
    apply_cleanup(plan)
    assert not (out / "images").exists() and _pixels(out, "toy_8k") == want


def test_gc_refuses_a_folder_without_configs_or_with_an_unreadable_metadata_file(rebuilt, tmp_path, capsys):
    out = rebuilt["out"]
    copy = tmp_path / "half_copied"
    shutil.copytree(out / "images", copy / "images")  # the metadata files not copied (yet)
    with pytest.raises(FileNotFoundError, match="no built config"):
        plan_cleanup(copy)
    assert main(["gc", str(copy), "--delete"]) == 1 and "refusing" in capsys.readouterr().err
    (out / "toy_32k.metadata.parquet").write_bytes(b"not parquet")
    with pytest.raises(DamagedShardError, match="toy_32k.metadata.parquet"):
        plan_cleanup(out)
    assert main(["gc", str(out), "--delete"]) == 1
    assert len(image_files(out)) == 8 and len(image_files(copy)) == 8


def _repo_images(hub: FolderUploader) -> set[str]:
    base = hub.repo_dir("org/toy")
    return {p.relative_to(base).as_posix() for p in (base / "images").rglob("*") if p.is_file()}


def test_push_deletes_from_the_repo_the_images_no_config_uses_resumably(rebuilt, tmp_path, monkeypatch):
    out, old = rebuilt["out"], rebuilt["old"]
    first = tmp_path / "first"  # the folder as it was first pushed
    _store(first, "toy_8k", old, [[0, 1], [2, 3]])
    _store(first, "toy_32k", old, [[3, 4, 4]])
    hub = FolderUploader(tmp_path / "hub")
    push_folder(first, "org/toy", uploader=hub)
    assert len(_repo_images(hub)) == 5
    apply_cleanup(plan_cleanup(out))
    monkeypatch.setattr(hub_module, "IMAGE_COMMIT_FILES", 2)
    real_commit = hub.commit

    def interrupted(repo_id, *, add, delete, message, revision, num_threads):
        if message.startswith("Remove images") and hub.commits[-1]["message"].startswith("Remove images"):
            raise ConnectionError("the network went away")  # after the first of two removal commits
        return real_commit(repo_id, add=add, delete=delete, message=message, revision=revision,
                           num_threads=num_threads)

    monkeypatch.setattr(hub, "commit", interrupted)
    hub.commits.clear()
    with pytest.raises(ConnectionError):
        push_folder(out, "org/toy", uploader=hub)
    # toy_32k too: the rebuild moved its image 3 from the shared partition to its own
    assert [c["message"].split(" (")[0] for c in hub.commits] == \
        ["Upload images of toy_32k", "Upload config toy_32k", "Upload images of toy_8k", "Upload images of toy_8k",
         "Upload config toy_8k", "Remove images no config uses"]
    monkeypatch.setattr(hub, "commit", real_commit)  # the network is back
    plan = push_folder(out, "org/toy", uploader=hub)  # the rerun finishes the removal
    assert plan.skipped == ["toy_32k", "toy_8k"] and len(plan.removed) == 2  # 4 paths gone, 2 per commit
    assert _repo_images(hub) == set(image_files(out)) == referenced_images(out)
    assert sorted(p for c in hub.commits for p in c["delete"]) == sorted(rebuilt["first_build"] - set(image_files(out)))
    remote = hub.repo_dir("org/toy")
    for config in ("toy_8k", "toy_32k"):
        assert _pixels(remote, config) == _pixels(out, config)
    hub.commits.clear()
    assert push_folder(out, "org/toy", uploader=hub).removed == [] and hub.commits == []


def test_push_keeps_the_images_when_the_repo_holds_a_config_built_elsewhere(rebuilt, tmp_path):
    out = rebuilt["out"]
    hub = FolderUploader(tmp_path / "hub")
    remote = hub.repo_dir("org/toy")
    remote.mkdir(parents=True)
    for relative in rebuilt["first_build"]:  # another machine pushed other_8k, which uses these
        (remote / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(rebuilt["first_copy"] / relative, remote / relative)
    shutil.copyfile(out / "toy_32k.metadata.parquet", remote / "other_8k.metadata.parquet")
    plan = push_folder(out, "org/toy", uploader=hub, card=False)
    assert plan.kept_unused_for == ["other_8k"] and plan.removed == []
    assert _repo_images(hub) >= rebuilt["first_build"]


def test_gc_help_says_it_is_a_dry_run_unless_delete(capsys):
    with pytest.raises(SystemExit) as done:
        main(["gc", "--help"])
    assert done.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "--delete" in text and "Without --delete nothing is removed (a dry run)" in text
    assert "never removed" in text and "mmlb push" in text
