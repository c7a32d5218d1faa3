"""Unpacking downloaded archives safely: checked names, no links out, nothing half-placed.

Why its own module: archives come from the network, and a member named ``../../x``, an absolute
name, or a symlink pointing outside the destination must never write outside it; a truncated or
corrupt archive must never leave a half-extracted tree that a later build mistakes for a release.
The rules:

- every member name is checked with :func:`mmlbdata.core.paths.resolve_inside` (zip: before anything
  is written); one bad name, even of a member not needed, refuses the whole archive
  (:class:`ArchiveError` names archive and member);
- zip members that are symlinks are refused; tar archives are read with ``filter="data"``
  (Python's own guard: no absolute names, no links leading out, no device files);
- members are extracted into a staging folder next to the destination and moved into place only
  when the whole archive read back without error (zip CRCs, gzip/tar framing), so the destination
  receives either every selected member or none;
- ``members`` (shell patterns) picks the parts a build needs from a huge archive, ``strip`` drops a
  leading folder of the member names (``mm_niah_val/``), ``anchor`` cuts each name to start at a
  named folder wherever it sits (``pdf_pngs``); a tar hard link's target is renamed the same way,
  and a hard link to a member that ``strip`` / ``anchor`` leave out refuses the archive.
"""
from __future__ import annotations

import fnmatch
import io
import os
import shutil
import stat
import tarfile
import zipfile
from pathlib import Path
from typing import Callable, Iterable, Iterator, Optional, Sequence

from mmlbdata.core.paths import UnsafePathError, resolve_inside

__all__ = ["ArchiveError", "extract_archive", "ChainedReader"]


class ArchiveError(Exception):
    """An archive could not be extracted (corrupt, truncated, or an unsafe member)."""


def _wanted(name: str, members: Optional[Sequence[str]]) -> bool:
    return not members or any(fnmatch.fnmatch(name, pattern) for pattern in members)


def _target_name(name: str, strip: str, anchor: str = "") -> Optional[str]:
    """The member's path below the destination, or None when ``strip`` / ``anchor`` rule it out.

    ``anchor``: the name is cut to start at its first folder called so (``x/pdf_pngs/a.png`` ->
    ``pdf_pngs/a.png``), for archives whose leading folders are not known in advance.
    """
    while name.startswith("./"):
        name = name[2:]
    if anchor:
        parts = name.split("/")
        if anchor not in parts[:-1]:
            return None
        name = "/".join(parts[parts.index(anchor):])
    if strip:
        if not name.startswith(strip):
            return None
        name = name[len(strip):]
    return name or None


def _checked(archive: Path, staging: Path, name: str) -> Path:
    try:
        return resolve_inside(staging, name, what=f"member of {archive.name}")
    except UnsafePathError as err:
        raise ArchiveError(f"{archive}: refused, unsafe member {name!r}: {err}") from None


def _zip_members(archive: Path, staging: Path, zf: zipfile.ZipFile, members, strip, anchor,
                 ) -> Iterator[tuple[zipfile.ZipInfo, str, Path]]:
    """The selected members with their checked paths; any hostile name refuses the archive."""
    for info in zf.infolist():
        raw = _checked(archive, staging, info.filename)  # checked whether needed or not
        if info.is_dir():
            continue
        if stat.S_ISLNK(info.external_attr >> 16):
            raise ArchiveError(f"{archive}: refused, member {info.filename!r} is a symbolic link")
        target = _target_name(info.filename, strip, anchor)
        if target is not None and _wanted(info.filename, members):
            yield info, target, raw if target == info.filename else _checked(archive, staging, target)


def _check_space(archive: Path, staging: Path, needed: int) -> None:
    """Refuse before writing when the declared sizes do not fit (a half-extracted disk helps no one)."""
    free = shutil.disk_usage(staging).free
    if needed > free:
        raise ArchiveError(f"{archive}: needs {needed / 1e9:.1f} GB to extract, {free / 1e9:.1f} GB free "
                           f"under {staging.parent}")


def _extract_zip(archive: Path, staging: Path, members, strip, anchor, on_member) -> list[str]:
    placed = []
    with zipfile.ZipFile(archive) as zf:
        selected = list(_zip_members(archive, staging, zf, members, strip, anchor))  # all checked first
        _check_space(archive, staging, sum(info.file_size for info, _, _ in selected))
        for info, target, path in selected:
            path.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as src, open(path, "wb") as out:
                shutil.copyfileobj(src, out, 1 << 20)
            placed.append(target)
            on_member(target)
    return placed


class ChainedReader(io.RawIOBase):
    """Several files read as one stream (``videos.tar.part.aa``, ``.ab``, ... -> one tar)."""

    def __init__(self, paths: Iterable[Path]):
        self._paths = list(paths)
        self._current = None

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while True:
            if self._current is None:
                if not self._paths:
                    return 0
                self._current = open(self._paths.pop(0), "rb")
            n = self._current.readinto(buffer)
            if n:
                return n
            self._current.close()
            self._current = None

    def close(self) -> None:
        if self._current is not None:
            self._current.close()
        super().close()


def _tar_member(archive: Path, staging: Path, member: tarfile.TarInfo, strip: str,
                anchor: str) -> Optional[tarfile.TarInfo]:
    target = _target_name(member.name, strip, anchor)
    if target is None:
        return None
    _checked(archive, staging, target)
    linkname = member.linkname
    if member.islnk():  # a hard link names another member: it is renamed by strip / anchor alike
        linkname = _target_name(member.linkname, strip, anchor)
        if linkname is None:
            raise ArchiveError(f"{archive}: refused, hard link {member.name!r} points at {member.linkname!r}, "
                               f"which strip/anchor leave out")
    if member.issym() or member.islnk():
        link_base = (staging / target).parent if member.issym() else staging
        _checked(archive, staging, os.path.relpath(link_base / linkname, staging))
    return member.replace(name=target, linkname=linkname, deep=False)


def _extract_tar(parts: Sequence[Path], staging: Path, members, strip, anchor, on_member) -> list[str]:
    archive = parts[0]
    placed = []
    with io.BufferedReader(ChainedReader(parts), 1 << 20) as stream, \
            tarfile.open(fileobj=stream, mode="r|*") as tf:  # the parts are closed on error too
        for member in tf:
            _checked(archive, staging, member.name)  # a hostile name refuses the archive, needed or not
            if not member.isfile() and not member.issym() and not member.islnk():
                continue
            if not _wanted(member.name, members):
                continue
            renamed = _tar_member(archive, staging, member, strip, anchor)
            if renamed is None:
                continue
            try:
                tf.extract(renamed, staging, filter="data")
            except tarfile.FilterError as err:
                raise ArchiveError(f"{archive}: refused, unsafe member {member.name!r}: {err}") from None
            placed.append(renamed.name)
            on_member(renamed.name)
    return placed


def _kind(archive: Path, kind: Optional[str]) -> str:
    if kind:
        return kind
    name = archive.name.lower()
    return "zip" if name.endswith(".zip") else "tar"


def _move_into_place(staging: Path, dest: Path, placed: Sequence[str]) -> None:
    for name in placed:
        src, target = staging / name, dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(src, target)


def extract_archive(parts: Sequence[Path] | Path, dest: Path, *, kind: Optional[str] = None,
                    members: Optional[Sequence[str]] = None, strip: str = "", anchor: str = "",
                    on_member: Callable[[str], None] = lambda name: None) -> list[str]:
    """Extract (the selected members of) an archive into ``dest``; return the placed names.

    ``parts``: one archive, or the ordered parts of a split tar. Raises :class:`ArchiveError`
    (nothing placed) for a corrupt or truncated archive or an unsafe member.
    """
    parts = [Path(parts)] if isinstance(parts, (str, os.PathLike)) else [Path(p) for p in parts]
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    staging = dest.parent / f".{dest.name}.extracting-{parts[0].name}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        if _kind(parts[0], kind) == "zip":
            if len(parts) != 1:
                raise ArchiveError(f"{parts[0]}: split zip archives are not supported")
            placed = _extract_zip(parts[0], staging, members, strip, anchor, on_member)
        else:
            placed = _extract_tar(parts, staging, members, strip, anchor, on_member)
        if (members or anchor) and not placed:
            wanted = ", ".join(list(members or ()) + ([f"a {anchor}/ folder"] if anchor else []))
            raise ArchiveError(f"{parts[0]}: no member matches {wanted}")
        _move_into_place(staging, dest, placed)
        return placed
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, OSError, ValueError) as err:
        raise ArchiveError(f"{parts[0]}: corrupt or truncated archive ({type(err).__name__}: {err})") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
