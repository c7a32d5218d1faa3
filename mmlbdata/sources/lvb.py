"""LongVideoBench release reader: annotation rows of ``lvb_val.json`` / ``lvb_test_wo_gt.json``.

The release (Hugging Face ``longvideobench/LongVideoBench``, after untarring) is::

    lvb_val.json  lvb_test_wo_gt.json  videos/<video_path>  subtitles/<subtitle_path>

Each annotation row is an object with the fields of :class:`LVBRow` (``correct_choice`` is
absent from the test split). A row that breaks the schema is reported and skipped, never
allowed to stop the build; a video or subtitle path leaving its folder (``..``, absolute, a
symlink out) is refused.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional

from mmlbdata.core.paths import UnsafePathError, resolve_inside

__all__ = ["LAYOUT", "ANNOTATION_FILES", "LVBRow", "LVBRecordError", "parse_row",
           "read_annotations", "annotation_path", "release_file"]

LAYOUT = ("lvb_val.json, lvb_test_wo_gt.json, videos/<video_path>, "
          "subtitles/<subtitle_path> (the untarred Hugging Face release)")
ANNOTATION_FILES = {"val": "lvb_val.json", "test": "lvb_test_wo_gt.json"}
MAX_CANDIDATES = 5  # letters A-E


class LVBRecordError(ValueError):
    """An annotation row that does not follow the release schema."""


@dataclass(frozen=True)
class LVBRow:
    """One question, field for field as in the release."""

    video_id: str
    question: str
    question_wo_referring_query: str
    candidates: tuple[str, ...]
    correct_choice: Optional[int]
    position: tuple[int, ...]
    topic_category: str
    question_category: str
    level: str
    id: str
    video_path: str
    subtitle_path: str
    duration_group: int
    starting_timestamp_for_subtitles: float
    duration: float
    view_count: Optional[int]

    @property
    def answer_letter(self) -> Optional[str]:
        return None if self.correct_choice is None else chr(ord("A") + self.correct_choice)


def _str(row: dict, key: str) -> str:
    value = row.get(key)
    if not isinstance(value, str):
        raise LVBRecordError(f"field {key!r} must be a string, got {value!r}")
    return value


def _number(row: dict, key: str, *, positive: bool = False) -> float:
    value = row.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise LVBRecordError(f"field {key!r} must be a finite number, got {value!r}")
    if value < 0 or (positive and value == 0):
        raise LVBRecordError(f"field {key!r} must be {'> 0' if positive else '>= 0'}, got {value!r}")
    return float(value)


def _int(value, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise LVBRecordError(f"field {key!r} must be an integer, got {value!r}")
    return value


def _identifier(row: dict) -> str:
    value = row.get("id")
    if isinstance(value, bool) or not isinstance(value, (str, int)) or value == "":
        raise LVBRecordError(f"field 'id' must be a non-empty string, got {value!r}")
    return str(value)


def _candidates(row: dict) -> tuple[str, ...]:
    values = row.get("candidates")
    if (not isinstance(values, list) or not 2 <= len(values) <= MAX_CANDIDATES
            or not all(isinstance(v, str) for v in values)):
        raise LVBRecordError(f"'candidates' must be 2-{MAX_CANDIDATES} strings, got {values!r}")
    return tuple(values)


def _safe_relative(value: str, key: str) -> str:
    """Release paths are relative file names; refuse anything escaping the release folder."""
    parts = Path(value).parts
    if not value or Path(value).is_absolute() or ".." in parts:
        raise LVBRecordError(f"field {key!r} must be a relative path inside the release, got {value!r}")
    return value


def release_file(root: str | Path, folder: str, name: str) -> Path:
    """``root/folder/name`` for a row's ``video_path`` / ``subtitle_path``, refused (an
    :class:`LVBRecordError`) when it resolves outside ``root/folder`` (a symlink leading out)."""
    try:
        resolve_inside(Path(root) / folder, name, what=f"{folder} file")
    except UnsafePathError as err:
        raise LVBRecordError(str(err)) from None
    return Path(root) / folder / name


def parse_row(row: object, *, require_answer: bool) -> LVBRow:
    """Validate one annotation object and return it typed."""
    if not isinstance(row, dict):
        raise LVBRecordError(f"expected an object, got {type(row).__name__}")
    candidates = _candidates(row)
    choice = row.get("correct_choice")
    if choice is None:
        if require_answer:
            raise LVBRecordError("missing 'correct_choice'")
    elif not 0 <= _int(choice, "correct_choice") < len(candidates):
        raise LVBRecordError(f"'correct_choice' {choice} out of range for {len(candidates)} candidates")
    position = row.get("position", [])
    if not isinstance(position, list):
        raise LVBRecordError(f"'position' must be a list, got {position!r}")
    view_count = row.get("view_count")
    return LVBRow(
        video_id=_str(row, "video_id"),
        question=_str(row, "question"),
        question_wo_referring_query=_str(row, "question_wo_referring_query"),
        candidates=candidates,
        correct_choice=choice,
        position=tuple(_int(p, "position") for p in position),
        topic_category=_str(row, "topic_category"),
        question_category=_str(row, "question_category"),
        level=_str(row, "level"),
        id=_identifier(row),
        video_path=_safe_relative(_str(row, "video_path"), "video_path"),
        subtitle_path=_safe_relative(_str(row, "subtitle_path"), "subtitle_path"),
        duration_group=_int(row.get("duration_group"), "duration_group"),
        starting_timestamp_for_subtitles=_number(row, "starting_timestamp_for_subtitles"),
        duration=_number(row, "duration", positive=True),
        view_count=None if view_count is None else _int(view_count, "view_count"),
    )


def annotation_path(root: str | Path, split: str) -> Path:
    if split not in ANNOTATION_FILES:
        raise ValueError(f"split must be one of {sorted(ANNOTATION_FILES)}, not {split!r}")
    return Path(root) / ANNOTATION_FILES[split]


def read_annotations(root: str | Path, split: str, report=None) -> Iterator[LVBRow]:
    """Rows of one split in file order; bad rows go to ``report.skip`` (or raise without one)."""
    path = annotation_path(root, split)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: annotation file not found (expected layout: {LAYOUT})") from None
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: invalid JSON: {err}") from None
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a list of annotation rows")
    for number, raw in enumerate(data):
        try:
            yield parse_row(raw, require_answer=(split == "val"))
        except LVBRecordError as err:
            record = raw.get("id", f"row {number}") if isinstance(raw, dict) else f"row {number}"
            if report is None:
                raise LVBRecordError(f"{path} [{record}]: {err}") from None
            report.skip(path, record, str(err))
