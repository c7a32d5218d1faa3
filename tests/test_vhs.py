"""Visual Haystacks release files as a `vh_*` source: needles and questions kept, neg_image in order."""
from __future__ import annotations

import json

import pytest

from mmlb_builders.vh import VisualHaystack, build_prompt
from mmlbdata.core.report import BuildReport
from mmlbdata.sources.vhs import read_vhs, release_files, resolve_image
from mmlbdata.core.store import ImageStore


@pytest.fixture()
def release(tmp_path, coco_mini):
    """A VHs-format folder: visual_haystack_{N}.json with real COCO paths (some with a `coco/` prefix)."""
    files = [f"{p.parent.name}/{p.name}" for p in sorted((coco_mini / "val2017").glob("*.jpg"))] + \
            [f"coco/{p.parent.name}/{p.name}" for p in sorted((coco_mini / "train2017").glob("*.jpg"))]
    entries = [
        {"conversations": [{"from": "human", "value": "<image>\nFor the image with a dog, is there a frisbee?"},
                           {"from": "gpt", "value": "Yes"}],
         "pos_image": [files[0]], "neg_image": files[1:6] + ["val2017/000000999999.jpg"] + files[6:140]},
        {"conversations": [{"from": "human", "value": "For all images with a person, do any of them contain a bus?"},
                           {"from": "gpt", "value": "No"}],
         "pos_image": files[140:142], "neg_image": files[:140]},
        {"conversations": [{"from": "human", "value": "no answer turn"}], "pos_image": [files[3]], "neg_image": []},
        {"conversations": [{"from": "human", "value": "For the image with a cat, is there a bed?"},
                           {"from": "gpt", "value": "No"}],
         "pos_image": [files[5]], "neg_image": files[6:9]},
    ]
    root = tmp_path / "VHs_qa" / "single_needle" / "VHs_large"
    root.mkdir(parents=True)
    (root / "visual_haystack_150.json").write_text(json.dumps(entries))
    (root / "visual_haystack_10.json").write_text(json.dumps(entries[:1]))
    return tmp_path, entries


def test_reader(release, coco_mini, tmp_path):
    root, entries = release
    files = release_files(root)
    assert list(files) == [10, 150]
    report = BuildReport()
    questions = list(read_vhs(files[150], coco_mini, ImageStore(tmp_path / "s"), report))
    assert [q.mode for q in questions] == ["single", "multi", "single"]
    assert questions[0].question == "For the image with a dog, is there a frisbee?"
    assert questions[0].answer == "Yes" and len(questions[0].distractors) == 140
    assert resolve_image(coco_mini, "coco/train2017/000000000790.jpg") == coco_mini / "train2017" / "000000000790.jpg"
    assert report.skipped[0].record == "entry 2" and "missing field" in report.skipped[0].reason


def build(name, root, coco_mini, counter, tmp_path, report):
    builder = VisualHaystack(name, sources={"coco": coco_mini, "vhs": root}, store=ImageStore(tmp_path / "s"),
                             counter=counter, report=report)
    return list(builder.generate())


def test_single_from_release(release, coco_mini, counter, tmp_path):
    root, entries = release
    report = BuildReport()
    rows = build("vh_single_8k", root, coco_mini, counter, tmp_path, report)
    assert len(rows) == 6, report.summary()  # the first question at 6 depths; the last one is too short
    neg = [resolve_image(coco_mini, p) for p in entries[0]["neg_image"]]
    neg = [str(p) for p in neg if p.exists()]
    for row in rows:
        meta = json.loads(row["meta"])
        paths = [ref.path for ref in row["images"]]
        (needle_at,) = meta["needle_indices"]
        assert paths[needle_at].endswith(entries[0]["pos_image"][0])
        distractors = paths[:needle_at] + paths[needle_at + 1:]
        assert distractors == neg[:len(distractors)]  # neg_image in release order, missing one left out
        assert row["prompt"] == build_prompt(len(paths), "For the image with a dog, is there a frisbee?")
        assert row["answers"] == ["Yes"]
        assert row["num_tokens"] == counter.example(row["prompt"], row["images"])
        assert row["num_tokens"] <= 8192 < meta["next_num_tokens"]
    assert [json.loads(r["meta"])["needle_indices"][0] for r in rows] == \
        [round(d * (len(rows[0]["images"]) - 1)) for d in (0, 0.2, 0.4, 0.6, 0.8, 1.0)]
    reasons = " ".join(s.reason for s in report.skipped)
    assert "image file is missing" in reasons and "fill only" in reasons


def test_multi_from_release(release, coco_mini, counter, tmp_path):
    root, entries = release
    rows = build("vh_multi_8k", root, coco_mini, counter, tmp_path, BuildReport())
    assert len(rows) == 3
    for row in rows:
        meta = json.loads(row["meta"])
        paths = [row["images"][i].path for i in meta["needle_indices"]]
        assert [p.split("/")[-1] for p in paths] == [p.split("/")[-1] for p in entries[1]["pos_image"]]
        assert row["answers"] == ["No"] and meta["permutation"] in (0, 1, 2)
