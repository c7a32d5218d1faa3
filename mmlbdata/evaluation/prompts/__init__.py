"""Judge and extractor prompts, kept as text files beside this module (package data)."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

_DIR = Path(__file__).resolve().parent


@lru_cache(maxsize=None)
def load_prompt(name: str) -> str:
    """The prompt ``name`` (``<name>.md`` here), exactly as stored (no trailing newline added)."""
    path = _DIR / f"{name}.md"
    if not path.is_file():
        raise FileNotFoundError(f"no prompt {name!r} at {path}")
    return path.read_text(encoding="utf-8")
