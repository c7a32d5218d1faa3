"""MM-NIAH: release-format fixtures from real images and Wikipedia text, rebuilt at 8k/16k."""
from __future__ import annotations

import json
import random
import re

import pytest
from PIL import Image

from mmlb_builders.mmniah import MMNIAH, passages
from mmlbdata.core.report import BuildReport
from mmlbdata.official import mmlongbench_prompts as prompts
from mmlbdata.sources.mmniah import parse_row, read_mmniah
from mmlbdata.core.store import ImageStore

NEEDLES = {
    "retrieval": (["The secret code hidden by the lighthouse keeper is 7319."],
                  "What is the secret code hidden by the lighthouse keeper?", "7319"),
    "counting": (["The little penguin counted 3 needles.", "The little penguin counted 5 needles.",
                  "The little penguin counted 2 needles."],
                 "Please list the number of needles the little penguin counted each time.", [3, 5, 2]),
    "reasoning": (["Alice is taller than Bob.", "Bob is taller than Carol."],
                  "Who is the shortest of Alice, Bob and Carol?", "Carol"),
}


def wiki_words(real_data) -> list[str]:
    text = (real_data / "text" / "wikitext2_raw_wiki.test.raw").read_text(encoding="utf-8")
    return re.sub(r"^ = .* = $", " ", text, flags=re.M).split()


def make_release(root, real_data, rows_per_task: int = 3) -> None:
    """A small MM-NIAH release in its exact schema (OBELICS-like documents from real data)."""
    words = wiki_words(real_data)
    photos = sorted((real_data / "images" / "imagenet_samples_100").glob("*.JPEG"))
    big = sorted((real_data / "images" / "hymenoptera_val" / "bees").glob("*.jpg"))
    (root / "annotations").mkdir(parents=True)
    images = root / "images"
    (images / "obelics").mkdir(parents=True)
    (images / "needles").mkdir()
    rng = random.Random(0)
    cursor = 0
    for task, (needles, question, answer) in NEEDLES.items():
        for modality in ("text", "image"):
            lines = []
            for row_id in range(rows_per_task):
                docs, images_list = [], []
                for d in range(3):
                    n_words = rng.randint(1200, 2000)
                    chunk = words[cursor:cursor + n_words]
                    cursor += n_words
                    half = len(chunk) // 2
                    for source in (rng.choice(photos), rng.choice(big)):
                        name = f"obelics/{task}_{modality}_{row_id}_{d}_{source.name}"
                        (images / name).write_bytes(source.read_bytes())
                        images_list.append(name)
                    docs.append(" ".join(chunk[:half]) + " <image> " + " ".join(chunk[half:]) + " <image>")
                meta = {"context_length": 0, "context_length_text": 0, "context_length_image": 0,
                        "choices": None, "choices_image_path": None}
                row = {"id": row_id, "question": question, "answer": answer, "meta": meta}
                depths = [round(0.2 + 0.25 * i, 2) for i in range(len(needles))]
                if modality == "text":
                    for needle, depth in zip(needles, depths):  # insert into the document text
                        doc = int(depth * (len(docs) - 0.01))
                        docs[doc] = docs[doc].replace(" <image> ", f" {needle} <image> ", 1)
                    meta["needles"] = needles
                else:
                    needle_imgs = [photos[-1 - i] for i in range(len(needles))]
                    for i, depth in enumerate(depths):
                        k = round(depth * (len(images_list) - 1))
                        with Image.open(images / images_list[k]) as base:
                            base = base.convert("RGB")
                            sticker = Image.open(needle_imgs[i]).convert("RGB").resize((96, 96))
                            for c in range(answer[i] if task == "counting" else 1):
                                base.paste(sticker, (10 + 100 * c, 10))
                            name = f"needles/{task}_{row_id}_{i}.jpg"
                            base.save(images / name)
                        images_list[k] = name
                    meta["needles"] = [f"needles/src_{p.name}" for p in needle_imgs]
                    if task == "counting":
                        question_img = f"needles/q_{row_id}.jpg"
                        Image.open(needle_imgs[0]).convert("RGB").save(images / question_img)
                        row["question"] = question + " The needle looks like <image>."
                        images_list.append(question_img)
                    else:
                        meta["choices_image_path"] = [f"obelics/choice_{c}_{photos[c].name}" for c in range(4)]
                        for c in range(4):
                            (images / meta["choices_image_path"][c]).write_bytes(photos[c].read_bytes())
                        row["answer"] = row_id % 4
                        row["question"] = "Which of the following images appears in the document?"
                meta["placed_depth"] = depths[0] if task == "retrieval" else depths
                meta["num_images"] = len(images_list)
                row["images_list"] = images_list
                row["context"] = "</s>".join(docs)
                lines.append(json.dumps(row))
            (root / "annotations" / f"{task}-{modality}.jsonl").write_text("\n".join(lines) + "\n")


@pytest.fixture(scope="module")
def release(tmp_path_factory, real_data):
    root = tmp_path_factory.mktemp("mmniah")
    make_release(root, real_data)
    return root


def build(name, release, counter, tmp_path, report=None):
    builder = MMNIAH(name, sources={"mmniah": release}, store=ImageStore(tmp_path / "store"),
                     counter=counter, report=report or BuildReport())
    return list(builder.generate())


def test_reader_takes_needles_out(release):
    records = list(read_mmniah(release, "retrieval", "text"))
    assert len(records) == 3
    text = " ".join(s for doc in records[0].documents for s in doc if isinstance(s, str))
    assert NEEDLES["retrieval"][0][0] not in text and len(records[0].documents) == 3
    image_records = list(read_mmniah(release, "counting", "image"))
    assert [p.name for p in image_records[0].needles] == ["counting_0_0.jpg", "counting_0_1.jpg", "counting_0_2.jpg"]
    assert all("needles" not in str(s) for doc in image_records[0].documents for s in doc)


def test_reader_rejects_inconsistent_rows(release, tmp_path):
    row = json.loads((release / "annotations" / "retrieval-text.jsonl").read_text().splitlines()[0])
    row["images_list"] = row["images_list"][:-1]
    with pytest.raises(ValueError, match="placeholders"):
        parse_row(row, "retrieval", "text", release / "images")
    bad = tmp_path / "bad"
    (bad / "annotations").mkdir(parents=True)
    (bad / "images").symlink_to(release / "images")
    good = (release / "annotations" / "retrieval-text.jsonl").read_text().splitlines()
    (bad / "annotations" / "retrieval-text.jsonl").write_text(good[0] + "\n{truncated\n" + good[1] + "\n")
    report = BuildReport()
    assert len(list(read_mmniah(bad, "retrieval", "text", report))) == 2
    assert report.skipped[0].record == "line 2"


def test_passages():
    text = " ".join(str(i) for i in range(250))
    assert [len(p.split()) for p in passages(text)] == [100, 100, 50]


@pytest.mark.parametrize("task", ["retrieval", "counting", "reasoning"])
@pytest.mark.parametrize("modality", ["text", "image"])
@pytest.mark.parametrize("length", ["8k", "16k"])
def test_rows(task, modality, length, release, counter, tmp_path):
    """Acceptance 2: needles once at the recorded depth, counts, invariant, <image> count."""
    name = f"mm_niah_{task}_{modality}_{length}"
    report = BuildReport()
    rows = build(name, release, counter, tmp_path, report)
    per_id = 3 if task == "counting" or (task, modality) == ("reasoning", "text") else 6
    assert len(rows) == 3 * per_id, report.summary()
    budget = {"8k": 8192, "16k": 16384}[length]
    for row in rows:
        meta = json.loads(row["meta"])
        assert row["prompt"].count("<image>") == len(row["images"])
        assert row["num_tokens"] == counter.example(row["prompt"], row["images"])
        assert row["num_tokens"] <= budget < meta["next_num_tokens"]
        assert all(max(ref.width, ref.height) <= 1024 for ref in row["images"])
        context = row["prompt"].split("\n\nQuestion: ")[0].split("Answer: [answer]\n\n", 1)[1]
        units = context.split("\n\n")
        assert len(units) == meta["num_units"]
        positions = meta["needle_positions"]
        if modality == "text":
            for needle, pos in zip(meta["needles"], positions):
                assert row["prompt"].count(needle) == 1 and units[pos] == needle
        else:
            names = [r.path for r in row["images"]]
            for needle, idx, pos in zip(meta["needles"], meta["needle_image_indices"], positions):
                assert units[pos] == "<image>"
                assert sum(needle in n for n in names) == 1 and needle in names[idx]
        depths = meta["depth"] if isinstance(meta["depth"], list) else [meta["depth"]] * len(positions)
        for depth, pos in zip(depths, positions):
            assert abs(pos - depth * (len(units) - len(positions))) <= 1.0 + len(positions)
        if task == "counting":
            assert json.loads(row["answers"][0]) == meta["counts"] == [3, 5, 2]
            assert len(positions) == 3 and positions == sorted(positions)
        if modality == "image" and task != "counting":
            assert row["metric"] == "mc_acc" and row["answers"][0] in "ABCD"
            assert row["question"].endswith("\nA. <image>\nB. <image>\nC. <image>\nD. <image>")
            assert "with the option's letter (A, B, etc.)" in row["prompt"]
        else:
            assert row["prompt"].startswith(prompts.TEMPLATES["niah"].split("{context}")[0])
    if length == "16k":  # a released haystack is shorter than 16k: the next ones continue it
        assert all(json.loads(r["meta"])["filled_from"] for r in rows)
    depth_rows = [json.loads(r["meta"])["depth"] for r in rows if r["id"].endswith("_d1.0")]
    assert per_id == 3 or depth_rows == [1.0, 1.0, 1.0]


def test_deterministic(release, counter, tmp_path):
    a = build("mm_niah_counting_text_8k", release, counter, tmp_path / "a")
    b = build("mm_niah_counting_text_8k", release, counter, tmp_path / "b")
    assert [(r["prompt"], r["meta"]) for r in a] == [(r["prompt"], r["meta"]) for r in b]
