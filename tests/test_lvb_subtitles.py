"""Subtitle readers (release JSON shapes, SRT, real WebVTT files) and the clip-axis rules."""
from __future__ import annotations

import json

import pytest

from mmlbdata.media.subtitles import (Cue, SubtitleError, clip_cues, negative_cues, parse_json_cues,
                                      parse_timestamp, read_subtitles)


def test_timestamps():
    assert parse_timestamp("00:00:01.500") == 1.5
    assert parse_timestamp("01:02:03,250") == 3723.25
    assert parse_timestamp("02:03.5") == 123.5
    assert parse_timestamp("10:00:00") == 36000
    for bad in ("1.5", "00:01:4x.500", "", "00:00:01.5.5"):
        with pytest.raises(ValueError):
            parse_timestamp(bad)


def test_real_friday_vtt(real_data):
    cues = read_subtitles(real_data / "video" / "friday.vtt")
    assert [(c.start, c.end) for c in cues] == [(0.0, 0.999), (1.0, 1.499), (1.5, 2.999),
                                                (3.0, 4.299), (4.3, 6.0)]
    assert cues[2].text == "Tell me, is the lord of the universe in?"  # settings "line:80%" dropped


def test_real_sintel_vtt_ids_notes_tags_multiline(real_data):
    cues = read_subtitles(real_data / "video" / "sintel-en.vtt")
    assert len(cues) == 14  # cue "0" ([Test]) plus the 13 trailer lines
    assert cues[-1] == Cue(118.25, 119.5, "We're almost done. Shhh...")
    assert cues[0] == Cue(0.0, 12.0, "[Test]")  # <v Test> voice tag removed, NOTE block skipped
    assert cues[1] == Cue(18.7, 21.5, "This blade has a dark past.")
    assert cues[3].text == "You're a fool for traveling alone, so completely unprepared."


def test_real_paulallen_vtt(real_data):
    cues = read_subtitles(real_data / "video" / "paulallen_en.vtt")  # header "WEBVTT " + space
    assert cues[0] == Cue(8.0, 12.0, "I put in 15 hours of work today")
    assert all(a.end <= b.start for a, b in zip(cues, cues[1:]))


def test_srt_with_bom_and_crlf(tmp_path):
    path = tmp_path / "a.srt"
    path.write_bytes("\ufeff1\r\n00:00:01,000 --> 00:00:02,500\r\n<i>Hello</i>\r\nthere\r\n\r\n"
                     "2\r\n00:00:03,000 --> 00:00:04,000\r\nA &amp; B\r\n".encode("utf-8"))
    assert read_subtitles(path) == [Cue(1.0, 2.5, "Hello there"), Cue(3.0, 4.0, "A & B")]


def test_json_shapes():
    whisper = [{"timestamp": [1.0, 2.5], "text": " Hi"}, {"timestamp": [3, None], "text": "Bye"}]
    # the text as released (LVB's loader lists it unchanged); the prompt builder strips by default
    assert parse_json_cues(whisper) == [Cue(1.0, 2.5, " Hi"), Cue(3.0, None, "Bye")]
    lines = [{"start": "00:00:01.000", "end": "00:00:02.500", "line": "Hi"}]
    assert parse_json_cues(lines) == [Cue(1.0, 2.5, "Hi")]


@pytest.mark.parametrize("data, message", [
    ([{"timestamp": [1.0], "text": "x"}], "cue 0: bad timestamp"),
    ([{"start": "00:00:01.000", "end": "00:00:0x.0", "line": "x"}], "cue 0: bad timestamp"),
    ([{"timestamp": [float("nan"), 2], "text": "a"}], "cue 0: bad start"),
    ([{"timestamp": [float("-inf"), 2], "text": "a"}], "cue 0: bad start"),
    ([{"start": "-00:00:01.000", "end": "00:00:02.000", "line": "a"}], "cue 0: bad timestamp"),
    ([{"timestamp": [1, 2]}], "cue 0: bad text"),
    ([{"begin": 1}], "neither 'timestamp' nor 'start'"),
    ({"a": 1}, "expected a list"),
])
def test_json_errors_name_file_and_cue(data, message):
    with pytest.raises(SubtitleError) as err:
        parse_json_cues(data, "subs/x_en.json")
    assert str(err.value).startswith("subs/x_en.json") and message in str(err.value)


def test_negative_json_times_are_read_as_written_and_counted():
    # LongVideoBench @fc3c5532 longvideobench_dataset.py lines 57-63: `start, end = subtitle["timestamp"]`,
    # then only `-= starting_timestamp_for_subtitles`: a Whisper cue before 0 s is no error there
    cues = parse_json_cues([{"timestamp": [-2.96, 26.05], "text": "a"}, {"timestamp": [-1.5, -1.0], "text": "b"},
                            {"timestamp": [-4, None], "text": "c"}, {"timestamp": [31.0, 32.0], "text": "d"}])
    assert [(c.start, c.end) for c in cues] == [(-2.96, 26.05), (-1.5, -1.0), (-4.0, None), (31.0, 32.0)]
    assert negative_cues(cues) == 3
    assert negative_cues(clip_cues(cues[:1], offset=0, duration=243.4)) == 0  # clipped to [0, 26.05]
    reversed_span = parse_json_cues([{"timestamp": [-2, -3], "text": "a"}])  # read; refused when clipped
    with pytest.raises(SubtitleError, match="s.json: cue 0: end -3.0 before start -2.0"):
        clip_cues(reversed_span, offset=0, duration=10, source="s.json")


def test_reversed_json_spans_follow_the_reference_loader_under_original():
    # LongVideoBench @fc3c5532 longvideobench_dataset.py line 58: `if not isinstance(end, float):
    # end = duration`, so an integer end before its start is replaced, never an error; line 64
    # shifts both; lines 77-79 re-centre any span shorter than 1 s (a reversed one included) on
    # its midpoint before looking for a covering frame.
    from mmlbdata.media.interleave import interleave
    cues = parse_json_cues([{"timestamp": [30.0, 20], "text": "int end"},
                            {"timestamp": [50.0, 40.0], "text": "float end"}])
    kept = clip_cues(cues, offset=5.0, duration=100.0, null_end="original")
    # int end -> duration 100.0, then both shifted by the offset: (25, 95); float span kept reversed
    assert [(c.start, c.end) for c in kept] == [(25.0, 95.0), (45.0, 35.0)]
    # frames at 40 (midpoint of the reversed span 45..35 is 40: re-centred to 39.5..40.5, covered)
    assert interleave([40.0, 90.0], kept) == [0, "int end", "float end", 1]
    with pytest.raises(SubtitleError, match="cue 0: end 20.0 before start 30.0"):
        clip_cues(cues, offset=5.0, duration=100.0)  # the default reads the integer end as a time
    two = parse_json_cues([{"timestamp": [1, 2], "text": "a"}, {"timestamp": [5, 4], "text": "b"}])
    with pytest.raises(SubtitleError, match="subs/x_en.json: cue 1: end 4.0 before start 5.0"):
        clip_cues(two, offset=0, duration=10, source="subs/x_en.json")


def test_file_errors(tmp_path):
    with pytest.raises(SubtitleError, match="not found"):
        read_subtitles(tmp_path / "none.json")
    (tmp_path / "bad.json").write_text("[{")
    with pytest.raises(SubtitleError, match="bad.json: invalid JSON"):
        read_subtitles(tmp_path / "bad.json")
    (tmp_path / "x.vtt").write_text("00:00:01.000 --> 00:00:02.000\nno header\n")
    with pytest.raises(SubtitleError, match="no WEBVTT header"):
        read_subtitles(tmp_path / "x.vtt")
    (tmp_path / "y.srt").write_text("1\n00:00:05,000 --> 00:00:02,000\nbackwards\n")
    with pytest.raises(SubtitleError, match=r"y.srt: cue 0: end 2.0 before start 5.0"):
        read_subtitles(tmp_path / "y.srt")
    (tmp_path / "z.txt").write_text("")
    with pytest.raises(SubtitleError, match="unknown subtitle format"):
        read_subtitles(tmp_path / "z.txt")


def test_clip_shift_drop_clip_and_null_ends():
    cues = [Cue(95, 96, "before"), Cue(99.5, 100.5, "edge"), Cue(101, None, "open"),
            Cue(103, 104, "inside"), Cue(105, None, "last"), Cue(120, 121, "after")]
    got = clip_cues(cues, offset=100, duration=8)
    assert got == [Cue(0.0, 0.5, "edge"), Cue(1, 3, "open"),  # null end -> next cue's start
                   Cue(3, 4, "inside"), Cue(5, 8, "last")]  # last null end -> clip end
    original = clip_cues(cues, offset=100, duration=8, null_end="original")
    # the reference loader: end = duration (8) on the source axis, i.e. -92 on the clip axis;
    # every cue kept and only shifted (insert_subtitles_into_frames drops and clips nothing)
    assert original == [Cue(-5, -4, "before"), Cue(-0.5, 0.5, "edge"), Cue(1, -92, "open"),
                        Cue(3, 4, "inside"), Cue(5, -92, "last"), Cue(20, 21, "after")]
    with pytest.raises(ValueError):
        clip_cues(cues, 0, 1, null_end="bogus")


def test_json_file_round_trip(tmp_path):
    path = tmp_path / "v_en.json"
    path.write_text(json.dumps([{"timestamp": [10.0, None], "text": "only"}]))
    assert clip_cues(read_subtitles(path), offset=9.0, duration=4.0) == [Cue(1.0, 4.0, "only")]
