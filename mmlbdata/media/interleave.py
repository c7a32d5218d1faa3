"""LongVideoBench's rule for interleaving sampled frames with subtitle lines (pure function).

Walk the cues in file order. Before each cue, emit every not-yet-emitted frame whose timestamp
is <= the cue's midpoint. Then emit the cue's text only if some sampled frame (any, emitted or
not) lies *strictly* inside the cue, where a cue shorter than 1 s is first widened to
[midpoint - 0.5, midpoint + 0.5]: a line nobody could see next to a frame is left out. The
frames left after the last cue close the list.

Frames are represented by their position in ``frame_timestamps`` so the caller decides what a
frame is (an ``<image>`` placeholder, an ImageRef, a PIL image).
"""
from __future__ import annotations

from bisect import bisect_right
from typing import Sequence, Union

from mmlbdata.media.subtitles import Cue

Item = Union[int, str]  # int: index into the sampled frames; str: a subtitle line

__all__ = ["Item", "interleave", "covered"]


def covered(cue: Cue, frame_timestamps: Sequence[float]) -> bool:
    """True if a frame lies strictly inside the cue (widened to 1 s when shorter).

    ``frame_timestamps`` is sorted, so one bisection answers it.
    """
    start, end = cue.start, cue.end
    if end - start < 1:
        mid = cue.midpoint
        start, end = mid - 0.5, mid + 0.5
    i = bisect_right(frame_timestamps, start)  # first frame strictly after start
    return i < len(frame_timestamps) and frame_timestamps[i] < end


def interleave(frame_timestamps: Sequence[float], cues: Sequence[Cue]) -> list[Item]:
    """Frames (as indices) and subtitle texts in LongVideoBench order.

    ``frame_timestamps`` must be non-decreasing (sampled frames in time order); ``cues`` are
    on the clip axis with resolved ends (see :func:`mmlbdata.media.subtitles.clip_cues`).
    """
    if any(b < a for a, b in zip(frame_timestamps, frame_timestamps[1:])):
        raise ValueError("frame timestamps must be non-decreasing")
    items: list[Item] = []
    next_frame = 0
    for cue in cues:
        mid = cue.midpoint
        while next_frame < len(frame_timestamps) and frame_timestamps[next_frame] <= mid:
            items.append(next_frame)
            next_frame += 1
        if covered(cue, frame_timestamps):
            items.append(cue.text)
    items.extend(range(next_frame, len(frame_timestamps)))
    return items
