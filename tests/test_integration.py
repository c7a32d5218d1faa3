"""Builders and metrics agree: gold answers fed back as predictions score 1 in every family.

One small build per family from the real samples, through the same path users take
(build_configs -> parquet folder -> evaluation). A builder that writes answers or meta in a shape
its metric does not read fails here even when both pass their own tests.
"""
from __future__ import annotations


import pytest

from mmlbdata.dataset.build import build_configs
from mmlbdata.evaluation.evaluate import evaluate_config, load_examples

# config, sources (keys into the real sample data), options, prediction template
CASES = [
    ("vh_single_8k", {"coco": "coco_mini"}, {}, "Answer: {gold}"),
    ("vh_multi_8k", {"coco": "coco_mini"}, {}, "The answer is no... Answer: {gold}"),
    ("mmneedle_m1_n2_k1", {"coco": "coco_mini"}, {"num_samples": 4}, "{gold}"),
    ("mmneedle_m1_n4_k2", {"coco": "coco_mini"}, {"num_samples": 4}, "Answer: {gold}"),
    ("mmlongdoc_8k", {"mmlongbench_doc": "mmlongbench_doc"}, {}, "Answer: {gold}"),
    ("longdocurl_8k", {"longdocurl": "longdocurl_sample"}, {}, "Answer: {gold}"),
    ("mmlongbench_doc", {"mmlongbench_doc": "mmlongbench_doc"}, {"max_pages": 8}, "{gold}"),
    ("food101_8k", {"food101": "images/hymenoptera_val"}, {"num_classes": 2}, "label: {gold}"),
]


@pytest.fixture(scope="module")
def built(real_data, tokenizer_path, tmp_path_factory):
    out = tmp_path_factory.mktemp("oracle")
    results = {}
    for config, sources, options, _ in CASES:
        paths = {key: real_data / rel for key, rel in sources.items()}
        [result] = build_configs([config], paths, out, limit=3, options=options, store_root=out / "store",
                                 tokenizer=tokenizer_path, progress=False)
        results[config] = result
    return out, results


@pytest.mark.parametrize("config,template", [(c[0], c[3]) for c in CASES])
def test_gold_answers_score_one(built, config, template):
    out, results = built
    assert results[config].ok, results[config].error
    examples = load_examples(out, config)
    assert examples
    answerable = [e for e in examples if e["answers"] and e["answers"][0] not in ("", "Not answerable")]
    predictions = {e["id"]: {"prediction": template.format(gold=e["answers"][0])} for e in answerable}
    report = evaluate_config(answerable, predictions)
    assert report["n"] == len(answerable) and report["problems"]["unknown_ids"] == []
    bad = [x for x in report["examples"] if x["score"] < 1.0]
    assert not bad, bad[:3]
    wrong = {e["id"]: {"prediction": "zzz qqq"} for e in answerable}
    assert evaluate_config(answerable, wrong)["score"] < 1.0
