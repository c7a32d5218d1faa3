"""``mmlb gc``: remove from a built folder the images no config uses, and stale staging folders.

A files-layout folder shares one copy of each image between configs, so a rebuild never deletes
the images its previous build used: another config may use them too, and a build running in
parallel into the same folder may just have found one in place and skipped copying it. What a
folder uses is known only once no build is writing: the union of the image paths every config's
``<config>.metadata.parquet`` names (each ``<column>_file_names`` column; the embedded layout's
shards name no file). Everything under ``images/`` outside that union is unused, however the tree
below ``images/`` is organised. A metadata file that cannot be read stops the clean-up (its
images cannot be told apart from unused ones); a folder with no config at all is refused (a
partial copy, a wrong path), and nothing is removed while a build or card update holds a lock in
the folder.

Staging folders (``.<config>.partial/`` of the files layout, ``data/.<config>.partial/`` and
``data/.<config>.old/`` of the embedded layout) are left only by a build that was killed; each is
removed when no build of its config holds the config's lock.

:func:`plan_cleanup` only looks; :func:`apply_cleanup` removes what a plan lists, after checking
again that no build started meanwhile. ``mmlb push`` removes from the Hub the images no config of
the repository uses with :func:`referenced_images` (``hub.py``).
"""
from __future__ import annotations

import os
import posixpath
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from mmlbdata.core import locks
from mmlbdata.dataset.build import config_lock_path
from mmlbdata.dataset.stats import DamagedShardError, configs_in
from mmlbdata.dataset.writer import (FILE_NAMES_SUFFIX, IMAGES_DIR, METADATA_SUFFIX, built_configs, metadata_path,
                                     remove_if_empty)

STAGING_SUFFIXES = (".partial", ".old")  # what the writers name their staging and replaced folders


class FolderBusyError(RuntimeError):
    """A build (or a card update) is writing into the folder: what it uses is not known yet."""


@dataclass
class CleanupPlan:
    """What a clean-up of ``folder`` keeps and removes (paths relative to ``folder``)."""

    folder: Path
    configs: list[str] = field(default_factory=list)
    used_images: int = 0
    used_bytes: int = 0
    missing_images: list[str] = field(default_factory=list)  # named by a config, not in the folder
    unused_images: list[str] = field(default_factory=list)
    unused_bytes: int = 0
    staging: list[str] = field(default_factory=list)  # stale staging folders
    staging_bytes: int = 0
    stamps: dict[str, tuple[int, int]] = field(default_factory=dict)  # metadata file -> (size, mtime) planned on

    @property
    def empty(self) -> bool:
        return not (self.unused_images or self.staging)


def referenced_images(folder: os.PathLike, configs: Optional[Iterable[str]] = None) -> set[str]:
    """The image paths (relative to ``folder``) that ``configs`` (default: every config of the
    folder) name in their metadata files; embedded configs name none. A metadata file that cannot
    be read raises :class:`DamagedShardError` naming it."""
    folder = Path(folder)
    files_configs = built_configs(folder)["files"]
    used: set[str] = set()
    for config in sorted(files_configs if configs is None else set(configs) & files_configs):
        used |= metadata_image_paths(metadata_path(folder, config))
    return used


def metadata_image_paths(path: Path) -> set[str]:
    """Every path of every ``<column>_file_names`` column of one metadata file."""
    try:
        parquet = pq.ParquetFile(path)
        columns = [name for name in parquet.schema_arrow.names if name.endswith(FILE_NAMES_SUFFIX)]
        table = parquet.read(columns=columns)
    except (pa.ArrowException, OSError) as err:
        raise DamagedShardError(f"{path}: unreadable metadata file, so the images it uses are unknown; "
                                f"rebuild this config before cleaning up ({err})") from err
    names: set[str] = set()
    for column in columns:  # normalised as the folder listing gives them (``./images/x`` is ``images/x``)
        paths = pc.list_flatten(table.column(column)).drop_null().to_pylist()
        names.update(posixpath.normpath(name) for name in paths)
    return names


def metadata_stamps(folder: os.PathLike) -> dict[str, tuple[int, int]]:
    """Each metadata file's (size, modification time): a rebuild between planning and removing shows."""
    stamps = {}
    for config in sorted(built_configs(folder)["files"]):
        stat = metadata_path(folder, config).stat()
        stamps[config] = (stat.st_size, stat.st_mtime_ns)
    return stamps


def image_files(folder: os.PathLike) -> dict[str, int]:
    """Every file under ``folder/images/`` -> its size, by path relative to ``folder`` (sorted)."""
    folder = Path(folder)
    root = folder / IMAGES_DIR
    if not root.is_dir():
        return {}
    return {p.relative_to(folder).as_posix(): p.stat().st_size for p in sorted(root.rglob("*")) if p.is_file()}


def busy_locks(folder: os.PathLike) -> list[str]:
    """The ``.mmlb-*.lock`` files of ``folder`` that a running build or card update holds now."""
    return [p.name for p in sorted(Path(folder).glob(".mmlb-*.lock")) if locks.is_held(p)]


def stale_staging(folder: os.PathLike) -> list[str]:
    """Staging folders left by killed builds whose config no build is writing now."""
    folder = Path(folder)
    found = []
    for parent in (folder, folder / "data"):
        if not parent.is_dir():
            continue
        for path in sorted(parent.iterdir()):
            config = _staged_config(path.name)
            if path.is_dir() and config and not locks.is_held(config_lock_path(folder, config)):
                found.append(path.relative_to(folder).as_posix())
    return found


def _staged_config(name: str) -> Optional[str]:
    """``.vh_single_8k.partial`` -> ``vh_single_8k``; None for any other name."""
    for suffix in STAGING_SUFFIXES:
        if name.startswith(".") and name.endswith(suffix) and len(name) > 1 + len(suffix):
            return name[1:-len(suffix)]
    return None


def plan_cleanup(folder: os.PathLike) -> CleanupPlan:
    """What :func:`apply_cleanup` would remove; raises :class:`FolderBusyError` while a build
    writes into ``folder`` and ``FileNotFoundError`` when it holds no built config."""
    folder = Path(folder)
    _check_not_busy(folder)
    plan = CleanupPlan(folder, configs=configs_in(folder))
    if not plan.configs:
        raise FileNotFoundError(f"{folder}: no built config (no <config>{METADATA_SUFFIX}, no data/<config>/), so "
                                "nothing says which images are used; refusing to clean up")
    plan.stamps = metadata_stamps(folder)
    used = referenced_images(folder)
    present = image_files(folder)
    plan.missing_images = sorted(used - present.keys())
    for relative, size in present.items():
        if relative in used:
            plan.used_images += 1
            plan.used_bytes += size
        else:
            plan.unused_images.append(relative)
            plan.unused_bytes += size
    plan.staging = stale_staging(folder)
    plan.staging_bytes = sum(_tree_bytes(folder / relative) for relative in plan.staging)
    return plan


def apply_cleanup(plan: CleanupPlan) -> None:
    """Remove the plan's unused images (then the folders they leave empty) and stale staging
    folders; refuses if a build started since the plan was made."""
    folder = plan.folder
    _check_not_busy(folder)
    if set(configs_in(folder)) != set(plan.configs) or metadata_stamps(folder) != plan.stamps:
        raise FolderBusyError(f"{folder}: a config was built since the clean-up was planned (it may use an "
                              "image the plan lists); run it again")
    for relative in plan.unused_images:
        (folder / relative).unlink(missing_ok=True)
    _remove_empty_folders(folder / IMAGES_DIR)
    for relative in plan.staging:
        config = _staged_config(Path(relative).name)
        if config and not locks.is_held(config_lock_path(folder, config)):
            shutil.rmtree(folder / relative, ignore_errors=True)
    remove_if_empty(folder / "data")  # a files-layout folder has none


def _check_not_busy(folder: Path) -> None:
    held = busy_locks(folder)
    if held:
        raise FolderBusyError(f"{folder}: a build is writing into it ({', '.join(held)} held); the images it "
                              "uses are not known until it is done: run the clean-up after it")


def _remove_empty_folders(root: Path) -> None:
    """Every empty folder under ``root`` (deepest first), and ``root`` itself if emptied."""
    if not root.is_dir():
        return
    for path in sorted((p for p in root.rglob("*") if p.is_dir()), key=lambda p: (-len(p.parts), p)):
        if not any(path.iterdir()):
            path.rmdir()
    if not any(root.iterdir()):
        root.rmdir()


def _tree_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
