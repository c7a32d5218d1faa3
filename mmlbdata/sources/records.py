"""Reading source records: JSON-lines files where a bad line is reported, never fatal.

Shared by every reader of a JSON-lines release (MMLongBench-Doc's relatives, LongDocURL,
SlideVQA, InfoSeek, ViQuAE, Multi-LexSum, the ReadBench Hub files).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from mmlbdata.core.report import BuildReport


@dataclass(frozen=True)
class BadRecord:
    """A source record a reader could not use: the builder reports it and goes on."""

    file: str
    record: str
    reason: str


def _first_undecodable(line: str) -> int | None:
    """Where the first byte that was not UTF-8 sits in ``line`` (decoded with ``surrogateescape``,
    which keeps such a byte as a lone surrogate U+DC80..U+DCFF, which no UTF-8 text holds)."""
    if line.isascii():  # the common case, checked in C
        return None
    try:
        line.encode("utf-8")
    except UnicodeEncodeError as err:
        return err.start
    return None


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def lone_surrogate(text: str, value: Any) -> bool:
    """Whether ``value``, parsed from the JSON ``text``, holds a lone surrogate: JSON may escape one
    (``"\\ud800"``) and Python's json reads it, but no UTF-8 text holds it, so the tokenizer and the
    parquet writer fail on it (the whole config, not the line). A pair (an escaped emoji) is one
    character once parsed and passes."""
    if "\\u" not in text or not _SURROGATE_ESCAPE.search(text):  # the common case, checked in C
        return False
    return unencodable(value)


def unencodable(value: Any) -> bool:
    """Whether a parsed JSON ``value`` holds a string that no UTF-8 text holds (a lone surrogate)."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def read_jsonl(path) -> Iterator[tuple[int, dict | BadRecord]]:
    """(line number, record) for each non-blank line; a line that is not a JSON object, or holds
    bytes that are not UTF-8, comes back as a BadRecord naming the file and line.

    The file is decoded with ``surrogateescape``: a bad byte stays in its line as a marker instead of
    failing the whole read, so only that line is lost; lines split exactly as in text mode.
    """
    with open(path, encoding="utf-8", errors="surrogateescape") as handle:
        for line_no, line in enumerate(handle, 1):
            if not line.strip():
                continue
            at = _first_undecodable(line)
            if at is not None:
                yield line_no, BadRecord(str(path), f"line {line_no}",
                                         f"not UTF-8: byte 0x{ord(line[at]) - 0xDC00:02x} at character {at}")
                continue
            try:
                record = json.loads(line)
            except (json.JSONDecodeError, RecursionError) as exc:  # RecursionError: nested too deep to read
                yield line_no, BadRecord(str(path), f"line {line_no}", f"invalid JSON: {exc}")
                continue
            if not isinstance(record, dict):
                yield line_no, BadRecord(str(path), f"line {line_no}", "not a JSON object")
                continue
            if lone_surrogate(line, record):
                yield line_no, BadRecord(str(path), f"line {line_no}", "not UTF-8: a lone surrogate escape "
                                         "(\\ud800-\\udfff without its pair): valid JSON, but no text")
                continue
            yield line_no, record


def read_jsonl_reported(path: Path, report: BuildReport) -> Iterator[tuple[int, dict]]:
    """(line number, record) of a JSON-lines file; bad lines are reported and skipped."""
    for line_no, record in read_jsonl(path):
        if isinstance(record, BadRecord):
            report.skip(record.file, record.record, record.reason)
            continue
        yield line_no, record
