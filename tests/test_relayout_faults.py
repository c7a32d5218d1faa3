"""Re-partitioning that never breaks what was built (partitions.Relayout): a full disk, or
``kill -9``, at every file-system step of a build that moves a built config's images to a new
partition. After each failure every config that loaded before loads the same, the error says
what state the folder is in, and the next build leaves the folder byte for byte as a build that
never failed (nothing of the failed one is left over).

The disk fills through a write hook: every call that creates, writes or renames a file (os.link,
os.replace, os.rename, os.mkdir, os.open with O_CREAT, open() for writing, shutil.copyfile,
pyarrow's ParquetWriter) is counted, and the k-th raises ENOSPC (or the process SIGKILLs itself,
in a forked child), for k = 1, 2, ... until a build runs through without reaching k. (A real small
tmpfs needs a root mount, which CI does not have.)
"""
from __future__ import annotations

import builtins
import errno
import io
import multiprocessing
import os
import shutil
import signal
from pathlib import Path

import datasets
import pyarrow.parquet as pq
import pytest
from test_layout import _images, _rows

from mmlbdata.core.store import ImageStore
from mmlbdata.dataset.build import describe_failure, store_config

# a_text_8k: no image; toy_8k: four images; toy_32k: two of toy_8k's images and one of its own,
# so building toy_32k moves toy_8k's shared images to a new partition and rewrites its metadata
BUILT = {"a_text_8k": [[], []], "toy_8k": [[0, 1], [2, 3, 0]]}
INCOMING = ("toy_32k", [[0, 2, 4], [4]])
REBUILT = ("toy_8k", [[0, 1], [2, 3, 0], [1]])  # a rebuild with another row count, beside toy_32k


class Faults:
    """Counts the calls that create, write or rename a file; the ``at``-th fails (ENOSPC) or
    kills the process."""

    def __init__(self, at: int, kill: bool = False):
        self.at, self.kill, self.count = at, kill, 0

    def step(self, what: str) -> None:
        self.count += 1
        if self.count == self.at:
            if self.kill:
                os.kill(os.getpid(), signal.SIGKILL)
            raise OSError(errno.ENOSPC, "No space left on device (injected)", what)

    def install(self, patch) -> None:
        real = {name: getattr(os, name) for name in ("link", "replace", "rename", "mkdir", "open")}
        real_open, real_copy = builtins.open, shutil.copyfile
        real_parquet_init, real_write_table = pq.ParquetWriter.__init__, pq.ParquetWriter.write_table

        def counted(name):
            def call(*args, **kwargs):
                self.step(name)
                return real[name](*args, **kwargs)
            return call

        def os_open(path, flags, *args, **kwargs):
            if flags & (os.O_CREAT | os.O_WRONLY | os.O_RDWR | os.O_APPEND):
                self.step("os.open")
            return real["open"](path, flags, *args, **kwargs)

        def py_open(file, mode="r", *args, **kwargs):
            if any(c in mode for c in "wax+"):
                self.step("open")
            return real_open(file, mode, *args, **kwargs)

        def copyfile(*args, **kwargs):
            self.step("copyfile")
            return real_copy(*args, **kwargs)

        def parquet_init(writer, *args, **kwargs):
            self.step("ParquetWriter")
            return real_parquet_init(writer, *args, **kwargs)

        def write_table(writer, *args, **kwargs):
            self.step("write_table")
            return real_write_table(writer, *args, **kwargs)

        for name in ("link", "replace", "rename", "mkdir"):
            patch(os, name, counted(name))
        patch(os, "open", os_open)
        patch(builtins, "open", py_open)
        patch(io, "open", py_open)
        patch(shutil, "copyfile", copyfile)
        patch(pq.ParquetWriter, "__init__", parquet_init)
        patch(pq.ParquetWriter, "write_table", write_table)


def _store(out: Path, store: Path, config: str, pattern) -> None:
    store_config(out, config, _rows(_images(ImageStore(store), 5), pattern), manifest={"family": "toy"})


def _image_counts(folder: Path, config: str, cache: Path) -> list[list[int]]:
    """Each row's image count, in memory and streaming, every image decoded (its file must exist)."""
    counts = []
    for streaming in (False, True):
        rows = datasets.load_dataset(str(folder), config, split="test", streaming=streaming, cache_dir=str(cache))
        counts.append([len([image.size for image in row["images"]]) for row in rows])
    return counts


def _listed(folder: Path) -> list[str]:
    """The configs the folder's README lists (what ``load_dataset`` offers)."""
    import yaml

    meta = yaml.safe_load((folder / "README.md").read_text().split("---")[1])
    return [entry["config_name"] for entry in meta["configs"]]


def _check_loads(out: Path, before: dict, built: str, after: list, cache: Path) -> None:
    """Every config listed before is listed and loads as before; ``built`` (the config being built)
    loads as before or as built (``after``), or, new, is not listed yet."""
    listed = _listed(out)
    assert set(before) <= set(listed), (sorted(before), listed)
    for name in listed:
        counts = _image_counts(out, name, cache / name)
        assert counts == before.get(name) or (name == built and counts == after), (name, counts)


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _in_child(out: str, store: str, config: str, pattern, at: int) -> None:
    faults = Faults(at, kill=True)
    faults.install(setattr)
    _store(Path(out), Path(store), config, pattern)
    os._exit(0 if faults.count < at else 3)


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """The folder before the build (``before``), what a build that never failed gives (``after``),
    and the folder with the rebuild's starting point (``built``: before + toy_32k)."""
    root = tmp_path_factory.mktemp("relayout")
    store = root / "store"
    before = root / "before"
    for config, pattern in BUILT.items():
        _store(before, store, config, pattern)
    after = root / "after"
    shutil.copytree(before, after)
    _store(after, store, *INCOMING)
    rebuilt = root / "rebuilt"
    shutil.copytree(after, rebuilt)
    _store(rebuilt, store, *REBUILT)
    return {"store": store, "before": before, "after": after, "rebuilt": rebuilt}


def _scenario(folders, which: str, cache: Path):
    """(starting folder, config built, its rows, the folder a clean build gives, each config's
    image counts before, the built config's after)."""
    start, (config, pattern), clean = ((folders["before"], INCOMING, folders["after"]) if which == "new config"
                                       else (folders["after"], REBUILT, folders["rebuilt"]))
    before = {name: _image_counts(start, name, cache / f"start-{name}") for name in _listed(start)}
    return start, config, pattern, clean, before, _image_counts(clean, config, cache / "clean")


def _build_with_a_full_disk_at(at: int, start: Path, out: Path, store: Path, config: str, pattern, monkeypatch):
    """Build ``config`` into a copy of ``start`` with the disk full at step ``at``: (whether the
    build ran through without reaching it, the error it raised or None)."""
    shutil.copytree(start, out)
    faults = Faults(at)
    with monkeypatch.context() as patch:
        faults.install(patch.setattr)
        try:
            _store(out, store, config, pattern)
        except OSError as err:
            return False, err
    return faults.count < at, None


@pytest.mark.parametrize("which", ["new config", "rebuild"])
def test_a_full_disk_at_any_step_breaks_no_built_config(folders, tmp_path, monkeypatch, which):
    start, config, pattern, clean, before, after = _scenario(folders, which, tmp_path / "cache")
    at, finished = 0, False
    while not finished:
        at += 1
        out = tmp_path / f"k{at}"
        finished, err = _build_with_a_full_disk_at(at, start, out, folders["store"], config, pattern, monkeypatch)
        if err is not None:
            message = describe_failure(config, out, err)
            assert "loads as before" in message or "is kept" in message, message
        _check_loads(out, before, config, after, tmp_path / f"cache-{at}")
        if not finished:
            _store(out, folders["store"], config, pattern)  # the next build finishes or removes the rest
            assert _files(out) == _files(clean), f"step {at}: {sorted(set(_files(out)) ^ set(_files(clean)))}"
        shutil.rmtree(out)
    assert at > 10  # the build did go through every step


@pytest.mark.parametrize("which", ["new config", "rebuild"])
def test_kill_at_any_step_breaks_no_built_config(folders, tmp_path, which):
    start, config, pattern, clean, before, after = _scenario(folders, which, tmp_path / "cache")
    context = multiprocessing.get_context("fork")
    at = 0
    while True:
        at += 1
        out = tmp_path / f"k{at}"
        shutil.copytree(start, out)
        child = context.Process(target=_in_child, args=(str(out), str(folders["store"]), config, pattern, at))
        child.start()
        child.join(120)
        if child.exitcode == 0:  # ran through without reaching step `at`
            break
        assert child.exitcode == -signal.SIGKILL, (at, child.exitcode)
        _check_loads(out, before, config, after, tmp_path / f"cache-{at}")
        _store(out, folders["store"], config, pattern)
        assert _files(out) == _files(clean), f"step {at}: {sorted(set(_files(out)) ^ set(_files(clean)))}"
        shutil.rmtree(out)
    assert at > 10


def test_gc_finishes_an_interrupted_repartitioning_and_push_waits_for_it(folders, tmp_path, monkeypatch, capsys):
    """A build that failed part-way leaves the journal: push refuses (manifests may lag the metadata),
    `mmlb gc` says it would finish it, and `mmlb gc --delete` finishes it as the next build would."""
    from mmlbdata.cli import main
    from mmlbdata.dataset.build import pending_relayouts
    from mmlbdata.dataset.loadcheck import load_problems

    start, config, pattern, *_ = _scenario(folders, "new config", tmp_path / "cache")
    at = 0
    while True:  # the first step whose failure leaves the re-partitioning unfinished
        at += 1
        out = tmp_path / f"k{at}"
        finished, _ = _build_with_a_full_disk_at(at, start, out, folders["store"], config, pattern, monkeypatch)
        assert not finished, "the build ran through: no step left its journal"
        if pending_relayouts(out):
            break
        shutil.rmtree(out)
    capsys.readouterr()
    assert main(["push", str(out), "--repo", "org/toy", "--dry-run", str(tmp_path / "dry")]) == 1
    assert "re-partitioning of its images unfinished" in capsys.readouterr().err
    assert main(["gc", str(out)]) == 0 and "would finish the re-partitioning of images/toy" in capsys.readouterr().out
    assert main(["gc", str(out), "--delete"]) == 0 and "finished the re-partitioning" in capsys.readouterr().out
    assert pending_relayouts(out) == [] and load_problems(out) == {}
    assert main(["gc", str(out)]) == 0 and "would remove 0 image file(s)" in capsys.readouterr().out
    assert [p.name for p in out.iterdir() if p.name.startswith(".")] == []  # no journal, staging, temporary file
    assert main(["push", str(out), "--repo", "org/toy", "--dry-run", str(tmp_path / "dry")]) == 0
