"""MemLens scoring held against the official code (xrenaf/MEMLENS @fd4c8d7) run unchanged.

The official ``llm_judge.evaluate`` and ``parse_utils`` are imported from the fetched repository
(tests/memlens_official.py: only ``openai`` is stubbed, answering each judge prompt from a table of
replayed replies). The same replies go to ``memlens_judge`` through a stand-in judge client; every
question type and subtype, and replies valid and malformed, must score the same, per answer and per
ability, and the prompts sent must be the official ones, character for character.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mmlbdata.evaluation import memlens_judge as mj
from mmlbdata.evaluation.metrics import get_metric
from mmlbdata.evaluation.metrics import memlens as rules

sys.path.insert(0, str(Path(__file__).parent))
import memlens_official as official  # noqa: E402

FAIL = "<the judge call raises>"
LONG = " ".join(f"step{i} then" for i in range(900))  # > 6000 characters, > 500 words: zeroed unjudged
TRUNCATED = "x" * 5000 + " and finally the answer is brioche " + "y" * 2500  # > 6000 characters, few words
#: (question_type, question_subtype, reference, old_answer, model output, judge reply)
CASES = [
    ("information_extraction", "entity", "a red umbrella", "", "A red umbrella.", '[JSON]:\n{"answer_score": 1}'),
    ("information_extraction", "previnfo", "left of the door", "", "<think>hmm</think>Left of the door",
     "In summary, the student's answer deserves 1 point."),
    ("information_extraction", "", "blue", "", "<|im_start|>blue<|im_end|>", "[Score]: 1 points"),
    ("multi_session_reasoning", "arithmetic", "42", "", "42", '"answer_score": 7'),  # clamped to 1
    ("multi_session_reasoning", "counting", "3", "", "three", ""),  # empty reply
    ("multi_session_reasoning", "entity_resolution", "Yes", "", "Yes", "I would give it full marks."),  # unreadable
    ("multi_session_reasoning", "entity_resolution", "2 cats", "", "2", '"answer_score": 0 ... deserves 1 point'),
    ("multi_session_reasoning", "other", "5", "", "5", FAIL),  # the call fails: 0 after retries
    ("temporal_reasoning", "duration_comparison", "the second trip", "", "The second", "[Score]: 0"),
    ("temporal_reasoning", "order_ranking", "bees, then ants", "", "bees then ants", '"answer_score": 1'),
    ("temporal_reasoning", "temporal_info_extraction", "2024-01-15", "", "January 15, 2024", '"answer_score": 1'),
    ("temporal_reasoning", "", "March", "", TRUNCATED, '"answer_score": 1'),
    ("knowledge_update", "", "brioche", "sourdough", "brioche", '"answer_score": 1'),
    ("knowledge_update", "", "Lisbon", "", "Porto", '"answer_score": 0'),  # no old answer: the generic case
    ("answer_refusal", "", "Insufficient information", "", "Insufficient information", '"answer_score": 1'),
    ("answer_refusal", "", "Insufficient information", "", "", '"answer_score": ' + "9" * 5000),  # past int limit
    ("answer_refusal", "", "Insufficient information", "", LONG, '"answer_score": 1'),  # auto zero, never asked
    ("information_extraction", "entity", "Paris", "", "[CONTENT_FILTER_REJECTED]", "deserves 0 points"),
]


def _question(i: int) -> str:
    return f"Question number {i}: what did I say?"


def _reply_for(prompt: str):
    for i in sorted(range(len(CASES)), key=lambda i: -len(str(i))):
        if f"<Question>: {_question(i)}\n" in prompt:
            return CASES[i][5]
    raise AssertionError("a judge prompt for no known question")


class ReplayJudge:
    """Stands in for JudgeClient: the same replies; a failed call is None, as JudgeClient returns."""

    model = "replay"

    def __init__(self):
        self.requests, self.params = [], []

    def complete_many(self, requests, **params):
        self.requests.extend(requests)
        self.params.append(params)
        replies = [_reply_for(r) for r in requests]
        return [None if r == FAIL else r for r in replies]


@pytest.fixture
def off(tmp_path, monkeypatch):
    code = official.load(tmp_path / "official", monkeypatch)
    official.StubOpenAI.calls = []
    official.StubOpenAI.reply = staticmethod(lambda p: RuntimeError("down") if _reply_for(p) == FAIL else _reply_for(p))
    monkeypatch.setattr(code.llm_judge.time, "sleep", lambda s: None)
    monkeypatch.setattr(code.llm_judge, "_QUESTIONS_METADATA", {})
    code.llm_judge.init_vllm_judge()
    return code


def _official_run(off, tmp_path):
    data = [{"question_id": f"q{i}", "question": _question(i), "question_type": t, "question_subtype": s,
             "reference_answer": ref, "old_answer": old, "output_len": 10,
             "prediction": off.parse_utils.parse_model_output(out)}  # eval.py's default_post_process
            for i, (t, s, ref, old, out, _r) in enumerate(CASES)]
    return off.llm_judge.evaluate(data, str(tmp_path / "judge.jsonl"), num_workers=1)


def _examples():
    return [{"id": f"q{i}", "question": _question(i), "answers": [ref], "length": 32768,
             "meta": {"category": t, "question_subtype": s, "old_answer": old}}
            for i, (t, s, ref, old, _o, _r) in enumerate(CASES)]


@pytest.mark.parametrize("parity", ["default", "official"])
def test_scores_equal_the_official_evaluate_for_every_type_and_reply(off, tmp_path, parity):
    metrics, details = _official_run(off, tmp_path)
    judge = ReplayJudge()
    metric = get_metric("memlens_judge", parity=parity, judge=judge, judge_prompts=off.root)
    examples = _examples()
    results = metric.score_many([c[4] for c in CASES], examples)
    assert [r.score for r in results] == [float(d["judge_score"]) for d in details]
    assert [r.extra["task_key"] for r in results] == [d["task_key"] for d in details]
    assert [bool(r.extra.get("auto_zero")) for r in results] == [d["auto_zero"] for d in details]
    # every prompt the official judge sent, and no other (the official retries the failing one)
    assert set(judge.requests) == {c["messages"][0]["content"] for c in official.StubOpenAI.calls}
    assert len(judge.requests) == len(CASES) - 1  # the auto-zeroed answer is never sent
    assert all(c["temperature"] == 0.0 and c["max_tokens"] == 2048 for c in official.StubOpenAI.calls)
    assert judge.params == [mj.JUDGE_PARAMS]
    by_type = {}
    for result, example in zip(results, examples):
        by_type.setdefault(example["meta"]["category"], []).append(result.score)
    assert {t: sum(v) / len(v) for t, v in by_type.items()} == {
        t: m["accuracy"] for t, m in metrics["by_question_type"].items()}
    assert metric.aggregate(results, examples)["score"] == metrics["overall"]["accuracy"]


def test_task_keys_equal_get_task_key(off):
    types = ["information_extraction", "multi_session_reasoning", "temporal_reasoning", "knowledge_update",
             "answer_refusal", "made_up"]
    subtypes = ["", "entity", "previnfo", "arithmetic", "counting", "entity_resolution", "duration_comparison",
                "order_ranking", "temporal_info_extraction", "other"]
    for t in types:
        for s in subtypes:
            for ref in ("Yes", " No ", "yes", "3"):
                assert mj.task_key(t, s, ref) == off.judge_prompts.get_task_key(t, s, ref), (t, s, ref)


def test_prompts_read_from_the_files_equal_build_judge_prompt(off):
    prompts = mj.load_prompts(off.root)
    assert prompts.origin["official"] is True and len(prompts.origin["md5"]) == 7
    keys = list(off.judge_prompts.TASK_CRITERIA) + ["unknown_key"]
    for key in keys:
        for old in ("", "sourdough"):
            args = (key, "Q {x}?", "ref }{", "pred {0}", old)
            assert prompts.request(*args) == off.judge_prompts.build_judge_prompt(*args), key


def test_rule_metrics_equal_parse_utils(off):
    texts = ["The answer is A. Paris", "$460.00", "2024/01/15", "a cat and an owl", "", "None of them", "n/a",
             "I don't know", "Cannot determine.", "the  Eiffel   tower!", "A) option", "Unknown", "insufficient info"]
    for pred in texts:
        for ref in texts[:5] + ["Paris", "460.00"]:
            assert rules.sub_em(pred, ref) == off.parse_utils.sub_em(pred, ref), (pred, ref)
            assert rules.token_f1(pred, ref) == off.parse_utils.f1_score(pred, ref)[0], (pred, ref)
        assert rules.is_refusal(pred) == off.parse_utils.is_insufficient_information(pred), pred
        assert mj.parse_model_output(pred) == off.parse_utils.parse_model_output(pred)
    for raw in (CASES[1][4], CASES[2][4], "<|begin_of_box|>B<|end_of_box|>", LONG, TRUNCATED):
        assert mj.judge_text(mj.parse_model_output(raw))[0] == off.parse_utils.normalize_for_judge(
            off.parse_utils.parse_model_output(raw))["text"]


def test_without_a_judge_the_rules_stand_in_and_say_so():
    metric = get_metric("memlens_judge")
    examples = _examples()
    results = metric.score_many([c[4] for c in CASES], examples)
    assert results[0].score == 1.0 and results[14].score == 1.0 and results[13].score == 0.0
    agg = metric.aggregate(results, examples)
    assert "no judge configured" in agg["note"] and 0 <= agg["rules"]["calibration"] <= 1


def test_a_judge_without_prompts_names_the_fetch_command():
    with pytest.raises(ValueError, match="mmlb fetch memlens_judge_prompts"):
        get_metric("memlens_judge", judge=ReplayJudge()).score("x", _examples()[0])


def test_prompt_files_not_in_the_official_form_are_named(tmp_path):
    with pytest.raises(mj.JudgePromptsError, match="mmlb fetch memlens_judge_prompts"):
        mj.load_prompts(tmp_path)
    folder = tmp_path / "judge_prompts"
    folder.mkdir()
    (folder / "base.py").write_text("QA_BENCHMARK_JUDGE_PROMPT = 'x {task_criteria} {examples}'\n")
    (folder / "__init__.py").write_text("def build_judge_prompt(a):\n    return a\n")
    with pytest.raises(mj.JudgePromptsError, match="information_extraction.py"):
        mj.load_prompts(tmp_path)
