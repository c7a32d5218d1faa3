"""Keeping paths that come from data inside the folder they belong to.

Release files name other files (COCO's ``file_name``, an ICL folder's image list, a release's
``image_list``). Such a name is input, not trust: ``../../etc/passwd`` or an absolute path must
never make a build embed a file from outside the source, and a manifest's ``dataset`` field must
never make an export write outside ``--out``. Every reader and writer that joins a name from data
onto a root goes through :func:`resolve_inside`.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Union

PathLike = Union[str, os.PathLike]


class UnsafePathError(ValueError):
    """A path taken from data points outside the folder it must stay in."""


def resolve_inside(root: PathLike, name: PathLike, *, what: str = "path") -> Path:
    """``root / name`` resolved (symlinks followed), refused unless it stays under ``root``.

    Absolute names, ``..`` components that climb out, and symlinks that lead out are all refused
    with an :class:`UnsafePathError` naming both the offending name and the root.
    """
    text = os.fspath(name)
    if not text or "\x00" in text:
        raise UnsafePathError(f"{what} {text!r} is empty or contains a NUL byte (root {root})")
    if os.path.isabs(text) or (len(text) > 1 and text[1] == ":"):
        raise UnsafePathError(f"{what} {text!r} is absolute; it must be relative to {root}")
    base = Path(root).resolve()
    target = (base / text).resolve()
    if target != base and base not in target.parents:
        raise UnsafePathError(f"{what} {text!r} escapes {base}")
    return target


def is_inside(root: PathLike, name: PathLike) -> bool:
    """Whether :func:`resolve_inside` would accept ``name`` under ``root``."""
    try:
        resolve_inside(root, name)
    except UnsafePathError:
        return False
    return True
