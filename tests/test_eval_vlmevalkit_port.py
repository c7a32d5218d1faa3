"""VLMEvalKit's port of the MMLongBench metrics as a second reference for ``--parity official``.

VLMEvalKit (commit 981e805d, PR #1592, written by the benchmark's author) scores the extended
release with ``vlmeval/dataset/utils/mmlongbench_metrics.py`` (the scoring functions of the official
``utils.py`` at EdinburghNLP/MMLongBench 22b9f27, unchanged but for the judge call) and
``vlmeval/dataset/mmlongbench.py`` ``MMLongBench._score_one`` / ``evaluate``. On 3,000 generated
pairs per path (``benchmarks/parity_pairs.py --n 3000``) our official mode and a transcription of
``_score_one`` agree on every pair (docs/evaluation.md). The cases below are worked out by hand;
each names the VLMEvalKit line, and where VLMEvalKit differs from the official repository the case
shows which input reproduces VLMEvalKit's number with our scorer.
"""
from __future__ import annotations

import pytest

from mmlbdata.evaluation.metrics import get_metric

VLM = "VLMEvalKit vlmeval/dataset/mmlongbench.py @981e805d"
VLM_METRICS = "VLMEvalKit vlmeval/dataset/utils/mmlongbench_metrics.py @981e805d"


def ex(answer, **meta):
    return {"id": "case", "answers": [answer], "meta": meta}


# (metric, prediction, example, VLMEvalKit's score = our official score, the VLMEvalKit line)
AGREEING = [
    ("sub_em", "Answer: the city of Paris.", ex("Paris"), 1.0,
     f"{VLM} L323-329: raw score, then `parse_output(prediction, prefix='Answer:')`, max per key"),
    ("cls_acc", "label: 12 (class 14)", ex("12"), 1.0,
     f"{VLM} L271-275 `_prefix_for('ICL')` is 'label:'; {VLM_METRICS} extract_class_num `label:\\s*(\\d+)`"),
    ("mc_acc", "The answer is (B).", ex("B"), 1.0,
     f"{VLM} L261 image retrieval/reasoning -> 'mc_acc'; {VLM_METRICS} `int(choice == answers)` with the typed 1"),
    ("count_acc", "Answer: [1, 2]", ex("[3]"), 1.0,
     f"{VLM} L257-258 'counting' -> 'soft_acc'; {VLM_METRICS} get_soft_acc: `sum(prediction) == sum(answer)`"),
    # binary_acc 'yeſ': IGNORECASE matches 'yes' but the label map has no 'yeſ' key: the official code
    # raises KeyError; VLMEvalKit catches it and scores 0, as our official mode does
    ("binary_acc", "yeſ", ex("Yes"), 0.0, f"{VLM} L319-320: `except Exception` -> `{{'acc': 0, 'metric_error': ...}}`"),
]


@pytest.mark.parametrize("name,prediction,example,expected,line", AGREEING, ids=[c[0] for c in AGREEING])
def test_vlmevalkit_and_our_official_mode_agree(name, prediction, example, expected, line):
    result = get_metric(name, parity="official").score(prediction, {"id": "case", **example})
    assert result.score == pytest.approx(expected), line


def test_vh_default_answer_follows_the_global_row_not_the_configs_position():
    """VLMEvalKit L316 + L366: `DEFAULT_ANSWER[row_id % 4]` with `row_id` the row's position in the
    whole evaluated TSV (every task of the length in one file); the official data.py
    DefaultAnswerGenerator (L160-166) restarts its [0, 1, 1, 0] cycle for each dataset. "maybe" has
    no yes/no, so the default decides: the 1st VH row of a config (official position 0: default 0 =
    No) is right for gold No; the same row at global row 5 of the TSV gets default 1 = Yes, wrong."""
    official = get_metric("binary_acc", parity="official")
    assert official.score("maybe", {"id": "a", "answers": ["No"], "_row": 0}).score == 1.0
    as_vlmevalkit = get_metric("binary_acc", parity="official")
    result = as_vlmevalkit.score("maybe", {"id": "a", "answers": ["No"], "_row": 5})  # its global row_id
    assert result.score == 0.0 and result.extra["default_answer"] == 1


def test_summary_headline_is_rouge_lsum_in_vlmevalkit():
    """VLMEvalKit L341-343 `_score_key_for('rouge')` is 'rougeLsum_f1'; our ``rouge_l`` score is rougeL
    with rougeLsum in ``extra``. By hand (stemmed tokens): gold "cats sleep / dogs bark" (two lines),
    prediction "dogs bark / cats sleep": rougeL's LCS over the flat token lists is 2 of 4 (F1 0.5);
    rougeLsum unions the LCS per gold line over the prediction's lines: 4 of 4 (F1 1.0)."""
    result = get_metric("rouge_l", parity="official").score("dogs bark\ncats sleep",
                                                           {"id": "s", "answers": ["cats sleep\ndogs bark"]})
    assert result.score == pytest.approx(0.5) and result.extra["rougeLsum"] == pytest.approx(1.0)


def test_an_empty_prediction_read_back_by_pandas_is_the_text_nan():
    """VLMEvalKit L280: `str(row.get('prediction', ''))` on a TSV read by pandas: an empty prediction
    is NaN, scored as the text "nan". Against gold "Nan" (a place name) sub_em gives 1 for "nan";
    the official run scores the model's empty output: 0."""
    metric = get_metric("sub_em", parity="official")
    assert metric.score("", ex("Nan")).score == 0.0
    assert metric.score("nan", ex("Nan")).score == 1.0  # what VLMEvalKit scores
