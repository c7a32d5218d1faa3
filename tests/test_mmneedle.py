"""MMNeedle on the real COCO sample: pixel test of every positive label, negatives, prompts, budgets."""
from __future__ import annotations

import json
import shutil
from functools import lru_cache

import numpy as np
import pytest
from PIL import Image

from mmlb_builders.mmneedle import MMNeedle, build_prompt
from mmlbdata.media.stitch import CELL
from mmlbdata.core.report import BuildReport
from mmlbdata.sources.coco_captions import read_captions
from mmlbdata.core.store import ImageStore

ORIGINAL = [c.name for c in MMNeedle.BUILDER_CONFIGS if c.length is None]
OPTIONS = {"num_samples": 4, "pool_size": 12, "stitch_processes": 1}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return ImageStore(tmp_path_factory.mktemp("store"))


def build(name, coco, store, counter, report=None, **options):
    builder = MMNeedle(name, sources={"coco": coco}, store=store, counter=counter,
                       report=report or BuildReport(), options={**OPTIONS, **options})
    return list(builder.generate())


@lru_cache(maxsize=64)
def decoded(path: str) -> np.ndarray:
    return np.asarray(Image.open(path).convert("RGB"), dtype=np.int16)


@lru_cache(maxsize=512)
def reference_cell(path: str) -> np.ndarray:
    """The straightforward resize of the source image (the original's stitching)."""
    return np.asarray(Image.open(path).convert("RGB").resize((CELL, CELL), Image.BICUBIC), dtype=np.int16)


def cell_error(stitched: str, row: int, col: int, source: str) -> float:
    cell = decoded(stitched)[row * CELL:(row + 1) * CELL, col * CELL:(col + 1) * CELL]
    return float(np.abs(cell - reference_cell(source)).mean())


def test_config_names():
    assert len(ORIGINAL) == 21
    assert "mmneedle_m10_n4_k1" in ORIGINAL and "mmneedle_m1_n2_k5" in ORIGINAL
    assert "mmneedle_n8_k5_128k" in {c.name for c in MMNeedle.BUILDER_CONFIGS}


def test_prompt_verbatim():
    # needle.py main(): the N_NEEDLES == 1 prompt + "\n" + "Caption: " + caption; needle_test: the
    # images, then the instruction as the one text item (no text between or before them)
    single = build_prompt(1, 2, ["A dog."])
    assert single == (
        "<image>Given 1 image indexed from 1 to 1, each divided into 2*2 subimages, identify the "
        "subimage that best matches the provided caption. Respond with 'index, row, column' and nothing "
        "else. For example, '1, 2, 3' indicates the subimage in the first image, second row, and third "
        "column. If no match is found, respond only with '-1'.\nCaption: A dog.")
    multi = build_prompt(10, 1, ["a", "b"])
    assert multi.startswith("<image>" * 10 + "Given 10 images indexed from 1 to 10, each divided into 1*1 "
                            "subimage, identify the subimages that best match the provided 2 captions. "
                            "Respond in the format: index_1, row_1, column_1; ...; index_2, row_2, column_2. "
                            "Only provide this information.")
    assert multi.endswith("for that caption.\nCaption_1: a\nCaption_2: b")


@pytest.mark.parametrize("name", ORIGINAL)
def test_every_label_by_pixels(name, coco_mini, store, counter):
    """Acceptance 1: each positive label's cell shows its source image; negatives are outside."""
    report = BuildReport()
    # 640 cells from 159 images leave about one image outside a haystack: K=5 negatives need
    # many haystacks to choose from (grids are only stitched when used).
    extra = {"pool_size": 200, "num_samples": 2} if name.startswith("mmneedle_m10_n8") else {}
    rows = build(name, coco_mini, store, counter, report, **extra)
    images = {img.key: img for img in read_captions(coco_mini, ImageStore(store.root), BuildReport())}
    assert len(rows) == extra.get("num_samples", OPTIONS["num_samples"]), report.summary()
    assert any(json.loads(r["meta"])["positive"] for r in rows) and not all(
        json.loads(r["meta"])["positive"] for r in rows)
    m, n, k = (int(part[1:]) for part in name.split("_")[1:])
    for row in rows:
        meta = json.loads(row["meta"])
        assert meta["m"] == m and meta["n"] == n and meta["k"] == min(k, m * n * n)
        assert len(row["images"]) == m == len(meta["cells"]) and row["prompt"].count("<image>") == m
        assert all(len(cells) == n * n == len(set(cells)) for cells in meta["cells"])
        assert all(ref.width == ref.height == CELL * n for ref in row["images"])
        in_haystack = {f for cells in meta["cells"] for f in cells}
        for needle in meta["needles"]:
            assert needle["caption"] == images[needle["file"]].caption
            assert f"{needle['caption']}" in row["prompt"]
        if meta["positive"]:
            assert row["answers"] == ["; ".join(f"{d['index'] + 1}, {d['row'] + 1}, {d['col'] + 1}"
                                                for d in meta["needles"])]
            assert len({(d["index"], d["row"], d["col"]) for d in meta["needles"]}) == meta["k"]
            for d in meta["needles"]:
                assert meta["cells"][d["index"]][d["row"] * n + d["col"]] == d["file"]
                stitched = row["images"][d["index"]].path
                source = images[d["file"]].ref.path
                own = cell_error(stitched, d["row"], d["col"], source)
                assert own < 12, (name, d, own)
                # and the cell is not some other image: every other source is far worse
                others = [cell_error(stitched, d["row"], d["col"], images[f].ref.path)
                          for f in list(in_haystack - {d["file"]})[:3]]
                assert all(o > 2 * own + 10 for o in others), (own, others)
        else:
            assert row["answers"] == ["; ".join(["-1"] * meta["k"])]
            assert all(d["index"] == -1 and d["file"] not in in_haystack for d in meta["needles"])


def test_cells_metadata_matches_every_cell(coco_mini, store, counter):
    row = build("mmneedle_m1_n4_k1", coco_mini, store, counter)[0]
    meta = json.loads(row["meta"])
    images = {img.key: img for img in read_captions(coco_mini, ImageStore(store.root), BuildReport())}
    for k, key in enumerate(meta["cells"][0]):
        assert cell_error(row["images"][0].path, *divmod(k, 4), images[key].ref.path) < 12


def test_half_positive_and_k_capped(coco_mini, store, counter):
    report = BuildReport()
    rows = build("mmneedle_m1_n2_k5", coco_mini, store, counter, report)
    metas = [json.loads(r["meta"]) for r in rows]
    assert [m["positive"] for m in metas] == [True, True, False, False]
    assert all(m["k"] == 4 and m["k_requested"] == 5 and len(m["needles"]) == 4 for m in metas)
    assert any("K capped at 4" in note for note in report.notes)


def test_deterministic_and_store_reuse(coco_mini, store, counter, tmp_path):
    first = build("mmneedle_m10_n2_k2", coco_mini, store, counter)
    again = build("mmneedle_m10_n2_k2", coco_mini, ImageStore(tmp_path / "fresh"), counter)
    strip = lambda rows: [(r["prompt"], r["answers"], r["meta"], [open(i.path, "rb").read() for i in r["images"]])
                          for r in rows]
    assert strip(first) == strip(again)
    other_seed = MMNeedle("mmneedle_m10_n2_k2", sources={"coco": coco_mini}, store=store, counter=counter,
                          seed=1, options=OPTIONS)
    assert [r["meta"] for r in other_seed.generate()] != [r["meta"] for r in first]


def test_budget_variant_fills_length(coco_mini, store, counter):
    rows = build("mmneedle_n2_k2_8k", coco_mini, store, counter, pool_size=60)
    assert len(rows) == 4
    for row in rows:
        meta = json.loads(row["meta"])
        assert row["num_tokens"] == counter.example(row["prompt"], row["images"])
        assert row["num_tokens"] <= 8192 < meta["next_num_tokens"]
        assert meta["m"] == len(row["images"]) > 10


def test_bad_image_reported_not_fatal(coco_mini, store, counter, tmp_path):
    root = tmp_path / "coco"
    shutil.copytree(coco_mini / "annotations", root / "annotations")
    shutil.copytree(coco_mini / "val2017", root / "val2017")
    victim = sorted((root / "val2017").iterdir())[3]
    victim.write_bytes(victim.read_bytes()[:2000])  # truncated JPEG
    report = BuildReport()
    rows = build("mmneedle_m1_n2_k1", root, ImageStore(tmp_path / "s"), counter, report)
    assert len(rows) == 4
    assert any(victim.name in s.file and "truncated" in s.reason for s in report.skipped)
    assert all(victim.name not in r["meta"] for r in rows)


# -- the official code's forms (Wang-ML-Lab/multimodal-needle-in-a-haystack @debcaae1) ----------------

def test_official_form_spells_every_needle_and_answers_zero_for_negatives(coco_mini, store, counter):
    """needle.py main(): ``output_format`` joins ``index_{i+1}, row_{i+1}, column_{i+1}`` with '; '
    for every needle; ``gt`` is ``{idx+1}, {row+1}, {col+1}`` per needle joined by '; ', and
    sample_multiple_needles.py labels a negative's needles idx = row = col = -1, so "0, 0, 0"."""
    paper = build("mmneedle_m10_n1_k2", coco_mini, store, counter)
    official = build("mmneedle_m10_n1_k2", coco_mini, store, counter, answer_form="official")
    assert [json.loads(r["meta"])["positive"] for r in official] == [True, True, False, False]
    for p, o in zip(paper, official):
        assert [i.path for i in p["images"]] == [i.path for i in o["images"]]  # same samples
        assert "Respond in the format: index_1, row_1, column_1; index_2, row_2, column_2. Only" in o["prompt"]
        assert "; ...; " not in o["prompt"] and "; ...; index_2, row_2, column_2. Only" in p["prompt"]
        assert json.loads(o["meta"])["answer_form"] == "official" and json.loads(p["meta"])["answer_form"] == "paper"
        assert o["num_tokens"] == counter.example(o["prompt"], o["images"])
    assert [o["answers"] for o in official[:2]] == [p["answers"] for p in paper[:2]]  # positives agree
    assert [o["answers"] for o in official[2:]] == [["0, 0, 0; 0, 0, 0"]] * 2
    assert [p["answers"] for p in paper[2:]] == [["-1; -1"]] * 2  # paper appendix B: "-1; -1"


def test_official_form_single_needle(coco_mini, store, counter):
    # needle.py, N_NEEDLES == 1: the same instruction as the paper's; gt "0, 0, 0" for idx = -1
    rows = build("mmneedle_m1_n2_k1", coco_mini, store, counter, answer_form="official")
    assert [r["answers"][0] == "0, 0, 0" for r in rows] == [False, False, True, True]
    assert rows[0]["prompt"] == build_prompt(1, 2, [json.loads(rows[0]["meta"])["needles"][0]["caption"]])


def test_n1_original_keeps_the_coco_image(coco_mini, store, counter):
    """Official N = 1 samples show the COCO image itself, not a 256 x 256 resize."""
    cells = build("mmneedle_m10_n1_k1", coco_mini, store, counter)
    original = build("mmneedle_m10_n1_k1", coco_mini, store, counter, n1_image="original")
    images = {img.key: img for img in read_captions(coco_mini, ImageStore(store.root), BuildReport())}
    for c, o in zip(cells, original):
        meta = json.loads(o["meta"])
        assert meta["n1_image"] == "original" and json.loads(c["meta"])["n1_image"] == "cell"
        assert all(ref.width == ref.height == CELL for ref in c["images"])
        for ref, cell in zip(o["images"], meta["cells"]):
            source = images[cell[0]].ref
            assert open(ref.path, "rb").read() == open(source.path, "rb").read()  # the file as released
            assert (ref.width, ref.height) == Image.open(source.path).size != (CELL, CELL)
        assert o["answers"] == c["answers"] and o["prompt"] == c["prompt"]
        assert o["num_tokens"] == counter.example(o["prompt"], o["images"]) > c["num_tokens"]


def test_form_options_recorded_and_checked(coco_mini, store, counter):
    by_name = {c.name: c for c in MMNeedle.BUILDER_CONFIGS}
    assert by_name["mmneedle_m10_n1_k1"].options["answer_form"] == "paper"  # in every manifest and card
    assert by_name["mmneedle_m10_n1_k1"].options["n1_image"] == "cell"
    assert "n1_image" not in by_name["mmneedle_m1_n2_k1"].options
    with pytest.raises(ValueError, match="answer_form"):
        build("mmneedle_m1_n2_k1", coco_mini, store, counter, answer_form="bogus")
    with pytest.raises(ValueError, match="n1_image=original"):
        build("mmneedle_n1_k1_8k", coco_mini, store, counter, n1_image="original")
