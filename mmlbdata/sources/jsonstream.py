"""One value at a time from a huge JSON file, by ijson (its C backend), so memory is bounded by
the largest single value.

Why: Multi-LexSum's ``sources.json`` is one 2.2 GB object ``{doc_id: {doc_text, ...}}`` and
MemLens's ``dataset_256k.json`` one 778 MB array of 789 records; ``json.load`` would hold all of
it as Python objects (several times the file).

Values are what ``json.load`` gives (floats as ``float``, not ijson's default ``Decimal``) for
every value these releases hold: text, ids, dates, small numbers. JSON that ``json.load`` reads
and the C parser refuses (integers beyond 64 bits, ``NaN``/``Infinity``, a float past 1e308)
stops the read with a ``ValueError`` naming the file; a lone surrogate escape (``"\\ud800"``),
which ``json.load`` keeps and no UTF-8 writer can write, is read as ``"?"``
(tests/test_memlens.py pins each case).
"""
from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import ijson


@contextmanager
def _reading(path: Path):
    """The file, opened in binary; ijson's errors as a ValueError naming it."""
    with open(path, "rb") as handle:
        try:
            yield handle
        except ijson.JSONError as exc:
            reason = " ".join(str(exc).split())[:200]
            raise ValueError(f"{path}: truncated or invalid JSON near byte ~{handle.tell():,} ({reason})") from None


def _first(handle) -> bytes:
    """The first character after white space (the file is read from its start again)."""
    head = handle.read(4096).lstrip()
    handle.seek(0)
    return head[:1]


def iter_object_items(path: Path, chunk: int = 1 << 16) -> Iterator[tuple[str, object]]:
    """Yield ``(key, value)`` of the top-level JSON object in ``path``, in file order."""
    with _reading(path) as handle:
        if _first(handle) != b"{":
            raise ValueError(f"{path}: expected a JSON object, got {_first(handle)!r}")
        yield from ijson.kvitems(handle, "", use_float=True, buf_size=chunk)


def iter_array_items(path: Path, key: str = "data", chunk: int = 1 << 16) -> Iterator[object]:
    """Yield the elements of a huge JSON array one at a time, in file order: the file's own array,
    or the one under ``key`` of its top-level object (the official loader takes ``raw.get("data",
    raw)``)."""
    with _reading(path) as handle:
        first = _first(handle)
        if first not in (b"[", b"{"):
            raise ValueError(f"{path}: expected a JSON array or object, got {first!r}")
        found = False
        for found, item in enumerate(ijson.items(handle, "item" if first == b"[" else f"{key}.item",
                                                 use_float=True, buf_size=chunk), 1):
            yield item
        if not found and first == b"{" and not _has_array(path, key):
            raise ValueError(f"{path}: a JSON object without a {key!r} array (expected a top-level array "
                             f"or {{{key!r}: [...]}})")


def _has_array(path: Path, key: str) -> bool:
    """Whether the top-level object in ``path`` has an array under ``key`` (an empty one, as no
    item was found)."""
    with _reading(path) as handle:
        return any(prefix == key and event == "start_array" for prefix, event, _ in ijson.parse(handle))
