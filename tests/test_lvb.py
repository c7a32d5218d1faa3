"""LongVideoBench builder on real media: acceptance 1-3 of issue 5.

The fixture release follows the LongVideoBench layout exactly (annotation rows with every
release field, ``videos/``, ``subtitles/``) and points at the real MDN clip ``friday.mp4`` and
its real ``friday.vtt`` cues, moved onto a "source video" axis 100 s later
(``starting_timestamp_for_subtitles = 100``), with a null end and cues outside the clip.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

av = pytest.importorskip("av")
import sentencepiece as spm  # noqa: E402

from mmlb_builders.lvb import INSTRUCTION, LongVideoBench  # noqa: E402
from mmlbdata.dataset.build import build_configs  # noqa: E402
from mmlbdata.core.lengths import LENGTHS  # noqa: E402
from mmlbdata.media.subtitles import parse_vtt  # noqa: E402
from mmlbdata.core.report import BuildReport  # noqa: E402
from mmlbdata.core.store import ImageStore  # noqa: E402

OFFSET = 100.0
FRIDAY_DURATION = 6.166  # the clip's container duration


def independent_image_tokens(w: int, h: int) -> int:
    """Qwen2.5-VL's rule written out again (no library code), sizes within the normal bounds."""
    return round(h / 28) * round(w / 28)


def _row(i: int, video: str, subtitle: str, duration: float, **extra) -> dict:
    row = {
        "video_id": Path(video).stem, "question": f"Question {i}: what does the man say first?",
        "question_wo_referring_query": "What does the man say first?",
        "candidates": ["Hildy!\n", "Hello\n", "Goodbye\n", "Nothing\n"], "correct_choice": 0,
        "position": [120, 30], "topic_category": "NP-News-Programs", "question_category": "S2E",
        "level": "L1-Perception", "id": f"{Path(video).stem}_{i}", "video_path": video,
        "subtitle_path": subtitle, "duration_group": 15,
        "starting_timestamp_for_subtitles": OFFSET, "duration": duration, "view_count": 1234,
    }
    row.update(extra)
    return row


def friday_cues_on_source_axis(real_data: Path) -> list:
    return [(c.start + OFFSET, c.end + OFFSET, c.text)
            for c in parse_vtt((real_data / "video" / "friday.vtt").read_text())]


def write_release(root: Path, real_data: Path) -> Path:
    """A release folder: friday.mp4 + subtitles in both JSON shapes and as shifted VTT."""
    (root / "videos").mkdir(parents=True)
    (root / "subtitles").mkdir()
    shutil.copy(real_data / "video" / "friday.mp4", root / "videos" / "friday.mp4")
    cues = friday_cues_on_source_axis(real_data)
    decoys_before = [(95.0, 96.0, "before the clip"), (99.5, 100.2, "edge of the clip")]
    decoy_after = [(110.0, 111.0, "after the clip")]
    timed = decoys_before + cues[:-1] + [(cues[-1][0], None, cues[-1][2])] + decoy_after
    (root / "subtitles" / "friday_en.json").write_text(json.dumps(
        [{"timestamp": [s, e], "text": t} for s, e, t in timed]))

    def stamp(x):
        return f"{int(x // 3600):02d}:{int(x % 3600 // 60):02d}:{x % 60:06.3f}"

    (root / "subtitles" / "friday_lines.json").write_text(json.dumps(
        [{"start": stamp(s), "end": stamp(e), "line": t} for s, e, t in decoys_before + cues]))
    vtt = ["WEBVTT", ""] + [f"{stamp(s)} --> {stamp(e)} line:80%\n{t}\n" for s, e, t in cues]
    (root / "subtitles" / "friday.vtt").write_text("\n".join(vtt))
    rows = [_row(0, "friday.mp4", "friday_en.json", FRIDAY_DURATION),
            _row(1, "friday.mp4", "friday_lines.json", FRIDAY_DURATION, correct_choice=2),
            _row(2, "friday.mp4", "friday.vtt", FRIDAY_DURATION)]
    (root / "lvb_val.json").write_text(json.dumps(rows))
    test_rows = [{k: v for k, v in r.items() if k != "correct_choice"} for r in rows[:1]]
    (root / "lvb_test_wo_gt.json").write_text(json.dumps(test_rows))
    return root


@pytest.fixture(scope="module")
def release(real_data, tmp_path_factory) -> Path:
    return write_release(tmp_path_factory.mktemp("lvb") / "LongVideoBench", real_data)


def build(config, release, tmp_path, counter, **options):
    report = BuildReport()
    builder = LongVideoBench(config, sources={"lvb": release}, store=ImageStore(tmp_path / "store"),
                             counter=counter, report=report, options=options)
    return list(builder.generate()), report


# -- acceptance 1: interleaving, frame count, token count -----------------------------------------

EXPECTED = [0, "edge of the clip", "Hildy!", 1, "How are you?", 2,
            "Tell me, is the lord of the universe in?", 3, "Yes, he's in - in a bad humor", 4, 5,
            "Somebody must've stolen the crown jewels"]
# Why, from the rule, with frames at 0..5 s (T = int(6.166 * 30) = 184, n = 6, step 30):
# "edge" (source 99.5-100.2) is clipped to [0, 0.2], midpoint 0.1: frame 0 goes first; the last
# cue's null end becomes the clip end 6.166 (midpoint 5.233), so frames 4 and 5 precede it; the
# cues before 100 s and after 106.166 s are dropped.


def _expected_prompt(question, items, candidates):
    lines = ["<image>" if isinstance(i, int) else i for i in items]
    return "\n".join(lines + [f"Question: {question}"]
                     + [f"{l}. {c.strip()}" for l, c in zip("ABCD", candidates)] + [INSTRUCTION])


def test_interleaving_frames_and_tokens(release, tmp_path, counter, tokenizer_path):
    examples, report = build("lvb_val_64f", release, tmp_path, counter)
    assert report.num_skipped == 0
    ex = examples[0]
    meta = json.loads(ex["meta"])
    assert meta["frame_indices"] == [0, 30, 60, 90, 120, 150]
    assert meta["frame_timestamps"] == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert meta["num_frames"] == len(ex["images"]) == 6
    row = json.loads((release / "lvb_val.json").read_text())[0]
    assert ex["prompt"] == _expected_prompt(row["question"], EXPECTED, row["candidates"])
    assert ex["answers"] == ["A"] and ex["metric"] == "lvb_mc" and ex["length"] == 0
    assert (meta["duration_group"], meta["question_category"], meta["level"]) == (15, "S2E", "L1-Perception")
    assert meta["position"] == [120, 30]
    assert all((ref.width, ref.height) == (640, 480) for ref in ex["images"])
    sp = spm.SentencePieceProcessor(model_file=str(tokenizer_path))
    text = len(sp.encode(ex["prompt"].replace("<image>", ""))) + 1
    assert ex["num_tokens"] == text + 6 * independent_image_tokens(640, 480)


def test_text_items_official_keeps_the_loaders_list_entries(release, tmp_path, counter):
    """longvideobench_dataset.py __getitem__: the interleaved list, then "Question: " + question,
    ". ".join([chr(ord("A") + i), candidate]) per option (candidates unstripped: "Hildy!\\n"), then
    "Answer with the option's letter from the given choices directly." (one entry a line here)."""
    examples, _ = build("lvb_val_64f", release, tmp_path, counter, text_items="official")
    row = json.loads((release / "lvb_val.json").read_text())[0]
    lines = ["<image>" if isinstance(i, int) else i for i in EXPECTED]
    assert examples[0]["prompt"] == "\n".join(
        lines + ["Question: " + row["question"]]
        + [". ".join([chr(ord("A") + i), c]) for i, c in enumerate(row["candidates"])]
        + ["Answer with the option's letter from the given choices directly."])
    assert "A. Hildy!\n\nB. Hello\n\n" in examples[0]["prompt"]
    assert json.loads(examples[0]["meta"])["text_items"] == "official"
    with pytest.raises(ValueError, match="text_items"):
        build("lvb_val_64f", release, tmp_path, counter, text_items="raw")


def test_both_json_shapes_and_vtt_agree(release, tmp_path, counter):
    examples, _ = build("lvb_val_64f", release, tmp_path, counter)
    body = [ex["prompt"].split("\nQuestion:")[0] for ex in examples]
    assert body[1] == body[0]  # "start/end/line" shape with a real end == null end resolved
    assert body[2] == body[0].replace("<image>\nedge of the clip\n", "<image>\n")  # no decoys
    assert examples[1]["answers"] == ["C"]


def test_frames_are_the_sampled_video_frames(release, tmp_path, counter):
    """Stored frame i looks like the i-th sampled frame of a plain sequential decode."""
    import numpy as np
    from PIL import Image

    examples, _ = build("lvb_val_64f_frames", release, tmp_path, counter)
    with av.open(str(release / "videos" / "friday.mp4")) as c:
        decoded = [f.to_ndarray(format="rgb24") for f in c.decode(video=0)]
    for k, ref in enumerate(examples[0]["images"]):
        stored = np.asarray(Image.open(ref.path).convert("RGB"), dtype=float)
        errors = [np.abs(stored - decoded[j]).mean() for j in (30 * k, 30 * k + 15)]
        assert errors[0] < 2 < errors[1], (k, errors)
    assert examples[0]["prompt"].startswith("<image>\n" * 6 + "Question:")


def test_original_null_end_reading_behind_option(release, tmp_path, counter):
    """The reference loader's null end (clip duration on the source axis) drops the last line."""
    examples, _ = build("lvb_val_64f", release, tmp_path, counter, null_end="original")
    body = examples[0]["prompt"].split("\nQuestion:")[0].split("\n")
    assert body[-2:] == ["<image>", "<image>"] and "Somebody" not in examples[0]["prompt"]


def test_subtitles_only_and_test_split(release, tmp_path, counter):
    subs, _ = build("lvb_val_subs", release, tmp_path, counter)
    assert subs[0]["images"] == [] and subs[0]["prompt"].startswith("edge of the clip\nHildy!\n")
    full, _ = build("lvb_val_subs", release, tmp_path, counter, subtitles_full_track=True)
    assert full[0]["prompt"].startswith("before the clip\nedge of the clip\n")
    assert "after the clip" in full[0]["prompt"]
    test, _ = build("lvb_test_256f", release, tmp_path, counter)
    assert len(test) == 1 and test[0]["answers"] == [] and test[0]["dataset"] == "lvb_test"


def test_cue_before_zero_is_built_and_reported(release, tmp_path, counter):
    """A Whisper cue at [-0.8, 0.4] s (offset 0), frames at 0..5 s. LongVideoBench @fc3c5532
    longvideobench_dataset.py lines 57-66 only shift it: midpoint -0.2 precedes frame 0, which lies
    inside the 1.2 s cue, so the line comes first; the default clips it to [0, 0.4] (midpoint 0.2)."""
    root = tmp_path / "early"
    shutil.copytree(release, root)
    (root / "subtitles" / "early.json").write_text(json.dumps([{"timestamp": [-0.8, 0.4], "text": "early line"}]))
    (root / "lvb_val.json").write_text(json.dumps(
        [_row(0, "friday.mp4", "early.json", FRIDAY_DURATION, starting_timestamp_for_subtitles=0.0)]))
    for null_end, head, how in (("original", "early line\n<image>\n", "kept as LongVideoBench's loader keeps them"),
                                ("next", "<image>\nearly line\n<image>\n", "clipped to the clip's start")):
        examples, report = build("lvb_val_64f", root, tmp_path, counter, null_end=null_end)
        assert len(examples) == 1 and report.num_skipped == 0
        assert examples[0]["prompt"].startswith(head), null_end
        assert [n for n in report.notes if "before 0 s" in n] == [
            "lvb_val_64f: 1 row(s) read 1 subtitle cue(s) starting or ending before 0 s in their subtitle "
            f"file; {how}"]


def test_standardized_length_on_friday(release, tmp_path, counter):
    examples, _ = build("lvb_val_8k", release, tmp_path, counter)
    ex = examples[0]
    meta = json.loads(ex["meta"])
    assert ex["num_tokens"] <= 8192 < meta["next_num_tokens"]
    assert meta["num_frames"] == len(ex["images"]) > 6  # beyond 1 fps to fill the budget
    assert ex["num_tokens"] == counter.example(ex["prompt"], ex["images"])
    assert meta["frame_size"] == [640, 480]


def test_short_clip_gets_larger_frames_at_128k(release, tmp_path, counter):
    """All 184 frames at 640x480 give ~72k tokens: the size ladder moves to 1024x768."""
    examples, report = build("lvb_val_128k", release, tmp_path, counter)
    assert report.num_skipped == 0 and len(examples) == 3
    meta = json.loads(examples[0]["meta"])
    assert meta["frame_size"] == [1024, 768]
    assert {(r.width, r.height) for r in examples[0]["images"]} == {(1024, 768)}
    assert examples[0]["num_tokens"] <= 131072 < meta["next_num_tokens"]
    _, report = build("lvb_val_128k", release, tmp_path, counter, frame_size_ladder=[])
    assert report.num_skipped == 3 and "fill only" in report.skipped[0].reason


# -- acceptance 2: the 70 s Tears of Steel clip at every standard length ---------------------------

@pytest.fixture(scope="module")
def tears_release(real_data, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("lvb_tears") / "LongVideoBench"
    (root / "videos").mkdir(parents=True)
    (root / "subtitles").mkdir()
    shutil.copy(real_data / "video" / "tears-of-steel-battle-clip-medium.webm", root / "videos" / "tos.webm")
    shutil.copy(real_data / "video" / "sintel-en.vtt", root / "subtitles" / "tos.vtt")
    row = _row(0, "tos.webm", "tos.vtt", 70.5, duration_group=60, starting_timestamp_for_subtitles=15.0)
    (root / "lvb_val.json").write_text(json.dumps([row]))
    return root


@pytest.mark.slow
def test_tears_of_steel_all_lengths(tears_release, tmp_path, tokenizer_path):
    import datasets

    names = [f"lvb_val_{k}" for k in LENGTHS]
    results = build_configs(names, {"lvb": tears_release}, tmp_path / "out", store_root=tmp_path / "store",
                            tokenizer=tokenizer_path, progress=False)
    assert all(r.ok for r in results), [r.error for r in results]
    frames = []
    for name, length in zip(names, LENGTHS.values()):
        ds = datasets.load_dataset(str(tmp_path / "out"), name, split="test").remove_columns("images")
        assert len(ds) == 1
        meta = json.loads(ds[0]["meta"])
        assert ds[0]["num_tokens"] <= length < meta["next_num_tokens"], name
        assert ds[0]["prompt"].count("<image>") == meta["num_frames"]
        assert meta["frame_size"] == [768, 319]  # 800x332 scaled to the 768 default
        frames.append(meta["num_frames"])
    assert frames == sorted(frames) and frames[-1] > 70  # past 1 fps at 128k


# -- acceptance 3: bad input is reported and skipped, the rest is built ------------------------------

def test_bad_input_skipped_and_reported(release, tmp_path, counter):
    root = tmp_path / "bad"
    shutil.copytree(release, root)
    (root / "videos" / "corrupt.mp4").write_bytes(b"\x00\x00\x00\x18ftypmp42" + b"garbage" * 500)
    data = (root / "videos" / "friday.mp4").read_bytes()
    (root / "videos" / "truncated.mp4").write_bytes(data[: len(data) // 3])
    (root / "subtitles" / "bad_time.json").write_text(json.dumps(
        [{"start": "00:01:40.000", "end": "00:01:4x.500", "line": "broken"}]))
    (root / "subtitles" / "reversed.json").write_text(json.dumps([{"timestamp": [105.0, 101.0], "text": "x"}]))
    rows = json.loads((root / "lvb_val.json").read_text())[:1] + [
        _row(10, "corrupt.mp4", "friday_en.json", FRIDAY_DURATION),
        _row(11, "friday.mp4", "missing_en.json", FRIDAY_DURATION),
        _row(12, "friday.mp4", "bad_time.json", FRIDAY_DURATION),
        _row(13, "friday.mp4", "reversed.json", FRIDAY_DURATION),
        _row(14, "truncated.mp4", "friday_en.json", FRIDAY_DURATION),
        _row(15, "friday.mp4", "friday_en.json", "six seconds"),
        {"video_id": "friday", "id": "friday_16"},
    ]
    (root / "lvb_val.json").write_text(json.dumps(rows))
    examples, report = build("lvb_val_64f", root, tmp_path, counter)
    assert [ex["id"] for ex in examples] == ["friday_0"]
    reasons = {s.record: s.reason for s in report.skipped}
    assert set(reasons) == {"corrupt_10", "friday_11", "friday_12", "friday_13", "truncated_14",
                            "friday_15", "friday_16"}
    assert "corrupt.mp4" in reasons["corrupt_10"] and "cannot open video" in reasons["corrupt_10"]
    assert "missing_en.json" in reasons["friday_11"] and "not found" in reasons["friday_11"]
    assert "bad_time.json: cue 0" in reasons["friday_12"] and "00:01:4x.500" in reasons["friday_12"]
    assert "end 101.0 before start 105.0" in reasons["friday_13"]
    assert "truncated.mp4" in reasons["truncated_14"]
    assert "'duration' must be a finite number" in reasons["friday_15"]
    assert "friday_16" in reasons
    assert all(s.file.endswith("lvb_val.json") for s in report.skipped)


# -- the release reader ------------------------------------------------------------------------------

def test_reader_types_and_validation(release):
    from mmlbdata.sources.lvb import LVBRecordError, parse_row, read_annotations

    (row, *_) = read_annotations(release, "val")
    assert row.candidates[0] == "Hildy!\n" and row.correct_choice == 0 and row.answer_letter == "A"
    assert row.position == (120, 30) and row.starting_timestamp_for_subtitles == 100.0
    (test_row,) = read_annotations(release, "test")
    assert test_row.correct_choice is None and test_row.answer_letter is None
    good = json.loads((release / "lvb_val.json").read_text())[0]
    for change, message in [({"correct_choice": 4}, "out of range"),
                            ({"video_path": "../../etc/passwd"}, "relative path inside"),
                            ({"candidates": ["a"] * 6}, "2-5 strings"),
                            ({"starting_timestamp_for_subtitles": -1}, ">= 0"),
                            ({"duration_group": "15"}, "integer")]:
        with pytest.raises(LVBRecordError, match=message):
            parse_row({**good, **change}, require_answer=True)
    with pytest.raises(LVBRecordError, match="missing 'correct_choice'"):
        parse_row({k: v for k, v in good.items() if k != "correct_choice"}, require_answer=True)
