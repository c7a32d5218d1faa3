"""Argument helpers shared by subcommands."""
from __future__ import annotations

import argparse


def key_value(text: str) -> tuple[str, str]:
    """``KEY=VALUE`` (for --source and --option)."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), value.strip()


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
