"""Build reports: bad records are skipped and reported, never allowed to crash a whole build."""
from __future__ import annotations

import logging
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Optional

logger = logging.getLogger("mmlbdata")

MAX_DETAILS = 1000  # keep memory bounded on huge, very dirty sources


@dataclass(frozen=True)
class Skipped:
    file: str
    record: Optional[str]
    reason: str

    def __str__(self) -> str:
        where = f"{self.file} [{self.record}]" if self.record is not None else self.file
        return f"{where}: {self.reason}"


@dataclass
class BuildReport:
    """Collects what was skipped and why; logged as it happens, summarised at the end."""

    skipped: list[Skipped] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    counts: Counter = field(default_factory=Counter)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def skip(self, file: object, record: object, reason: str) -> None:
        """Record that ``record`` of ``file`` was skipped because of ``reason``."""
        item = Skipped(str(file), None if record is None else str(record), reason)
        logger.info("skipped %s", item)
        with self._lock:
            self.counts["skipped"] += 1
            if len(self.skipped) < MAX_DETAILS:
                self.skipped.append(item)

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

    def summary(self) -> str:
        if not self.num_skipped and not self.notes:
            return "no record skipped"
        lines = [f"{self.num_skipped} record(s) skipped:"] if self.num_skipped else []
        lines += [f"  - {s}" for s in self.skipped[:20]]
        if self.num_skipped > 20:
            lines.append(f"  ... and {self.num_skipped - 20} more (see the build manifest)")
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)
