"""Judge client, summarisation judge and LLM answer extraction against a loopback server."""
from __future__ import annotations

import json
import math

import pytest

from fake_openai import FakeOpenAI
from mmlbdata.evaluation.judge import JudgeClient
from mmlbdata.evaluation.metrics import get_metric
from mmlbdata.evaluation.metrics.summ import summ_prompts
from mmlbdata.evaluation.prompts import load_prompt


def test_cache_retries_concurrency_and_usage(tmp_path):
    with FakeOpenAI(lambda body: "echo " + body["messages"][-1]["content"], fail_first=2, delay=0.05) as server:
        cache = tmp_path / "cache.jsonl"
        judge = JudgeClient(model="judge-x", base_url=server.base_url, api_key="k", concurrency=3,
                            cache_path=cache, price_in=1.0, price_out=2.0)
        prompts = [f"p{i}" for i in range(8)]
        replies = judge.complete_many(prompts, max_tokens=16)
        assert replies == [f"echo p{i}" for i in range(8)]  # order kept
        assert judge.usage.retries == 2 and judge.usage.calls == 8 and judge.usage.failures == 0
        assert 1 < server.max_in_flight <= 3
        # prompt tokens: 1 word each; completion: 2 words each
        assert (judge.usage.prompt_tokens, judge.usage.completion_tokens) == (8, 16)
        assert judge.usage.cost_usd == pytest.approx((8 * 1.0 + 16 * 2.0) / 1e6)
        sent = len(server.requests)
        # a rerun with a fresh client reads everything from the disk cache: no request
        again = JudgeClient(model="judge-x", base_url=server.base_url, api_key="k", cache_path=cache)
        assert again.complete_many(prompts, max_tokens=16) == replies
        assert len(server.requests) == sent and again.usage.cache_hits == 8
        # another model is another cache key
        other = JudgeClient(model="judge-y", base_url=server.base_url, api_key="k", cache_path=cache)
        other.complete("p0", max_tokens=16)
        assert len(server.requests) == sent + 1


def test_permanent_failure_is_counted_not_raised(tmp_path):
    with FakeOpenAI(lambda body: "x", fail_first=100, fail_status=400) as server:
        judge = JudgeClient(model="m", base_url=server.base_url, api_key="k")
        assert judge.complete("hello") is None
        assert judge.usage.failures == 1 and len(server.requests) == 1  # 400 is not retried


def test_a_lone_surrogate_in_a_reply_or_a_prompt_does_not_stop_the_eval(tmp_path):
    """A judge reply may hold a lone surrogate (JSON's "\\ud800" decodes to one): the official
    runner keeps such a reply (utils.py @22b9f27 L452 reads it, eval_api_batch.py L123 writes it
    with ``json.dumps``' ASCII escapes). The cache writes and reads it back the same, and a prompt
    holding one (a prediction) is a failed call, counted, not an exception."""
    reply = "[Score]: 1 point \ud800"
    cache = tmp_path / "cache.jsonl"
    with FakeOpenAI(lambda body: reply) as server:
        judge = JudgeClient(model="m", base_url=server.base_url, api_key="k", cache_path=cache)
        assert judge.complete_many(["q"], max_tokens=256, temperature=None) == [reply]
        again = JudgeClient(model="m", base_url=server.base_url, api_key="k", cache_path=cache)
        assert again.complete("q", max_tokens=256, temperature=None) == reply and again.usage.cache_hits == 1
        assert judge.complete_many(["pred \ud800"], max_tokens=256) == [None] and judge.usage.failures == 1


def test_summ_prompts_verbatim_and_filled():
    fl = load_prompt("summ_fluency_govreport")
    assert fl.startswith("Please act as an impartial judge and evaluate the fluency")
    assert 'json format: {{"fluency": 1}}' in fl
    for name in ("fluency", "recall", "precision"):
        for variant in ("govreport", "multi_lexsum"):
            assert len(load_prompt(f"summ_{name}_{variant}")) > 2000
    example = {"dataset": "multi_lexsum", "answers": ["Expert text."],
               "meta": json.dumps({"keypoints": ["kp one", "kp two"]})}
    f, r, p = summ_prompts("Summary: My summary.", example)
    assert f.endswith('Text: "My summary."\n') and '{"fluency": 1}' in f
    assert "Key points:\n1. kp one\n2. kp two\n\nSummary: \"My summary.\"" in r
    assert 'Expert summary: "Expert text."' in p and "civil lawsuit" in p


def _summ_responder(body):
    prompt = body["messages"][0]["content"]
    assert body["temperature"] == 0.1 and body["max_tokens"] == 4096
    if "evaluate the fluency" in prompt:
        return 'Reasoning... {"fluency": 1}'
    if "Recall:" in prompt:
        return 'The summary covers 1 and 3. Output: {"recall": 1} ... final {"recall": 2}'
    return 'Sentence 1 ok. {"precision": 3, "sentence_count": 4}'


def test_summ_judge_scores(tmp_path):
    with FakeOpenAI(_summ_responder) as server:
        judge = JudgeClient(model="m", base_url=server.base_url, api_key="k", cache_path=tmp_path / "c.jsonl")
        metric = get_metric("summ_judge", judge=judge)
        ex = {"id": "1", "dataset": "govreport", "answers": ["Expert."],
              "meta": json.dumps({"keypoints": ["a", "b", "c", "d"]})}
        r = metric.score("A summary.", ex)
        # recall 2/4 = 0.5 (last JSON object), precision 3/4; F1 = 2*.5*.75/1.25 = 0.6; x fluency 1
        assert r.extra["recall"] == 0.5 and r.extra["precision"] == 0.75
        assert r.score == pytest.approx(0.6)
        agg = metric.aggregate([r], [ex])
        assert agg["f1"] == pytest.approx(0.6) and agg["judge_failed"] == 0
    # no judge: the row is unscorable, said so, and in no average (a harness run goes on)
    unscored = get_metric("summ_judge").score_many(["x", "y"], [ex, ex])
    assert all(r.extra["unscorable"].startswith("unscorable: summ_judge needs") and r.extra["left_out"] for r in unscored)
    agg = get_metric("summ_judge").aggregate(unscored, [ex, ex])
    assert math.isnan(agg["score"]) and agg["unscorable"] == 2 and "needs an LLM judge" in agg["note"]


def test_summ_judge_unparseable_reply_scores_zero(tmp_path):
    with FakeOpenAI(lambda body: "I refuse") as server:
        judge = JudgeClient(model="m", base_url=server.base_url, api_key="k")
        r = get_metric("summ_judge", judge=judge).score(
            "x", {"id": "1", "answers": ["y"], "meta": json.dumps({"keypoints": ["k"]})})
        assert r.score == 0.0 and r.extra["judge_failed"]


def test_mmlongbench_doc_extraction_through_judge():
    def responder(body):
        assert body["messages"][0]["content"] == load_prompt("mmlongbench_doc_extraction")
        analysis = body["messages"][1]["content"]
        assert body["messages"][1]["role"] == "assistant" and analysis.startswith("\n\nQuestion:")
        return "Extracted answer: 18.29%\nAnswer format: Float" if "18" in analysis else "garbage"

    with FakeOpenAI(responder) as server:
        judge = JudgeClient(model="m", base_url=server.base_url, api_key="k")
        metric = get_metric("mmlongbench_doc", extractor=judge)
        exs = [{"id": "a", "question": "share?", "answers": ["0.1829"], "meta": '{"answer_format": "Float"}'},
               {"id": "b", "question": "q?", "answers": ["5"], "meta": '{"answer_format": "Int"}'}]
        results = metric.score_many(["The share is about 18.29 percent of all.", "no idea"], exs)
        assert [r.score for r in results] == [1.0, 0.0]
        assert results[0].parsed == "18.29%" and results[1].parsed == "Failed to extract"


def test_summ_judge_keypoints_from_claims_file(tmp_path):
    from mmlbdata.evaluation.metrics.summ import load_keypoints

    claims = tmp_path / "gov_claims.jsonl"
    claims.write_text(json.dumps({"id": "gov_report_gao-1", "claims": ["a", "b", "c", "d"]}) + "\n")
    table = load_keypoints(claims)
    with FakeOpenAI(_summ_responder) as server:
        judge = JudgeClient(model="m", base_url=server.base_url, api_key="k")
        metric = get_metric("summ_judge", judge=judge, keypoints=table)
        found = {"id": "x1", "dataset": "gov_report", "answers": ["E."], "meta": json.dumps({"record_id": "gao-1"})}
        lost = {"id": "x2", "dataset": "gov_report", "answers": ["E."], "meta": json.dumps({"record_id": "gao-2"})}
        results = metric.score_many(["S.", "S."], [found, lost])
        assert results[0].score == pytest.approx(0.6) and results[1].extra["no_keypoints"]
        assert len(server.requests) == 3  # nothing sent for the example without key points
        assert metric.aggregate(results, [found, lost])["no_keypoints"] == 1


# Lengths match the originals (MMLongBench scripts/eval_gpt4_summ.py as evaluated Python strings,
# MMLongBench-Doc eval/prompt_for_answer_extraction.md); the hashes guard against edits.
PROMPTS = {
    "summ_fluency_govreport": (4838, "89fde636977cc5b6"),
    "summ_fluency_multi_lexsum": (2414, "1ae2a512ceda269a"),
    "summ_recall_govreport": (8367, "bf3b60a53927ff64"),
    "summ_recall_multi_lexsum": (6776, "ae362eeeba9c902a"),
    "summ_precision_govreport": (13836, "a7c4d5985b3f2ad7"),
    "summ_precision_multi_lexsum": (10042, "dd54e53b7f2cec77"),
    "mmlongbench_doc_extraction": (3442, "96a22c3003c22801"),
}


@pytest.mark.parametrize("name", sorted(PROMPTS))
def test_prompts_unchanged(name):
    import hashlib

    text = load_prompt(name)
    assert (len(text), hashlib.sha256(text.encode()).hexdigest()[:16]) == PROMPTS[name]


def test_cache_key_holds_the_endpoint(tmp_path):
    """Two judges behind two URLs with the same model name answer differently: the second must be
    asked, not served the first one's cached reply. The key holds everything that changes an
    answer (endpoint, model, prompt, params), as the official judge is one client per endpoint
    (MMLongBench data.py @22b9f27 ``get_llm_judge_client``: ``base_url=endpoint``)."""
    cache = tmp_path / "cache.jsonl"
    with FakeOpenAI(lambda body: "first") as one, FakeOpenAI(lambda body: "second") as two:
        assert JudgeClient(model="m", base_url=one.base_url, cache_path=cache).complete("q") == "first"
        other = JudgeClient(model="m", base_url=two.base_url, cache_path=cache)
        assert other.complete("q") == "second" and other.usage.cache_hits == 0
        again = JudgeClient(model="m", base_url=one.base_url, cache_path=cache)
        assert again.complete("q") == "first" and again.usage.cache_hits == 1
        assert again.complete("q", max_tokens=7) == "first" and again.usage.calls == 1  # params are in the key
    assert len(one.requests) == 2 and len(two.requests) == 1
