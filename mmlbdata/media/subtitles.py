"""Subtitle files -> cues (start, end, text) on the clip's own time axis.

LongVideoBench ships one JSON file per video in two shapes (Whisper-style
``{"timestamp": [start, end|null], "text": ...}`` and caption-style
``{"start": "HH:MM:SS.fff", "end": ..., "line": ...}``); users who assemble their own release
bring ``.srt`` or ``.vtt`` files. All of them become :class:`Cue` lists here.

Why a small parser instead of webvtt-py / pysrt: both formats are a handful of lines of
grammar, we need the same error reporting (file + cue number) for all four shapes, webvtt-py
and pysrt would add two dependencies for that, and neither parses the release's JSON. The
parser accepts what real files contain (BOM, CRLF, cue identifiers, cue settings such as
``line:80%``, NOTE/STYLE/REGION blocks, voice/italic tags, ``,`` or ``.`` decimal marks) and
is tested on the real WebVTT samples.

Subtitle files hold the *source video's full track*, while an annotation row describes a clip
starting ``starting_timestamp_for_subtitles`` seconds into it. :func:`clip_cues` puts cues on
the clip axis:

1. A ``null`` end (Whisper's last chunk) becomes the start of the next cue in the file, or the
   clip end (``offset + duration`` on the source axis) for the last cue.
2. Every time is shifted by ``-offset``.
3. Cues that do not overlap ``[0, duration]`` are dropped; the rest are clipped to it, so a
   line's midpoint (which orders it among the frames) lies inside the clip.

JSON times may be negative (a Whisper first cue that starts before 0 s): they are read as
written, as the reference loader reads them, and then clipped or kept like any other time.

``null_end="original"`` reproduces LongVideoBench's ``insert_subtitles_into_frames`` exactly
instead: a Whisper-style end that is not a JSON float (``null``, or an integer such as ``5``)
becomes the clip duration *on the source axis* (``end = duration`` before the shift, which
puts the end before the start for any clip with a large offset), times are shifted, and no cue
is dropped or clipped (a cue reaching past the clip keeps its far midpoint, so it follows every
frame; a cue wholly outside is left out later by the coverage test, as officially).
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

__all__ = [
    "Cue",
    "SubtitleError",
    "parse_timestamp",
    "parse_json_cues",
    "parse_srt",
    "parse_vtt",
    "read_subtitles",
    "clip_cues",
    "load_clip_cues",
    "negative_cues",
]

SUFFIXES = (".json", ".srt", ".vtt")


class SubtitleError(ValueError):
    """A subtitle file that cannot be read; the message names the file and the cue."""


@dataclass(frozen=True)
class Cue:
    """One subtitle line. ``end`` is None only before :func:`clip_cues` resolves it."""

    start: float
    end: float | None
    text: str
    # True when a JSON end was written as an integer: the reference loader treats any end that
    # is not a float like ``null`` (``null_end="original"`` follows it); ignored otherwise.
    integral_end: bool = field(default=False, compare=False)

    @property
    def midpoint(self) -> float:
        assert self.end is not None, "resolve null ends with clip_cues first"
        return (self.start + self.end) / 2


_TS = re.compile(r"^(?:(\d+):)?(\d{1,2}):(\d{1,2}(?:[.,]\d+)?)$")


def parse_timestamp(value: str) -> float:
    """``HH:MM:SS.fff`` / ``MM:SS.fff`` (``,`` accepted as in SRT) -> seconds."""
    match = _TS.match(value.strip())
    if not match:
        raise ValueError(f"bad timestamp {value!r}")
    hours, minutes, seconds = match.groups()
    return int(hours or 0) * 3600 + int(minutes) * 60 + float(seconds.replace(",", "."))


def _seconds(value: object, what: str) -> float:
    """A JSON time: a finite number of seconds, or a timestamp string.

    A number may be negative: Whisper writes a first cue a little before 0 (``[-2.96, 26.05]``),
    and LongVideoBench's loader (``insert_subtitles_into_frames``, longvideobench_dataset.py
    @fc3c5532 lines 57-66) only subtracts the offset from it. :func:`clip_cues` then clips it
    to the clip (default) or keeps it as is (``null_end="original"``); :func:`negative_cues`
    finds such cues so that a build can report them."""
    if isinstance(value, bool):
        raise ValueError(f"bad {what} {value!r}")
    if isinstance(value, (int, float)):
        seconds = float(value)
    elif isinstance(value, str):
        seconds = parse_timestamp(value)
    else:
        raise ValueError(f"bad {what} {value!r}")
    if not math.isfinite(seconds):
        raise ValueError(f"bad {what} {value!r}")
    return seconds


def _check_order(start: float, end: float | None) -> None:
    if end is not None and end < start:
        raise ValueError(f"end {end} before start {start}")


def _json_cue(item: object) -> Cue:
    if not isinstance(item, dict):
        raise ValueError(f"expected an object, got {type(item).__name__}")
    integral_end = False
    if "timestamp" in item:
        span = item["timestamp"]
        if not isinstance(span, (list, tuple)) or len(span) != 2:
            raise ValueError(f"bad timestamp {span!r}")
        start = _seconds(span[0], "start")
        end = None if span[1] is None else _seconds(span[1], "end")
        integral_end = isinstance(span[1], int) and not isinstance(span[1], bool)
        text = item.get("text")
    elif "start" in item:
        start = _seconds(item["start"], "start")
        end = None if item.get("end") is None else _seconds(item["end"], "end")
        text = item.get("line", item.get("text"))
    else:
        raise ValueError(f"neither 'timestamp' nor 'start' in {sorted(item)}")
    if not isinstance(text, str):
        raise ValueError(f"bad text {text!r}")
    # No order check here: the reference loader reads any JSON span (an integer end becomes the
    # duration, a reversed float span is re-centred on its midpoint), so only clip_cues' default
    # mode, which knows how the end is resolved, refuses an end before its start.
    # the text as released: LVB's loader puts it in its input list unchanged (the prompt builder
    # strips it unless asked for the official text, mmlb_builders/lvb.py text_items)
    return Cue(start, end, text, integral_end)


def parse_json_cues(data: object, source: str = "<json>") -> list[Cue]:
    """Both release JSON shapes (a list of cue objects, or ``{"subtitles": [...]}``)."""
    if isinstance(data, dict) and isinstance(data.get("subtitles"), list):
        data = data["subtitles"]
    if not isinstance(data, list):
        raise SubtitleError(f"{source}: expected a list of cues, got {type(data).__name__}")
    cues = []
    for number, item in enumerate(data):
        try:
            cues.append(_json_cue(item))
        except ValueError as err:
            raise SubtitleError(f"{source}: cue {number}: {err}") from None
    return cues


_TAG = re.compile(r"<[^>]*>")
_ARROW = "-->"


def _cue_text(lines: Sequence[str]) -> str:
    """Join a cue's lines with spaces and drop markup tags (``<v Name>``, ``<i>``)."""
    text = " ".join(line.strip() for line in lines)
    text = _TAG.sub("", text)
    for entity, char in (("&lt;", "<"), ("&gt;", ">"), ("&nbsp;", " "), ("&amp;", "&")):
        text = text.replace(entity, char)
    return " ".join(text.split())


def _blocks(text: str) -> list[list[str]]:
    """Blank-line separated blocks of a caption file, BOM and CRLF removed."""
    lines = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n").split("\n")
    blocks, current = [], []
    for line in lines:
        if line.strip():
            current.append(line)
        elif current:
            blocks.append(current)
            current = []
    if current:
        blocks.append(current)
    return blocks


def _timed_block(block: list[str], source: str, number: int) -> Cue | None:
    """A block whose first or second line holds ``start --> end [settings]``."""
    timing = next((i for i, line in enumerate(block[:2]) if _ARROW in line), None)
    if timing is None:
        return None
    left, _, right = block[timing].partition(_ARROW)
    try:
        start = parse_timestamp(left)
        fields = right.split()
        if not fields:
            raise ValueError("missing end time")
        end = parse_timestamp(fields[0])
        _check_order(start, end)
    except ValueError as err:
        raise SubtitleError(f"{source}: cue {number}: {err}") from None
    return Cue(start, end, _cue_text(block[timing + 1:]))


def parse_vtt(text: str, source: str = "<vtt>") -> list[Cue]:
    """WebVTT: header, NOTE/STYLE/REGION blocks skipped, identifiers and settings allowed."""
    blocks = _blocks(text)
    if not blocks or not blocks[0][0].startswith("WEBVTT"):
        raise SubtitleError(f"{source}: not a WebVTT file (no WEBVTT header)")
    cues = []
    for block in blocks[1:]:
        if block[0].split(" ")[0] in ("NOTE", "STYLE", "REGION") and _ARROW not in block[0]:
            continue
        cue = _timed_block(block, source, len(cues))
        if cue is None:
            raise SubtitleError(f"{source}: cue {len(cues)}: no timing line in {block[0]!r}")
        cues.append(cue)
    return cues


def parse_srt(text: str, source: str = "<srt>") -> list[Cue]:
    """SubRip: ``index``, ``HH:MM:SS,mmm --> HH:MM:SS,mmm``, text lines."""
    cues = []
    for block in _blocks(text):
        cue = _timed_block(block, source, len(cues))
        if cue is None:
            raise SubtitleError(f"{source}: cue {len(cues)}: no timing line in {block[0]!r}")
        cues.append(cue)
    return cues


def read_subtitles(path: str | Path) -> list[Cue]:
    """Cues of a ``.json``, ``.srt`` or ``.vtt`` file, on the source video's time axis."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise SubtitleError(f"{path}: unknown subtitle format {suffix!r} (want {SUFFIXES})")
    try:
        raw = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise SubtitleError(f"{path}: subtitle file not found") from None
    except (OSError, UnicodeDecodeError) as err:
        raise SubtitleError(f"{path}: cannot read: {err}") from None
    if suffix == ".json":
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as err:
            raise SubtitleError(f"{path}: invalid JSON: {err}") from None
        return parse_json_cues(data, str(path))
    return parse_vtt(raw, str(path)) if suffix == ".vtt" else parse_srt(raw, str(path))


def negative_cues(cues: Iterable[Cue]) -> int:
    """How many cues start or end before 0 s on the axis they are given on."""
    return sum(1 for cue in cues if cue.start < 0 or (cue.end is not None and cue.end < 0))


def _resolve_null_ends(cues: Sequence[Cue], offset: float, duration: float,
                       null_end: str) -> list[Cue]:
    """Fill ``end=None`` (see module docstring); times stay on the source axis."""
    if null_end not in ("next", "original"):
        raise ValueError(f"null_end must be 'next' or 'original', not {null_end!r}")
    out = []
    for i, cue in enumerate(cues):
        if null_end == "original" and (cue.end is None or cue.integral_end):
            cue = Cue(cue.start, duration, cue.text)  # the reference loader's `end = duration`
        elif cue.end is None:
            if i + 1 < len(cues):
                end = max(cue.start, cues[i + 1].start)
            else:
                end = max(cue.start, offset + duration)
            cue = Cue(cue.start, end, cue.text)
        out.append(cue)
    return out


def clip_cues(cues: Iterable[Cue], offset: float, duration: float, *,
              null_end: str = "next", source: str = "<cues>") -> list[Cue]:
    """Cues on the clip axis: null ends resolved, shifted by ``-offset``, kept in [0, duration].

    A cue overlapping the clip only in part is clipped to it (its midpoint, which orders it
    among the frames, then lies inside the clip). With ``null_end="original"`` cues are only
    shifted, never dropped or clipped, as the reference loader does (module docstring), a span
    whose end comes before its start included; the default refuses such a cue (``source`` names
    the file in that error).
    """
    resolved = _resolve_null_ends(list(cues), offset, duration, null_end)
    if null_end == "original":
        return [Cue(cue.start - offset, cue.end - offset, cue.text) for cue in resolved]
    for number, cue in enumerate(resolved):
        try:
            _check_order(cue.start, cue.end)
        except ValueError as err:
            raise SubtitleError(f"{source}: cue {number}: {err}") from None
    out = []
    for cue in resolved:
        start, end = cue.start - offset, cue.end - offset
        if end < 0 or start > duration:
            continue
        out.append(Cue(max(start, 0.0), min(end, duration), cue.text))
    return out


def load_clip_cues(path: str | Path, offset: float, duration: float, **options) -> list[Cue]:
    """:func:`read_subtitles` then :func:`clip_cues`."""
    return clip_cues(read_subtitles(path), offset, duration, source=str(path), **options)
