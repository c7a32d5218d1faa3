"""VLMEvalKit's ``evaluate`` scores through ``mmlb eval``'s own path (``evaluate_config``)."""
from __future__ import annotations

import json

import pytest

from mmlbdata.evaluation.evaluate import evaluate_config
from mmlbdata.exports.vlmevalkit_dataset import score_rows


def _row(ident: str, category: str, metric: str, answer: str, prediction) -> dict:
    """A prediction-file row as VLMEvalKit writes it back (the TSV's columns + ``prediction``)."""
    return {"index": ident, "id": ident, "question": "q", "answer": answer, "answers": json.dumps([answer]),
            "metric": metric, "meta": "{}", "category": category, "prediction": prediction}


ROWS = [_row("a1", "vh_single", "binary_acc", "Yes", "Answer: Yes"),
        _row("a2", "vh_single", "binary_acc", "No", "Answer: Yes"),
        _row("a3", "vh_single", "binary_acc", "No", float("nan")),  # VLMEvalKit's missing output
        _row("b1", "infoseek", "sub_em", "Paris", "Answer: Paris"),
        _row("b2", "infoseek", "sub_em", "Rome", "Answer: Milan")]


def test_each_category_gets_evaluate_configs_aggregates():
    table = score_rows(ROWS)
    assert [(line["category"], line["metric"], line["n"]) for line in table] == \
        [("infoseek", "sub_em", 2), ("vh_single", "binary_acc", 3)]
    assert [line["score"] for line in table] == [0.5, pytest.approx(1 / 3)]  # no yes/no read: wrong


def test_the_scores_are_mmlb_evals():
    examples = [{"id": r["id"], "question": "q", "answers": [r["answer"]], "metric": r["metric"], "meta": "{}",
                 "dataset": r["category"], "prompt": "q"} for r in ROWS if r["category"] == "vh_single"]
    predictions = {"a1": {"prediction": "Answer: Yes"}, "a2": {"prediction": "Answer: Yes"},
                   "a3": {"prediction": ""}}
    direct = evaluate_config(examples, predictions)["metrics"]["binary_acc"]["score"]
    assert score_rows(ROWS[:3]) == [{"category": "vh_single", "metric": "binary_acc", "n": 3, "score": direct,
                                     "unscorable": 0}]


def test_an_id_twice_in_one_category_is_refused():
    with pytest.raises(ValueError, match="'a1' appears twice"):
        score_rows(ROWS + [_row("a1", "vh_single", "binary_acc", "Yes", "Answer: No")])
