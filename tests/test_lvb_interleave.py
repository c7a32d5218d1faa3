"""The interleaving rule of LongVideoBench, by hand-worked cases."""
from __future__ import annotations

import pytest

from mmlbdata.media.interleave import covered, interleave
from mmlbdata.media.subtitles import Cue


def test_frames_before_midpoint_then_line():
    # cue [1.5, 3.5], midpoint 2.5: frames at 0, 1, 2 precede it; 3 is inside it
    assert interleave([0, 1, 2, 3, 4], [Cue(1.5, 3.5, "a")]) == [0, 1, 2, "a", 3, 4]


def test_frame_at_midpoint_goes_first():
    assert interleave([0, 2, 4], [Cue(1, 3, "a")]) == [0, 1, "a", 2]


def test_line_without_covering_frame_dropped():
    # frames at 0 and 4; cue [1.5, 3] covers none (strictly) -> dropped, frame order kept
    assert interleave([0, 4], [Cue(1.5, 3, "gone")]) == [0, 1]


def test_strict_bounds():
    assert not covered(Cue(2, 4, "x"), [2.0, 4.0])  # on the bounds does not count
    assert covered(Cue(2, 4, "x"), [2.0, 3.999])


def test_short_cue_widened_to_one_second():
    # cue [2.9, 3.1] (0.2 s) widened to [2.5, 3.5]: the frame at 2.6 now covers it
    assert interleave([0, 2.6], [Cue(2.9, 3.1, "short")]) == [0, 1, "short"]
    assert interleave([0, 2.4], [Cue(2.9, 3.1, "short")]) == [0, 1]


def test_covering_frame_may_come_after_the_line():
    # "b" [3, 4], midpoint 3.5: the frame at 3.0 sits on its bound (not inside); the frame at
    # 3.6 covers it but is emitted after it: any sampled frame counts, not only emitted ones.
    assert interleave([0, 3.0, 3.6], [Cue(2.5, 4.0, "a"), Cue(3.0, 4.0, "b")]) == [0, 1, "a", "b", 2]


def test_remaining_frames_close_and_no_cues():
    assert interleave([0, 1, 2], []) == [0, 1, 2]
    assert interleave([], [Cue(0, 1, "x")]) == []


def test_unsorted_frames_rejected():
    with pytest.raises(ValueError):
        interleave([1, 0], [])
