"""MMLongBench's two protocols (``mmlbdata.official.protocol``): v1.0 = EdinburghNLP/MMLongBench @26197d2
(the paper), v1.1 = @22b9f27 (the current code). Every expected value is hand-derived from the
official lines named in each test (files read at those commits); none is produced by the code
under test. The v1.1 document-QA judge runs against a loopback OpenAI-compatible server with a
prompt file in ``utils_prompt.py``'s form (its variable names and placeholders, our own short
text: the official prompts are never copied into the project).
"""
from __future__ import annotations

import argparse
import hashlib
import json

import pytest

from fake_openai import FakeOpenAI
from mmlbdata.official import protocol as protocols
from mmlbdata.evaluation import docqa_judge as dj
from mmlbdata.evaluation.judge import JudgeClient
from mmlbdata.evaluation.metrics import get_metric
from mmlbdata.evaluation.metrics.official import mmlb_parse_output
from tests.smoke import write_built

#: utils_prompt.py's form (@22b9f27: module comments, then triple-quoted strings with these names;
#: the case prompts hold {question}, {reference}, {prediction}); the text is a stand-in
FIXTURE_PROMPTS = '''# a comment line, as the official file starts with
# https://example.invalid/arena
DOC_QA_JUDGE_PROMPT = """Grade the answer. Reply with:
[Scoring Rationale]:
[Score]: x points
[JSON]:
{"answer_score": <integer_value>}

"""

CURRENT_CASE_PROMPT = """[Current Case]
<Question>: {question}
<Standard Answer>: {reference}
<Student Answer>: {prediction}
"""

ASSISTANT_PROMPT = """[Scoring Rationale]:"""

DOC_QA_LIST_JUDGE_PROMPT = """Count the items. {"count": [[count]]}
"""

DOC_QA_LIST_F1_JUDGE_PROMPT = """Count the student's items and the covered ones. Reply with:
[Rationale]:
[JSON]:
{
    "student_answer_count": <integer_value>,
    "covered_count": <integer_value>
}

"""

CURRENT_LIST_CASE_PROMPT = """[Current Case]
<Question>: {question}
<Standard Answer>: {reference}
<Student Answer>: {prediction}
"""
'''


@pytest.fixture
def prompt_file(tmp_path):
    path = tmp_path / "mmlb_judge_prompts" / "utils_prompt.py"
    path.parent.mkdir()
    path.write_text(FIXTURE_PROMPTS, encoding="utf-8")
    return path


# -- the switch ------------------------------------------------------------------------------------
def test_protocol_names_and_default():
    assert protocols.get().name == "v1.1" == protocols.get("1.1").name
    assert protocols.get("v1.0").commit.startswith("26197d2")
    assert protocols.get("v1.1").commit.startswith("22b9f27")
    with pytest.raises(ValueError, match="protocol must be one of"):
        protocols.get("v2")


# -- parse_output (utils.py) ------------------------------------------------------------------------
# v1.0: utils.py @26197d2 L123-124 `(?:{prefix})(.*)(?:\n|$)` IGNORECASE, then `(?:^)(.*)(?:\n|$)`;
# v1.1: utils.py @22b9f27 L125-126 the same without the line end, IGNORECASE | DOTALL;
# both then strip, drop one repeated prefix (lstrip_string) and strip again.
@pytest.mark.parametrize("output, v10, v11", [
    ("Answer: Paris\nIt is the capital.", "Paris", "Paris\nIt is the capital."),
    ("I think so.\nanswer: Paris\nsure", "Paris", "Paris\nsure"),
    ("Answer:\nParis", "", "Paris"),          # v1.0: the prefix's line is empty
    ("\nParis", "", "Paris"),                 # v1.0: no prefix, the first line is empty
    ("Paris\nRome", "Paris", "Paris\nRome"),  # no prefix: the first line, or everything
    ("Answer: Answer: 42", "42", "42"),       # the repeated prefix is dropped in both
])
def test_parse_output_of_each_protocol(output, v10, v11):
    assert mmlb_parse_output(output, "Answer:", first_line=True) == v10
    assert mmlb_parse_output(output, "Answer:", first_line=False) == v11


def test_docqa_rules_read_the_parsed_answer_of_the_protocol():
    """data.py load_doc_qa docqa_post_process scores only parse_output's text (@26197d2 L456-459,
    @22b9f27 L466-470): "Answer:\\n2019" is "" under v1.0 (0) and "2019" under v1.1 (Integer: 1)."""
    example = {"answers": ["2019"], "meta": {"answer_format": "Integer"}}
    v10 = get_metric("docqa", parity="official", protocol="v1.0").score("Answer:\n2019", example)
    v11 = get_metric("docqa", parity="official", protocol="v1.1").score("Answer:\n2019", example)
    assert (v10.score, v10.parsed) == (0.0, "") and (v11.score, v11.parsed) == (1.0, "2019")


def test_empty_parsed_outputs_are_left_out_in_parity_mode_only():
    """eval_api_batch.py (@26197d2 L115, @22b9f27 L114) averages only results whose parsed_output
    (parse_output of "Answer:" + output) is not "": "" and "  " are left out in both protocols, and
    "\\nParis" under v1.0, where the prefix's line is empty."""
    example = {"answers": ["Paris"]}
    preds = ["Paris", "", "  ", "\nParis"]
    for protocol, kept in (("v1.1", [1.0, 1.0]), ("v1.0", [1.0])):
        metric = get_metric("sub_em", parity="official", protocol=protocol)
        results = metric.score_many(preds, [example] * 4)
        assert [r.score for r in results if not r.extra.get("left_out")] == kept
        agg = metric.aggregate(results, [example] * 4)
        assert agg["score"] == 1.0 and agg["n"] == len(kept) and agg["left_out"] == 4 - len(kept)
    default = get_metric("sub_em")
    results = default.score_many(preds, [example] * 4)
    assert default.aggregate(results, [example] * 4) == {"score": 0.5, "n": 4}


# -- the judge's reply (utils.py @22b9f27) ----------------------------------------------------------
@pytest.mark.parametrize("reply, official, default", [
    # parse_judge_output L371-373: "[Score]: N point(s)" first
    ("[Scoring Rationale]: same value.\n[Score]: 1 point\n[JSON]:\n{\"answer_score\": 1}", 1.0, 1.0),
    ("[Scoring Rationale]: no.\n[Score]: 0 points\n[JSON]:\n{\"answer_score\": 0}", 0.0, 0.0),
    # no score line: robust_json_extraction L404-409 decodes from the first "{" after "[JSON]:"
    ("[JSON]:\n{\"answer_score\": 1, \"note\": \"x\"}", 1.0, 1.0),
    # JSON only, no marker: L414-419, the key's number by regex, as a float
    ("{\"answer_score\": 1}", 1.0, 1.0),
    # malformed JSON after the marker: raw_decode raises, the regex still finds the key
    ("[JSON]:\n{\"answer_score\": 1,,}", 1.0, 1.0),
    # nothing to read: eval_docqa_score_with_llm_judge L460-461 -> 0.0
    ("I cannot grade this.", 0.0, 0.0),
    ("", 0.0, 0.0),
    # out of the rubric's 0/1: official passes it through, the default clamps
    ("[Score]: 3 points", 3.0, 1.0),
])
def test_single_answer_replies_to_scores(reply, official, default):
    case = {"question": "q", "reference": "2019", "is_list": False, "parsed": "2019"}
    from mmlbdata.evaluation.metrics.mmlongbench import judged_result

    assert judged_result(reply, case, official=True).score == official
    assert judged_result(reply, case, official=False).score == default


def test_list_f1_from_the_judge_counts():
    """eval_docqa_list_score_with_llm_judge L483-493: recall = covered / len(json.loads(gt)),
    precision = covered / student_answer_count, F1 clipped to [0, 1]; covered <= 0 -> 0."""
    assert dj.list_f1_official({"student_answer_count": 3, "covered_count": 2}, 4) == pytest.approx(4 / 7)
    assert dj.list_f1_official({"student_answer_count": 3, "covered_count": 3}, 3) == 1.0
    # covered > student: precision 3, recall 1 -> 2*3/4 = 1.5, clipped to 1.0
    assert dj.list_f1_official({"student_answer_count": 1, "covered_count": 3}, 3) == 1.0
    assert dj.list_f1_official({"student_answer_count": 2, "covered_count": 0}, 3) == 0.0
    assert dj.list_f1_official(None, 3) == 0.0  # cover_key fails -> 0.0 (L493)
    with pytest.raises(ZeroDivisionError):  # official: student 0 with covered > 0 stops the run
        dj.list_f1_official({"student_answer_count": 0, "covered_count": 2}, 3)
    assert dj.list_f1({"student_answer_count": 0, "covered_count": 2}, 3) == 0.0
    assert dj.list_f1({"student_answer_count": "3", "covered_count": "2"}, 4) == pytest.approx(4 / 7)


def test_list_gold_is_read_only_when_the_f1_needs_it():
    """utils.py @22b9f27 L483-493 (eval_docqa_list_score_with_llm_judge): `json.loads(gt)` runs
    only inside `if count > 0` (L486-487), so a List gold that is no JSON (`paris`) with a judge
    reply of covered_count 0, or without both counts, scores 0.0 and the official run goes on;
    only covered_count > 0 reaches json.loads and raises."""
    from mmlbdata.evaluation.metrics.mmlongbench import judged_result

    case = {"question": "q", "reference": "paris", "is_list": True, "parsed": "paris"}
    for reply in ('[JSON]: {"student_answer_count": 1, "covered_count": 0}', "no counts"):
        result = judged_result(reply, case, official=True)
        assert result.score == 0.0 and "official_crash" not in result.extra
    crashed = judged_result('[JSON]: {"student_answer_count": 1, "covered_count": 1}', case, official=True)
    assert crashed.score == 0.0 and "official_crash" in crashed.extra


@pytest.mark.parametrize("reply, counts", [
    ("[Rationale]: two of four.\n[JSON]:\n{\n    \"student_answer_count\": 3,\n    \"covered_count\": 2\n}", (3, 2)),
    ("{\"student_answer_count\": 3, \"covered_count\": 2}", (3.0, 2.0)),  # regex fallback: floats
    ("[JSON]: {\"student_answer_count\": 3, \"covered_count\": 2", (3.0, 2.0)),  # truncated JSON
    ("[JSON]: {\"covered_count\": 2}", None),  # one key only: cover_key fails
    ("", None),
])
def test_list_replies_to_counts(reply, counts):
    found = dj.list_counts(reply)
    assert (None if found is None else (found["student_answer_count"], found["covered_count"])) == counts


# -- the prompt file -------------------------------------------------------------------------------
def test_prompt_file_read_without_running_it(prompt_file, tmp_path):
    prompts = dj.load_prompts(prompt_file.parent.parent)  # the `mmlb fetch --dest` folder works too
    assert prompts.origin["md5"] == hashlib.md5(prompt_file.read_bytes()).hexdigest()
    assert prompts.origin["official"] is False and prompts.origin["commit"].startswith("22b9f27")
    text = prompts.request("Based on Document x, answer the following question. Who?", "Ann", "Ann {x}", False)
    assert text == ('Grade the answer. Reply with:\n[Scoring Rationale]:\n[Score]: x points\n[JSON]:\n'
                    '{"answer_score": <integer_value>}\n\n[Current Case]\n<Question>: Based on Document x, '
                    'answer the following question. Who?\n<Standard Answer>: Ann\n<Student Answer>: Ann {x}\n')
    hostile = tmp_path / "hostile.py"
    hostile.write_text("import os\nos.remove('x')\nDOC_QA_JUDGE_PROMPT = f'{os}'\n")
    with pytest.raises(dj.JudgePromptsError, match="hostile.py: no string assignment for DOC_QA_JUDGE_PROMPT"):
        dj.load_prompts(hostile)
    with pytest.raises(dj.JudgePromptsError, match="mmlb fetch mmlb_judge_prompts"):
        dj.load_prompts(tmp_path / "nowhere")


def test_the_registry_pins_the_official_file():
    origin = dj.pinned_origin()
    assert origin["repository"] == "EdinburghNLP/MMLongBench" and origin["commit"] == protocols.get("v1.1").commit
    assert origin["url"].endswith("/utils_prompt.py") and origin["size"] == 13761 and len(origin["md5"]) == 32


# -- the judge end to end (loopback OpenAI-compatible server) ---------------------------------------
REPLIES = {  # student answer -> the judge's reply
    "2019": "[Scoring Rationale]: equal.\n[Score]: 1 point\n[JSON]:\n{\"answer_score\": 1}",
    "1999": "{\"answer_score\": 0}",
    "blue": "[JSON]:\n{{{ not json",
    "nothing": "",
    "a and b": "[Rationale]: both.\n[JSON]:\n{\"student_answer_count\": 3, \"covered_count\": 2}",
}


def _responder(body):
    student = body["messages"][0]["content"].split("<Student Answer>: ", 1)[1].rstrip("\n")
    return REPLIES[student]


EXAMPLES = [
    {"id": "r0", "dataset": "mmlongdoc", "question": "What year?", "answers": ["2019"],
     "meta": {"answer_format": "Integer", "doc_name": "4055915-long-name-here"}},
    {"id": "r1", "dataset": "longdocurl", "question": "Based on Document abc, answer the following question. What year?",
     "answers": ["2019"], "meta": {"answer_format": "Integer"}},
    {"id": "r2", "dataset": "slidevqa", "question": "Colour?", "answers": ["red"], "meta": {"answer_format": "String", "doc_name": "d"}},
    {"id": "r3", "dataset": "mmlongdoc", "question": "Why?", "answers": ["x"], "meta": {"answer_format": "String", "doc_name": "d"}},
    {"id": "r4", "dataset": "mmlongdoc", "question": "Which?", "answers": ["['a', 'b', 'c', 'd']"],
     "meta": {"answer_format": "List", "doc_name": "d", "answer_json": "[\"a\", \"b\", \"c\", \"d\"]"}},
]
PREDICTIONS = ["2019", "Answer: 1999", "blue", "nothing", "a and b"]


def test_judge_through_a_loopback_server(prompt_file, tmp_path):
    with FakeOpenAI(_responder) as server:
        judge = JudgeClient(model="judge-x", base_url=server.base_url, api_key="k", cache_path=tmp_path / "c.jsonl")
        metric = get_metric("docqa", parity="official", judge=judge, judge_prompts=prompt_file)
        results = metric.score_many(PREDICTIONS, EXAMPLES)
        assert [r.score for r in results] == [1.0, 0.0, 0.0, 0.0, pytest.approx(4 / 7)]
        # utils.py @22b9f27 L443-448: one user message, max_tokens=256, no temperature
        assert all(r["max_tokens"] == 256 and "temperature" not in r and r["model"] == "judge-x"
                   and len(r["messages"]) == 1 and r["messages"][0]["role"] == "user" for r in server.requests)
        contents = [r["messages"][0]["content"] for r in server.requests]
        # load_doc_qa_with_llm_judge L521: the judge sees the mapped question (doc name cut to 15)
        assert any("<Question>: Based on Document 4055915-long-na, answer the following question. What year?\n"
                   "<Standard Answer>: 2019\n<Student Answer>: 2019\n" in c for c in contents)
        assert any("<Question>: Based on Document abc, answer the following question. What year?\n"
                   "<Standard Answer>: 2019\n<Student Answer>: 1999\n" in c for c in contents)
        # a List answer: the list prompt, the release's JSON as the reference
        assert any(c.startswith("Count the student's items") and '<Standard Answer>: ["a", "b", "c", "d"]' in c
                   for c in contents)
        agg = metric.aggregate(results, EXAMPLES)
        assert agg["scorer"].startswith("LLM judge (judge-x") and agg["judge_failed"] == 0
        # data.py @22b9f27 load_data L632-636: text_doc (load_text_doc_qa) keeps the rules, no call
        calls = len(server.requests)
        text_doc = {**EXAMPLES[0], "id": "t0", "dataset": "text_doc"}
        [ruled] = metric.score_many(["Answer: 2019"], [text_doc])
        assert ruled.score == 1.0 and "judge_reply" not in ruled.extra and len(server.requests) == calls
        calls = len(server.requests)
        again = get_metric("docqa", parity="official", judge=judge, judge_prompts=prompt_file)
        assert [r.score for r in again.score_many(PREDICTIONS, EXAMPLES)] == [r.score for r in results]
        assert len(server.requests) == calls  # cached: a rerun costs nothing


def test_failed_judge_call_scores_zero_and_is_counted(prompt_file, tmp_path):
    with FakeOpenAI(lambda body: "x", fail_first=100, fail_status=400) as server:
        judge = JudgeClient(model="j", base_url=server.base_url, api_key="k", max_retries=0)
        for parity in ("official", "default"):
            metric = get_metric("docqa", parity=parity, judge=judge, judge_prompts=prompt_file)
            [result] = metric.score_many(["2019"], EXAMPLES[:1])
            assert result.score == 0.0 and result.extra["judge_failed"]
            assert ("official_crash" in result.extra) == (parity == "official")


def test_without_a_judge_v11_falls_back_to_the_rules_and_says_so():
    metric = get_metric("docqa", protocol="v1.1")
    results = metric.score_many(["2019"], EXAMPLES[:1])
    agg = metric.aggregate(results, EXAMPLES[:1])
    assert results[0].score == 1.0 and agg["scorer"].startswith("rules") and "no judge configured" in agg["note"]
    assert "note" not in get_metric("docqa", protocol="v1.0").aggregate(results, EXAMPLES[:1])


def test_mmlb_eval_with_the_judge_records_its_origin(prompt_file, tmp_path, capsys, monkeypatch):
    from mmlbdata.cli import eval as eval_cmd

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    rows = [{"id": e["id"], "dataset": e["dataset"], "length": 8192, "num_tokens": 10, "prompt": "p",
             "images": [], "question": e["question"], "answers": e["answers"], "metric": "docqa",
             "meta": json.dumps(e["meta"])} for e in EXAMPLES]
    data = write_built(tmp_path / "built", {"mmlongdoc_8k": rows})
    preds = tmp_path / "p.jsonl"
    preds.write_text("".join(json.dumps({"id": e["id"], "config": "mmlongdoc_8k", "prediction": p}) + "\n"
                             for e, p in zip(EXAMPLES, PREDICTIONS)))
    parser = argparse.ArgumentParser()
    eval_cmd.register(parser.add_subparsers())
    with FakeOpenAI(_responder) as server:
        args = parser.parse_args(["eval", str(preds), "--data", str(data), "--out", str(tmp_path / "o"), "--no-plot",
                                  "--judge-base-url", server.base_url, "--judge-model", "judge-x",
                                  "--judge-prompts", str(prompt_file)])
        assert args.func(args) == 0
    report = json.loads((tmp_path / "o" / "report.json").read_text())
    assert report["protocol"]["name"] == "v1.1" and report["docqa_judge"]["model"] == "judge-x"
    assert report["docqa_judge"]["prompts"]["md5"] == hashlib.md5(prompt_file.read_bytes()).hexdigest()
    assert report["configs"]["mmlongdoc_8k"]["score"] == pytest.approx((1 + 4 / 7) / 5)
    out = capsys.readouterr().out
    assert "NOT the pinned official file" in out and "judge judge-x: 5 calls" in out
    args = parser.parse_args(["eval", str(preds), "--data", str(data), "--out", str(tmp_path / "r"), "--no-plot",
                              "--protocol", "v1.0"])
    assert args.func(args) == 0
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    assert report["protocol"]["name"] == "v1.0" and "docqa_judge" not in report
    assert report["configs"]["mmlongdoc_8k"]["metrics"]["docqa"]["scorer"].startswith("rules")


@pytest.mark.parametrize("reply", [
    "[JSON]: " + "{" * 100_000, "[JSON]: " + "[" * 100_000, "[Score]: " + "9" * 5000 + " points",
    '[JSON]: {"answer_score": ' + "9" * 5000 + "}", '{"student_answer_count": [], "covered_count": {}}',
    '[JSON]: {"student_answer_count": "x", "covered_count": 2}', '[JSON]: {"answer_score": NaN}',
    '[JSON]: {"student_answer_count": -1, "covered_count": 1}', "\x00\ud800", None,
])
def test_no_judge_reply_crashes_the_scorer(reply):
    from mmlbdata.evaluation.metrics.mmlongbench import judged_result

    for is_list in (False, True):
        case = {"question": "q", "reference": '["a", "b"]', "is_list": is_list, "parsed": "a"}
        for official in (True, False):
            score = judged_result(reply, case, official).score
            assert isinstance(score, float) and (official or 0.0 <= score <= 1.0)


# -- builds -----------------------------------------------------------------------------------------
def test_viquae_rows_with_a_quote_in_the_image_path_are_dropped_under_v11(tmp_path):
    """data.py @22b9f27 L47-55 (load_vrag, since bf8fbae): records whose image path holds '"' are
    filtered out before the paper's id draw; v1.0 (@26197d2) keeps them."""
    from mmlbdata.core.report import BuildReport
    from mmlbdata.sources import mmlb_release as release

    path = tmp_path / "viquae_K8_dep6.jsonl"
    records = [{"id": f"q{i}", "question": "Who?", "answer": ["A"], "image": name, "ctxs": []}
               for i, name in enumerate(["a.jpg", 'The "Boss".jpg', "c.jpg"])]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    report = BuildReport()
    v11 = [row.official_id for _, row in release.read_release_file(path, "vrag", report)]
    assert v11 == ["q0", "q2"]
    assert [(s["record"], "double quote" in s["reason"]) for s in report.to_dict()["skipped"]] == [("line 2", True)]
    assert [row.official_id for _, row in release.read_release_file(path, "vrag", BuildReport(), protocol="v1.0")] \
        == ["q0", "q1", "q2"]
    drawn = [row.official_id for _, row in release.read_release_file(path, "vrag", BuildReport(), paper=1)]
    assert drawn == sorted(release.paper_ids(["q0", "q2"], 1))  # the draw sees only the kept ids


def test_viquae_quote_filter_applies_to_the_tsv_release_too(tmp_path):
    """The same load_vrag filter (data.py @22b9f27 L47-55) on the VLMEvalKit TSV of the extended
    release: a ViQuAE row whose image path holds '"' is dropped under v1.1 and reported with its row."""
    from test_mmlb_release_tsv import row, write_tsv

    from mmlbdata.core.report import BuildReport
    from mmlbdata.sources import mmlb_release_tsv as tsv

    head = ("Use the given documents to write a concise and short answer to the question about the entity shown "
            "in the image. Write your answer in the following format:\nAnswer: [answer]\n\nDocument (Title: T): x"
            "\n\nQuestion: <image token>Who?")
    rows = [row(i, f"q{i}", head, "A", [name], "vrag_512_sr50", "vrag", "viquae", {"question": "<image>Who?", "answer": ["A"]})
            for i, name in enumerate(["viquae/a.jpg", 'viquae/The "Boss".jpg', "viquae/c.jpg"])]
    path = tsv.tsv_path(tmp_path, 524288)
    write_tsv(path, rows)
    report = BuildReport()
    assert [r.official_id for _, r in tsv.read_tsv(path, "viquae", report)] == ["q0", "q2"]
    assert [(s["record"], "double quote" in s["reason"]) for s in report.to_dict()["skipped"]] == [("row 2", True)]
    kept = [r.official_id for _, r in tsv.read_tsv(path, "viquae", BuildReport(), protocol="v1.0")]
    assert kept == ["q0", "q1", "q2"]


def test_viquae_quote_filter_applies_to_the_recipe_source(tmp_path, real_data):
    """And on the ViQuAE release our recipe reads (the question's image file name), under v1.1 only."""
    import shutil

    from mmlbdata.core.report import BuildReport
    from mmlbdata.core.store import ImageStore
    from mmlbdata.sources.viquae import read_viquae

    photo = sorted((real_data / "coco_mini" / "val2017").glob("*.jpg"))[0]
    (tmp_path / "images").mkdir()
    records = []
    for i, name in enumerate(["a.jpg", 'The "Boss".jpg']):
        shutil.copyfile(photo, tmp_path / "images" / name)
        records.append({"id": f"t{i}", "image": name, "input": "Who?", "original_question": "Who is it?",
                        "output": {"original_answer": "A", "answer": ["A"], "provenance": [{"wikipedia_id": "1"}]}})
    (tmp_path / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    report = BuildReport()
    assert [q.id for q in read_viquae(tmp_path, ImageStore(tmp_path / "s"), report, drop_quoted=True)] == ["t0"]
    assert "double quote" in report.to_dict()["skipped"][0]["reason"]
    assert [q.id for q in read_viquae(tmp_path, ImageStore(tmp_path / "s"), BuildReport())] == ["t0", "t1"]


def test_build_protocol_goes_to_prompts_manifest_and_card(tmp_path, real_data, tokenizer_path):
    from test_mmlb_release import write_release

    from mmlbdata.cli import main
    from mmlbdata.dataset.writer import read_manifest

    root = tmp_path / "release"
    write_release(root, real_data)
    common = ["mmlongdoc_8k", "--source", f"mmlb_release={root}", "--tokenizer", str(tokenizer_path),
              "--no-progress", "--cache-dir", str(tmp_path / "cache")]
    prompts = {}
    for protocol in ("v1.1", "v1.0"):
        out = tmp_path / protocol
        assert main(["build", *common, "--out", str(out), "--protocol", protocol]) == 0
        assert read_manifest(out, "mmlongdoc_8k")["protocol"] == protocol
        assert main(["card", str(out), "--benchmark", "mmlongbench", "--no-plot"]) == 0
        assert f"`protocol={protocol}`" in (out / "README.md").read_text()
        import pyarrow.parquet as pq

        from mmlbdata.dataset.stats import shard_files

        [shard] = shard_files(out, "mmlongdoc_8k")
        prompts[protocol] = pq.read_table(shard, columns=["prompt"]).column("prompt").to_pylist()[0]
    # data.py @22b9f27 L436/L449 vs @26197d2 L426/L439, the release's page_list docs/4055915/page{0,1,2}.png
    assert "Document 4055915: <image>\n\nDocument 4055915: <image>\n\nDocument 4055915: <image>\n\n" in prompts["v1.1"]
    assert "Document 4055915 (page 0): <image>\n\nDocument 4055915 (page 1): <image>\n\n" in prompts["v1.0"]


def test_evaluate_config_takes_the_protocol():
    """The Python API: under v1.0 parity mode "Answer:\\n2019" parses to "" (utils.py @26197d2 L123)
    and is left out of the averages (eval_api_batch.py L115); under v1.1 it scores 1."""
    from mmlbdata.evaluation.evaluate import evaluate_config

    examples = [{"id": "a", "dataset": "mmlongdoc", "length": 8192, "metric": "docqa", "answers": ["2019"],
                 "meta": {"answer_format": "Integer"}}]
    preds = {"a": {"prediction": "Answer:\n2019"}}
    official = {"*": {"parity": "official"}}
    v11 = evaluate_config([dict(e) for e in examples], preds, official)
    v10 = evaluate_config([dict(e) for e in examples], preds, official, protocol="v1.0")
    assert (v11["score"], v11["n"]) == (1.0, 1)
    assert (v10["score"], v10["n"], v10["left_out"]) == (0.0, 0, 1)


def test_lmms_eval_hooks_follow_mmlb_protocol(monkeypatch):
    from mmlbdata.exports import lmms_eval_hooks as hooks

    monkeypatch.setenv("MMLB_PARITY", "official")
    example = {"answers": ["2019"], "meta": {"answer_format": "Integer"}}
    for protocol, score in (("v1.0", 0.0), ("v1.1", 1.0)):  # "Answer:\n2019": see test_docqa_rules_read_...
        monkeypatch.setenv("MMLB_PROTOCOL", protocol)
        metric = hooks.get_metric("docqa", ("mmlongdoc", 8192))
        assert metric.protocol.name == protocol and metric.score("Answer:\n2019", example).score == score


def test_eval_flags_a_build_of_the_other_protocol(tmp_path):
    """A config built under v1.0 (page ids: data.py @26197d2 L439) scored under v1.1 (parse_output
    to the end, utils.py @22b9f27 L125-126; the judge) follows neither commit: the report says so
    and names the flag that matches the build; the same protocol raises nothing."""
    from mmlbdata.evaluation.evaluate import evaluate
    from mmlbdata.evaluation.report import render
    from mmlbdata.dataset.writer import write_manifest

    rows = [{"id": "a", "dataset": "mmlongdoc", "length": 8192, "num_tokens": 10, "prompt": "p", "images": [],
             "question": "q", "answers": ["2019"], "metric": "docqa", "meta": json.dumps({"answer_format": "Integer"})}]
    data = write_built(tmp_path / "built", {"mmlongdoc_8k": rows})
    write_manifest(data, "mmlongdoc_8k", {"config": "mmlongdoc_8k", "protocol": "v1.0"})
    preds = tmp_path / "p.jsonl"
    preds.write_text(json.dumps({"id": "a", "config": "mmlongdoc_8k", "prediction": "2019"}) + "\n")
    report = evaluate(preds, data)
    assert report["configs"]["mmlongdoc_8k"]["problems"]["protocol_mismatch"] == {"built": "v1.0", "scored": "v1.1"}
    assert "built under MMLongBench protocol v1.0, scored under v1.1" in render(report)
    assert "protocol_mismatch" not in evaluate(preds, data, protocol="v1.0")["configs"]["mmlongdoc_8k"]["problems"]


def test_judge_reads_the_first_gold_and_the_parsed_text_in_both_modes(prompt_file):
    """utils.py @22b9f27 L440: one reference (data.py L534 ``example["answer"]``) and the parsed
    prediction (L535) go to the judge; the default sends the same ``answers[0]`` and the text after
    the model's own prefix, not a max over golds or over raw/parsed text: the deviations rows say so."""
    from mmlbdata.official.deviations import DEVIATIONS

    sent = []

    def responder(body):
        sent.append(body["messages"][0]["content"])
        return "[Score]: 1 point"

    example = {"id": "g", "dataset": "mmlongdoc", "question": "Q?", "answers": ["first", "second"],
               "meta": {"answer_format": "String", "doc_name": "d"}}
    with FakeOpenAI(responder) as server:
        judge = JudgeClient(model="j", base_url=server.base_url, api_key="k")
        get_metric("docqa", judge=judge, judge_prompts=prompt_file).score("Let me think. Answer: second", example)
    assert sent[-1].endswith("<Standard Answer>: first\n<Student Answer>: second\n")
    rows = {d.input: d.default for d in DEVIATIONS if d.metric == "docqa"}
    assert "v1.1 judge is sent `answers[0]` in both modes" in rows["several gold answers"]
    assert any("judge: it reads the text after the model's own first prefix only" in v for v in rows.values())


def test_lmms_eval_hooks_leave_out_what_mmlb_eval_leaves_out(monkeypatch):
    """eval_api_batch.py @22b9f27 L114 / @26197d2 L115 average only results whose parsed_output is
    not "": "" beside a right answer is 1.0 for sub_em as for docqa under MMLB_PARITY=official (the
    hooks' plain mean used to count it, 0.5, while docqa's own aggregate left it out); the default
    counts it (0.5) for both."""
    from mmlbdata.exports import lmms_eval_hooks as hooks

    docs = {"docqa": ("2019", {"answer_format": "Integer"}), "sub_em": ("Paris", {})}
    for parity, expected in (("official", 1.0), ("default", 0.5)):
        monkeypatch.setenv("MMLB_PARITY", parity)
        for metric, (gold, meta) in docs.items():
            doc = {"id": "a", "dataset": "mmlongdoc", "length": 8192, "answers": [gold], "metric": metric,
                   "meta": json.dumps(meta)}
            items = [hooks.process_results(doc, [gold])["mmlb_score"],
                     hooks.process_results({**doc, "id": "b"}, [""])["mmlb_score"]]
            assert hooks.aggregate(items) == expected, (parity, metric)
            if parity == "official":  # one counted item: no spread, in a resample or analytically
                assert hooks.aggregate_stderr(items) == 0.0, metric


def test_judge_question_always_gets_the_document_prefix(prompt_file):
    """data.py @22b9f27 L521 (``load_doc_qa_with_llm_judge``; L454 ``load_doc_qa`` the same) prefixes
    every released question with "Based on Document {doc_id:.15}, answer the following question. ",
    with no check of what the question starts with: a release row whose question already starts so
    is sent to the judge with the prefix twice, as the official judge sees it."""
    sent = []

    def responder(body):
        sent.append(body["messages"][0]["content"])
        return "[Score]: 1 point"

    question = "Based on Document d, answer the following question. Who?"
    example = {"id": "p", "dataset": "mmlongdoc", "question": question, "answers": ["x"],
               "meta": {"answer_format": "String", "doc_name": "d"}}
    with FakeOpenAI(responder) as server:
        judge = JudgeClient(model="j", base_url=server.base_url, api_key="k")
        get_metric("docqa", judge=judge, judge_prompts=prompt_file).score("Answer: x", example)
    assert f"<Question>: Based on Document d, answer the following question. {question}\n" in sent[-1]
