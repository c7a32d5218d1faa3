"""A summary config scored without a judge has no score: its answers are left out as unscorable
(#35), and counting its unanswered examples as wrong (#32) made the headline 0.0 over the
unanswered ones alone (n=20 of 30, "answered 10/30", stderr 0), which reads as a real score."""
from __future__ import annotations

import json

from mmlbdata.evaluation.evaluate import evaluate, evaluate_config


def _examples(metric: str, count: int = 30, dataset: str = "gov_report") -> list[dict]:
    return [{"id": f"{dataset}{i}", "dataset": dataset, "length": 8192, "metric": metric, "answers": ["yes"],
             "meta": "{}", "question": ""} for i in range(count)]


def test_unanswered_examples_of_an_unscorable_metric_are_not_a_zero_score():
    examples = _examples("summ_judge")
    result = evaluate_config(examples, {e["id"]: {"prediction": "a summary"} for e in examples[:10]})
    assert (result["n"], result["answered"], result["total"]) == (0, 10, 30)
    assert result["by_length"] == {}


def test_a_scorable_metric_beside_it_still_counts_its_unanswered_as_wrong():
    summaries, needles = _examples("summ_judge", 4), _examples("binary_acc", 4, dataset="vh_single")
    predictions = {e["id"]: {"prediction": "Yes"} for e in summaries[:2] + needles[:2]}
    result = evaluate_config(summaries + needles, predictions)
    assert result["n"] == 4 and result["score"] == 0.5  # 2 right, 2 unanswered needles wrong


def test_the_report_by_dataset_follows_the_headline(tmp_path, monkeypatch):
    import mmlbdata.evaluation.evaluate as ev

    examples = _examples("summ_judge", 6) + _examples("binary_acc", 4, dataset="vh_single")
    monkeypatch.setattr(ev, "load_examples", lambda data_dir, config: [dict(e) for e in examples])
    preds = tmp_path / "p.jsonl"
    preds.write_text("".join(json.dumps({"id": e["id"], "config": "c", "prediction": "Yes"}) + "\n"
                             for e in examples[:2] + examples[6:8]))
    report = evaluate(preds, tmp_path / "no_folder", ["c"])
    assert report["overall"]["by_dataset"] == {"vh_single": 0.5}
