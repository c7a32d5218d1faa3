"""Argument helpers shared by subcommands."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Optional


def key_value(text: str) -> tuple[str, str]:
    """``KEY=VALUE`` (for --source and --option)."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), value.strip()


def positive_int(text: str) -> int:
    """An integer >= 1 (for --limit: 0 or a negative count would build nothing, or everything)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value} (leave --limit out for no cap)")
    return value


def parse_option_value(value: str):
    """Options arrive as strings; numbers and booleans are converted."""
    lowered = value.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    for cast in (int, float):
        try:
            return cast(value)
        except ValueError:
            pass
    return value


def tokenizer_or_message(path: Optional[str]) -> Optional[str]:
    """Check once, before any config is built, that the Llama-2 tokenizer can be found.

    Returns None when it can, else prints the one actionable message and returns it, so a command
    stops at once instead of failing every config with the same error.
    """
    from mmlbdata.core.tokens import TokenizerNotFoundError, find_tokenizer_model

    try:
        find_tokenizer_model(path)
    except TokenizerNotFoundError as err:
        print(f"error: {err}", file=sys.stderr)
        return str(err)
    return None


def absolute(path) -> str:
    """A path the user can paste from any directory."""
    return str(Path(path).expanduser().absolute())
