"""Stable seeds: the same parts give the same seed on every machine and Python run.

Python's ``hash()`` of a string changes between processes (PYTHONHASHSEED), so seeds are derived
from SHA-256 of the parts instead.
"""
from __future__ import annotations

import hashlib
import random


def stable_seed(*parts: object) -> int:
    """A 64-bit seed from any printable parts: ``stable_seed(0, "vh_single", "q3")``."""
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big")


def rng(*parts: object) -> random.Random:
    """A ``random.Random`` seeded with :func:`stable_seed` of ``parts``."""
    return random.Random(stable_seed(*parts))
