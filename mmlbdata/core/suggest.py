"""``did you mean``: the close matches of a mistyped name among the valid ones (difflib's ratio)."""
from __future__ import annotations

import difflib
from typing import Iterable


def close_matches(word: str, choices: Iterable[str], n: int = 3) -> list[str]:
    """Up to ``n`` of ``choices`` that look like ``word``, closest first."""
    return difflib.get_close_matches(word, sorted(set(choices)), n=n, cutoff=0.6)


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """``" (did you mean 'a' or 'b'?)"`` when ``choices`` has close matches of ``word``, else ``""``."""
    close = close_matches(word, choices)
    return f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""
