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


#: where a line lies in its file: (byte offset, byte length), for reading it again alone (:func:`read_span`)
Span = tuple[int, int]
_LONE_CR = re.compile(rb"\r(?!\n)")


def _lines(handle) -> Iterator[tuple[int, bytes]]:
    """(byte offset, line) of a binary file, split as text mode splits (universal newlines: ``\n``,
    ``\r\n`` and a lone ``\r`` each end a line), so line numbers are those of any text reader."""
    offset = 0
    for chunk in handle:  # ends at b"\n" (or the end of the file)
        if b"\r" not in chunk or chunk.endswith(b"\r\n") and chunk.count(b"\r") == 1:  # the common case
            yield offset, chunk
            offset += len(chunk)
            continue
        start = 0
        for match in _LONE_CR.finditer(chunk):
            yield offset + start, chunk[start:match.end()]
            start = match.end()
        if start < len(chunk):
            yield offset + start, chunk[start:]
        offset += len(chunk)


def _record(path, line_no: int, line: str) -> dict | BadRecord:
    """One JSON-lines line as a record, or the BadRecord saying why it is not one."""
    at = _first_undecodable(line)
    if at is not None:
        return BadRecord(str(path), f"line {line_no}", f"not UTF-8: byte 0x{ord(line[at]) - 0xDC00:02x} at character {at}")
    try:
        record = json.loads(line)
    except (json.JSONDecodeError, RecursionError) as exc:  # RecursionError: nested too deep to read
        return BadRecord(str(path), f"line {line_no}", f"invalid JSON: {exc}")
    if not isinstance(record, dict):
        return BadRecord(str(path), f"line {line_no}", "not a JSON object")
    if lone_surrogate(line, record):
        return BadRecord(str(path), f"line {line_no}", "not UTF-8: a lone surrogate escape "
                         "(\\ud800-\\udfff without its pair): valid JSON, but no text")
    return record


def read_jsonl_spans(path) -> Iterator[tuple[int, dict | BadRecord, Span]]:
    """:func:`read_jsonl` with each line's :data:`Span`, so a caller that picks records after a
    whole pass (a seeded draw over every id) reads only those again, not the whole file."""
    with open(path, "rb") as handle:
        line_no = 0
        for offset, raw in _lines(handle):
            line_no += 1
            line = raw.decode("utf-8", errors="surrogateescape")
            if line.strip():
                yield line_no, _record(path, line_no, line), (offset, len(raw))


def read_jsonl(path) -> Iterator[tuple[int, dict | BadRecord]]:
    """(line number, record) for each non-blank line; a line that is not a JSON object, or holds
    bytes that are not UTF-8, comes back as a BadRecord naming the file and line.

    Each line is decoded with ``surrogateescape``: a bad byte stays in its line as a marker instead of
    failing the whole read, so only that line is lost; lines split exactly as in text mode.
    """
    for line_no, record, _span in read_jsonl_spans(path):
        yield line_no, record


def read_spans(path, spans: list[tuple[int, Span]]) -> Iterator[tuple[int, dict]]:
    """(line number, record) of the given lines only, each read alone at its :data:`Span` (lines a
    first pass of :func:`read_jsonl_spans` found good), through one open file."""
    with open(path, "rb") as handle:
        for line_no, (offset, length) in spans:
            handle.seek(offset)
            yield line_no, json.loads(handle.read(length).decode("utf-8", errors="surrogateescape"))


def read_jsonl_reported(path: Path, report: BuildReport) -> Iterator[tuple[int, dict]]:
    """(line number, record) of a JSON-lines file; bad lines are reported and skipped."""
    for line_no, record, _span in read_jsonl_reported_spans(path, report):
        yield line_no, record


def read_jsonl_reported_spans(path: Path, report: BuildReport) -> Iterator[tuple[int, dict, Span]]:
    """:func:`read_jsonl_reported` with each line's :data:`Span`."""
    for line_no, record, span in read_jsonl_spans(path):
        if isinstance(record, BadRecord):
            report.skip(record.file, record.record, record.reason)
            continue
        yield line_no, record, span
