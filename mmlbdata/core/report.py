"""Build reports: bad records are skipped and reported, never allowed to crash a whole build."""
from __future__ import annotations

import logging
import os
import re
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Optional

logger = logging.getLogger("mmlbdata")

MAX_DETAILS = 1000  # keep memory bounded on huge, very dirty sources
EXAMPLES_PER_REASON = 3  # the records kept to show for each kind of reason

#: the particulars of a reason (a quoted name, a list): blanked, the rest is its kind
_PARTICULARS = re.compile(r"'[^']*'|\"[^\"]*\"|\[[^\]]*\]")


def reason_kind(reason: str) -> str:
    """``document 'a.pdf' not found`` -> ``document '…' not found``: skips counted by kind, not by
    file name (one missing document is one reason however many questions it had)."""
    return _PARTICULARS.sub(lambda m: m.group(0)[0] + "…" + m.group(0)[-1], reason)


@dataclass(frozen=True)
class Skipped:
    file: str
    record: Optional[str]
    reason: str
    field: Optional[str] = None  # the record's field at fault, where one is (``ctxs[1]``; the reason names it too)

    def __str__(self) -> str:
        where = f"{self.file} [{self.record}]" if self.record is not None else self.file
        return f"{where}: {self.reason}"


def source_label(path: object, sources: Mapping[str, os.PathLike]) -> str:
    """How a manifest names a file: ``<source folder name>/<path inside it>`` for a file under one of
    the build's source roots, the path as given otherwise.

    Why: the same config built locally (sources as the user typed them, often relative) or as a
    Ray task (sources made absolute for the worker) must record the same thing, and a published
    manifest should not carry this machine's folders. The source folder's name is what the
    manifest's ``sources`` field records too (:func:`source_label` of the root itself).
    """
    for spell in (os.path.abspath, os.path.realpath):  # as given, and with symlinks resolved (resolve_inside)
        target = Path(spell(path))
        for root in sorted((Path(spell(r)) for r in sources.values()), key=lambda r: -len(r.parts)):
            if target == root or root in target.parents:
                return (Path(root.name) / target.relative_to(root)).as_posix()
    return str(path)


@dataclass
class BuildReport:
    """Collects what was skipped and why; logged as it happens, summarised at the end."""

    skipped: list[Skipped] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    counts: Counter = field(default_factory=Counter)
    #: source key -> root; set by the build so files are named by :func:`source_label`
    sources: Mapping[str, os.PathLike] = field(default_factory=dict, repr=False)
    #: every skip counted by :func:`reason_kind` (beyond MAX_DETAILS too), with a few examples each
    reasons: Counter = field(default_factory=Counter)
    examples: dict = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def skip(self, file: object, record: object, reason: str, field: Optional[str] = None) -> None:
        """Record that ``record`` of ``file`` was skipped because of ``reason`` (``field``: the
        record's field at fault, when the reason is about one)."""
        item = Skipped(source_label(file, self.sources), None if record is None else str(record), reason, field)
        logger.info("skipped %s", item)
        kind = reason_kind(reason)
        with self._lock:
            self.counts["skipped"] += 1
            if len(self.skipped) < MAX_DETAILS:
                self.skipped.append(item)
            self.reasons[kind] += 1
            shown = self.examples.setdefault(kind, [])
            if len(shown) < EXAMPLES_PER_REASON:
                shown.append(str(item))

    def note(self, message: str) -> None:
        """Something the user should know that is not a skipped record (e.g. a capped option)."""
        logger.info(message)
        with self._lock:
            if message not in self.notes:
                self.notes.append(message)

    @property
    def num_skipped(self) -> int:
        return self.counts["skipped"]

    def to_dict(self) -> dict:
        return {
            "num_skipped": self.num_skipped,
            "skipped": [vars(s) for s in self.skipped],
            "notes": list(self.notes),
        }

    def by_reason(self) -> list[dict]:
        """``[{"reason", "count", "examples"}]``, the most frequent kind first (what a build prints,
        and a failed config's manifest keeps; not in the built manifest, whose bytes are pinned)."""
        return [{"reason": kind, "count": count, "examples": list(self.examples.get(kind, []))}
                for kind, count in sorted(self.reasons.items(), key=lambda kv: (-kv[1], kv[0]))]

    def summary(self) -> str:
        if not self.num_skipped and not self.notes:
            return "no record skipped"
        lines = [f"{self.num_skipped} record(s) skipped:"] if self.num_skipped else []
        lines += [f"  - {s}" for s in self.skipped[:20]]
        if self.num_skipped > 20:
            lines.append(f"  ... and {self.num_skipped - 20} more (see the build manifest)")
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)


def human_bytes(num: int) -> str:
    """A size as reports and cards print it: ``512 B``, ``1.5 MB`` (powers of 1000)."""
    value = float(num)
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if value < 1000 or unit == "TB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{num} B"
