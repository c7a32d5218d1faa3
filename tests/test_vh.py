"""Visual Haystack on the real COCO sample: budget invariant, needles, determinism, bad input."""
from __future__ import annotations

import json
import math
import shutil
from collections import defaultdict

import io
from pathlib import Path

import datasets
import pyarrow.parquet as pq
from PIL import Image
import pytest
import sentencepiece as spm

from mmlbdata.dataset.build import build_configs
from mmlbdata.core.report import source_label
from mmlbdata.exports import iter_rows
from mmlbdata.dataset.stats import configs_in, shard_files


def independent_image_tokens(w: int, h: int) -> int:
    """The issue's formula, written out again (no library code)."""
    f, lo, hi = 28, 4 * 28 * 28, 16384 * 28 * 28
    hb, wb = max(f, round(h / f) * f), max(f, round(w / f) * f)
    if hb * wb > hi:
        beta = math.sqrt(h * w / hi)
        hb, wb = math.floor(h / beta / f) * f, math.floor(w / beta / f) * f
    elif hb * wb < lo:
        beta = math.sqrt(lo / (h * w))
        hb, wb = math.ceil(h * beta / f) * f, math.ceil(w * beta / f) * f
    return (hb // f) * (wb // f)


@pytest.fixture(scope="module")
def built(coco_mini, tokenizer_path, tmp_path_factory):
    out = tmp_path_factory.mktemp("vh")
    results = build_configs(["vh_single_8k", "vh_single_32k", "vh_multi_32k"], {"coco": coco_mini}, out,
                            limit=6, store_root=out / "store", tokenizer=tokenizer_path, progress=False)
    assert all(r.ok for r in results), [r.error for r in results]
    return out


def _load(built, config, images=True):
    """The config through load_dataset; images as ``{"bytes", "path"}`` (a files-layout image's
    bytes read from its file)."""
    ds = datasets.load_dataset(str(built), config, split="test")
    if not images:
        return ds.remove_columns("images")
    ds = ds.cast_column("images", datasets.List(datasets.Image(decode=False)))
    return [{**row, "images": [{"bytes": img["bytes"] or Path(img["path"]).read_bytes(), "path": img["path"]}
                               for img in row["images"]]} for row in ds]


def _source_names(coco_mini) -> dict[bytes, str]:
    """COCO file name of each source image, by content (built images are named by their hash)."""
    return {p.read_bytes(): p.name for p in sorted(coco_mini.rglob("*.jpg"))}


def _instances(coco_mini):
    cats, index = {}, defaultdict(set)
    for path in sorted((coco_mini / "annotations").glob("instances_*.json")):
        data = json.loads(path.read_text())
        cats.update({c["id"]: c["name"] for c in data["categories"]})
        files = {im["id"]: im["file_name"] for im in data["images"]}
        for ann in data["annotations"]:
            index[files[ann["image_id"]]].add(cats[ann["category_id"]])
    return index


@pytest.mark.parametrize("config", ["vh_single_8k", "vh_single_32k", "vh_multi_32k"])
def test_every_row_keeps_the_budget_invariant(built, config, tokenizer_path):
    sp = spm.SentencePieceProcessor(model_file=str(tokenizer_path))
    ds = _load(built, config)
    assert len(ds) > 0
    for row in ds:
        meta = json.loads(row["meta"])
        text = len(sp.encode(row["prompt"].replace("<image>", ""))) + 1
        sizes = [Image.open(io.BytesIO(img["bytes"])).size for img in row["images"]]  # lazy: header only
        images = sum(independent_image_tokens(*size) for size in sizes)
        assert row["num_tokens"] == text + images
        assert row["num_tokens"] <= row["length"] < meta["next_num_tokens"]
        assert row["prompt"].count("<image>") == len(row["images"])


@pytest.mark.parametrize("config", ["vh_single_8k", "vh_multi_32k"])
def test_prompt_is_what_the_official_loader_assembles(built, config):
    """MMLongBench data.py load_visual_haystack: user_template (L160) formatted with one "<image>"
    per haystack image joined by single newlines (L174) and the question as released."""
    for row in _load(built, config):
        n = len(row["images"])
        assert row["prompt"] == (
            "You are given a set of images. Please answer the question in Yes or No based on the given images. "
            "Write your answer in the following format:\nAnswer: [answer]\n\n" + "\n".join(["<image>"] * n)
            + "\n\nQuestion: " + row["question"])


def test_needles_are_where_the_labels_say(built, coco_mini):
    objects = _instances(coco_mini)
    source_names = _source_names(coco_mini)
    for config in ["vh_single_32k", "vh_multi_32k"]:
        ds = _load(built, config)
        for row in ds:
            meta = json.loads(row["meta"])
            names = [source_names[img["bytes"]] for img in row["images"]]
            needles = [names[i] for i in meta["needle_indices"]]
            assert all(meta["anchor"] in objects[n] for n in needles)
            has_target = [meta["target"] in objects[n] for n in needles]
            expected = {"single": has_target[0], "all": all(has_target), "any": any(has_target)}[meta["mode"]]
            assert row["answers"] == ["Yes" if expected else "No"]
            for i, name in enumerate(names):
                if i not in meta["needle_indices"]:
                    assert not objects[name] & {meta["anchor"], meta["target"]}
            assert len(set(names)) == len(names)  # no image reused within a haystack


def test_single_has_six_depths_per_question_and_balanced_answers(built):
    ds = _load(built, "vh_single_8k")
    groups = defaultdict(list)
    for row in ds:
        groups[json.loads(row["meta"])["source_id"]].append(row)
    assert len(groups) == 6
    answers = []
    for rows in groups.values():
        metas = [json.loads(r["meta"]) for r in rows]
        assert [m["depth"] for m in metas] == [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
        n = len(rows[0]["images"])
        assert [m["needle_indices"][0] for m in metas] == [round(d * (n - 1)) for d in (0, .2, .4, .6, .8, 1)]
        assert rows[0]["question"].startswith("For the image with a")
        answers.append(rows[0]["answers"][0])
    assert answers.count("Yes") == answers.count("No")


def test_multi_has_three_permutations_of_two_or_three_needles(built):
    ds = _load(built, "vh_multi_32k", images=False)
    groups = defaultdict(list)
    for row in ds:
        groups[json.loads(row["meta"])["source_id"]].append(json.loads(row["meta"]))
    for metas in groups.values():
        assert [m["permutation"] for m in metas] == [0, 1, 2]
        assert len(metas[0]["needle_indices"]) in (2, 3)
        assert {m["mode"] for m in metas} <= {"all", "any"}


def test_same_sources_and_seed_give_identical_parquet(built, coco_mini, tokenizer_path, tmp_path):
    # the same configs in another order: an image's partition is the set of configs using it
    build_configs(["vh_multi_32k", "vh_single_32k", "vh_single_8k"], {"coco": coco_mini}, tmp_path, limit=6,
                  store_root=tmp_path / "store", tokenizer=tokenizer_path, progress=False)
    for config in ("vh_single_8k", "vh_single_32k", "vh_multi_32k"):
        a, b = shard_files(built, config), shard_files(tmp_path, config)
        assert [p.read_bytes() for p in a] == [p.read_bytes() for p in b]  # the paths name the images' hashes
    other = build_configs(["vh_single_8k"], {"coco": coco_mini}, tmp_path / "seed1", limit=6, seed=1,
                          store_root=tmp_path / "store", tokenizer=tokenizer_path, progress=False)[0]
    assert other.ok and other.stats.fingerprint != json.loads(
        (built / "manifests" / "vh_single_8k.json").read_text())["stats"]["fingerprint"]


def test_too_few_distractors_is_reported_not_reused(coco_mini, tokenizer_path, tmp_path):
    result = build_configs(["vh_single_128k"], {"coco": coco_mini}, tmp_path, limit=2,
                           store_root=tmp_path / "store", tokenizer=tokenizer_path, progress=False)[0]
    assert not result.ok and "no example could be built" in result.error
    reasons = [s["reason"] for s in result.report["skipped"]]
    assert reasons and all("distinct distractor images" in r and "never reused" in r for r in reasons)
    assert configs_in(tmp_path) == [] and not (tmp_path / "images").exists()


def test_bad_input_is_skipped_and_reported(coco_mini, tokenizer_path, tmp_path):
    coco = tmp_path / "coco"
    shutil.copytree(coco_mini, coco)
    val = sorted((coco / "val2017").glob("*.jpg"))
    val[0].write_bytes(val[0].read_bytes()[:5000])  # a corrupt (truncated) JPEG
    val[1].unlink()  # an annotation naming a missing image
    train_ann = coco / "annotations" / "instances_train2017.json"
    train_ann.write_text(train_ann.read_text()[:100000])  # a truncated JSON
    result = build_configs(["vh_single_8k"], {"coco": coco}, tmp_path / "out", limit=4,
                           store_root=tmp_path / "store", tokenizer=tokenizer_path, progress=False)[0]
    assert result.ok and result.stats.num_rows == 24
    skipped = {s["file"]: s["reason"] for s in result.report["skipped"]}
    named = lambda path: source_label(path, {"coco": coco})  # "coco/val2017/...": the manifest's naming
    assert "truncated" in skipped[named(val[0])]
    assert "missing" in skipped[named(val[1])]
    assert "invalid JSON" in skipped[named(train_ann)]
    used = {img["bytes"] for row in iter_rows(tmp_path / "out", "vh_single_8k", columns=["images"])
            for img in row["images"]}
    assert val[0].read_bytes() not in used and (coco_mini / "val2017" / val[1].name).read_bytes() not in used
