"""A MemLens release holding every unusual record the official loader reads (tests/memlens_fixture.py
``UNUSUAL``: image URLs, null and empty dates, a null role, an unknown ability, number answers, no
sessions, a large photo), built and scored beside the official code at fd4c8d7 run unchanged on the
same files (tests/memlens_official.py): ``data.py`` (both prompt modes), ``eval_api.py`` (which
items reach scoring), ``llm_judge.py`` (the judge's prompts and request body) and
``vlm_models/model_utils.py`` (the image size the runners send)."""
from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

from mmlbdata.core.tokens import image_tokens
from mmlbdata.dataset.build import build_configs
from mmlbdata.evaluation.evaluate import evaluate_config
from mmlbdata.evaluation.judge import JudgeClient
from mmlbdata.evaluation.metrics import get_metric
from mmlbdata.official.memlens_run import MAX_IMAGE_SIZE, sent_size
from mmlbdata.runner.chat import image_bytes
from mmlbdata.runner.conversation import chat_messages
from mmlbdata.sources import fetch as F
from mmlbdata.sources.memlens import url_image_name

sys.path.insert(0, str(Path(__file__).parent))
import memlens_fixture as fixture  # noqa: E402
import memlens_official as official  # noqa: E402
from fake_openai import FakeOpenAI  # noqa: E402
from loopback_http import LoopbackServer  # noqa: E402

CONFIG = "memlens_32k"


def _fetch_url_images(sources: Path) -> F.FetchReport:
    """``mmlb fetch memlens:url_images`` into ``sources`` (the registry's part, its follow-up step)."""
    registry = F.load_registry()
    parts = F.select_parts(registry, ["memlens:url_images"])
    return F.fetch(registry, parts, sources, F.FetchOptions(progress=False, retries=0))


@pytest.fixture(scope="module")
def unusual(tmp_path_factory, real_data, tokenizer_path):
    """(release, built folder, build result, URL -> bytes): the URL images fetched from a loopback
    server by the real fetch step, then memlens_32k built."""
    sources = tmp_path_factory.mktemp("sources")
    with LoopbackServer() as server:
        root, served = fixture.write_unusual_release(sources / "memlens", real_data, server.url("/photos/"))
        server.files.update({f"/photos/{name}": data for name, data in served.items()})
        report = _fetch_url_images(sources)
        by_url = {server.url(f"/photos/{name}"): data for name, data in served.items()}
    assert report.ok, report.summary()
    out = tmp_path_factory.mktemp("built")
    [result] = build_configs([CONFIG], {"memlens": root}, out, progress=False, tokenizer=tokenizer_path)
    assert result.ok, result.error
    return root, out, result, by_url


def _rows(out: Path, monkeypatch, tmp_path) -> dict[str, dict]:
    import datasets

    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf"))
    ds = datasets.load_dataset(str(out), CONFIG, split="test").cast_column(
        "images", datasets.List(datasets.Image(decode=False)))
    return {row["id"]: row for row in ds}


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _official_digest(path_or_url: str, by_url: dict[str, bytes]) -> str:
    """An image of the official image list: a URL is the file served there, a path the file."""
    return _digest(by_url[path_or_url] if path_or_url in by_url else Path(path_or_url).read_bytes())


def _ours(messages, images) -> list:
    return [(m["role"], [("text", c["text"]) if c["type"] == "text" else ("image", _digest(image_bytes(images[c["index"]])))
                         for c in m["content"]]) for m in messages]


def _theirs(messages, by_url) -> list:
    return [(m["role"], [("text", c["text"]) if c["type"] == "text" else
                         ("image", _official_digest(c["image_url"]["url"], by_url)) for c in m["content"]])
            for m in messages]


def test_every_record_the_official_loader_reads_is_built_with_its_text(unusual, monkeypatch, tmp_path):
    """data.py load_data @fd4c8d7 reads all 24 records (none raises); every one is a row, its prompt
    the text mode's text (question dates L176/L344, session dates L136/L139/L215/L218, roles L146/L224,
    URLs passed through by utils.py L44-46), its images the same, its chat build_messages' (with and
    without labels). Before: the schema skipped the null dates, the null role and the unknown ability
    (and a missing haystack_sessions), and the URL images were dropped from their turns."""
    root, out, result, by_url = unusual
    assert result.report["skipped"] == []
    code = official.load(tmp_path / "official", monkeypatch)
    monkeypatch.chdir(root)  # resolve_image_path tries the path as given, then under image_dir
    loaded = code.data.load_data(str(root / "dataset_32k.json"), str(root / "release_images"))
    released = json.loads((root / "dataset_32k.json").read_text())
    rows = _rows(out, monkeypatch, tmp_path)
    assert sorted(rows) == sorted(str(item["question_id"]) for item in loaded["data"])
    assert len(rows) == len(fixture.QUESTIONS) + len(fixture.UNUSUAL)
    for item, raw in zip(loaded["data"], released):
        row = rows[item["question_id"]]
        text = loaded["user_template"].format(context=item["context"], question=item["question"],
                                              question_date=item["question_date"])
        assert row["prompt"] == text, item["question_id"]
        assert [_digest(Path(i["path"]).read_bytes()) for i in row["images"]] == [
            _official_digest(p, by_url) for p in item["image_list"]], item["question_id"]
        for label_images in (False, True):
            messages, _ = code.data.build_messages(raw, str(root / "release_images"), code.data.INSTRUCTION_DEFAULT,
                                                   label_images=label_images)
            assert _ours(chat_messages(row, label_images=label_images), row["images"]) == _theirs(messages, by_url)
    assert "Question Date: None\n" in rows["u_qdate_null"]["prompt"]
    assert "(Date: None)" in rows["u_dates_null"]["prompt"] and "(Date: None)" in rows["u_session_date_null"]["prompt"]
    assert rows["u_abstention"]["question_type"] == "abstention"
    assert json.loads(rows["u_abstention"]["meta"])["task_key"] == code.judge_prompts.get_task_key(
        "abstention", "entity", "a red umbrella") == "IE_Entity"
    assert rows["u_url"]["prompt"].count("<image>") == len(rows["u_url"]["images"]) == 3


def test_an_empty_question_date_stays_empty_in_the_chat():
    """data.py L176: ``item.get("question_date", "unknown")`` keeps ``""``; the chat used to send
    ``Question Date: unknown`` (the flattened prompt kept it empty: the two modes disagreed)."""
    question = chat_messages({"sessions": [], "question": "Where?", "question_date": ""})[-1]["content"][0]["text"]
    assert "\nQuestion Date: \nQuestion: Where?\n" in question
    question = chat_messages({"sessions": [], "question": "Where?"})[-1]["content"][0]["text"]
    assert "\nQuestion Date: unknown\n" in question  # no date at all: data.py's default


def test_a_url_image_not_fetched_skips_its_record_and_names_the_fetch(tmp_path, real_data, tokenizer_path):
    root, _served = fixture.write_unusual_release(tmp_path / "memlens", real_data, "http://127.0.0.1:9/photos/")
    [result] = build_configs([CONFIG], {"memlens": root}, tmp_path / "out", progress=False, tokenizer=tokenizer_path)
    assert result.ok, result.error
    skipped = {s["record"]: s["reason"] for s in result.report["skipped"]}
    items = json.loads((root / "dataset_32k.json").read_text())
    ids = {f"item {i}": item["question_id"] for i, item in enumerate(items)}
    assert sorted(ids[r] for r in skipped) == ["u_url", "u_url_dict_path"]
    assert all("mmlb fetch memlens:url_images" in reason for reason in skipped.values())


def test_the_fetch_step_names_each_url_image_by_its_sha256(unusual):
    root, _out, _result, by_url = unusual
    for url, data in by_url.items():
        assert (root / "url_images" / url_image_name(url)).read_bytes() == data
        assert url_image_name(url) == _digest(url.encode())


# -- what the official runners send: images within 800 px ------------------------------------------------

def test_sent_size_is_resize_image_max_size(tmp_path, monkeypatch):
    """vlm_models/model_utils.py L33-55 @fd4c8d7 run on images of every shape around the bound."""
    from PIL import Image

    code = official.load(tmp_path / "official", monkeypatch)
    sizes = [(1600, 1200), (1200, 1600), (1601, 1200), (801, 3), (3, 801), (800, 800), (801, 801), (1000, 1000),
             (800, 2000), (2000, 799), (4032, 3024), (640, 480), (1, 1), (7919, 7907), (2999, 1001)]
    for width, height in sizes:
        [resized] = code.model_utils.resize_image_max_size([Image.new("L", (width, height))], MAX_IMAGE_SIZE)
        assert sent_size(width, height) == resized.size, (width, height)


def test_num_tokens_at_800px_counts_what_the_official_runners_send(unusual, monkeypatch, tmp_path):
    """eval.py L151 / eval_api.py L94 @fd4c8d7: --max_image_size 800 by default. ``num_tokens`` stays
    the unified count (images at their stored size); ``meta.num_tokens_at_800px`` counts the 1600x1200
    photo as 800x600 (609 image tokens, not 2,451), every other row alike (no image over 800 px)."""
    _root, out, result, _by_url = unusual
    rows = _rows(out, monkeypatch, tmp_path)
    for qid, row in rows.items():
        meta = json.loads(row["meta"])
        gap = image_tokens(1600, 1200) - image_tokens(800, 600) if qid == "u_big_image" else 0
        assert row["num_tokens"] - meta["num_tokens_at_800px"] == gap, qid
    assert image_tokens(1600, 1200) - image_tokens(800, 600) == 2451 - 609
    manifest = json.loads((out / "manifests" / f"{CONFIG}.json").read_text())
    sent = manifest["official_lengths_at_800px"]
    assert sent["rows"] == len(rows) and sent["max_tokens"] == max(
        json.loads(r["meta"])["num_tokens_at_800px"] for r in rows.values())
    assert any("shrunk to fit 800 px" in note for note in result.report["notes"])


# -- number answers: eval_api.py drops them, --parity official too --------------------------------------

class AnswersWithTheReference:
    """Stands in for the model eval_api.py calls: prepare_inputs / generate, answering the reference."""

    @staticmethod
    def prepare_inputs(test_item, data):
        return test_item

    @staticmethod
    def generate(inputs):
        return {"output": f"It is {inputs['answer']}.", "input_len": 1, "output_len": 3}


def _eval_api_results(code, root: Path, out: Path, monkeypatch) -> list[dict]:
    """eval_api.py run_test, unchanged, on the release's dataset_32k.json (its own argument parser)."""
    monkeypatch.setattr(sys, "argv", ["eval_api.py", "--model_name_or_path", "stand-in", "--input_file",
                                      str(root / "dataset_32k.json"), "--output_dir", str(out), "--image_dir",
                                      str(root / "release_images"), "--batch_size", "1"])
    args = code.eval_api.parse_arguments()
    out.mkdir(parents=True, exist_ok=True)  # main() makes it before run_test
    path = code.eval_api.run_test(args, AnswersWithTheReference(), args.input_file)
    return json.loads(Path(path).read_text())["data"]


class Replies:
    """A judge client stand-in: one point for every prompt; the prompts kept."""

    model = "stand-in"

    def __init__(self):
        self.requests = []

    def complete_many(self, requests, **params):
        self.requests.extend(requests)
        return ['"answer_score": 1'] * len(requests)


def test_parity_official_drops_a_number_answer_as_eval_api_does(unusual, monkeypatch, tmp_path):
    """parse_utils.py L91-93 @fd4c8d7: normalize_answer raises on a non-zero number (0 returns "" first);
    eval_api.py L165 raises in the worker, L251-255 log and ``continue``: the item is not in the results,
    neither its rule metrics (compute_metrics) nor the judge (llm_judge.evaluate reads the results) see
    it. ``--parity official`` leaves it out and says why; the default scores it."""
    root, out, _result, _by_url = unusual
    code = official.load(tmp_path / "official", monkeypatch)
    monkeypatch.chdir(root)
    results = _eval_api_results(code, root, tmp_path / "results", monkeypatch)
    rows = _rows(out, monkeypatch, tmp_path)
    assert set(rows) - {r["question_id"] for r in results} == set(fixture.NUMBER_ANSWERS)
    outputs = {qid: AnswersWithTheReference.generate({"answer": json.loads(row["meta"]).get("answer_value",
                                                                                            row["answers"][0])})["output"]
               for qid, row in rows.items()}
    predictions = {qid: {"prediction": text} for qid, text in outputs.items()}
    examples = list(rows.values())

    parity = evaluate_config([dict(e) for e in examples], predictions, {"*": {"parity": "official"}})
    assert parity["left_out"] == 2 and parity["n"] == len(rows) - 2
    left = {e["id"]: e["extra"] for e in parity["examples"] if e.get("extra", {}).get("left_out")}
    assert sorted(left) == sorted(fixture.NUMBER_ANSWERS)
    assert left["u_int_answer"]["official_crash"] == "AttributeError: 'int' object has no attribute 'lower'"
    official_rules, _ = code.parse_utils.compute_metrics(results)
    ours = parity["metrics"]["memlens_judge"]["rules"]
    assert ours["sub_em"] == pytest.approx(official_rules["overall"]["sub_em"])
    assert ours["f1"] == pytest.approx(official_rules["overall"]["f1"])
    assert ours["refusal_rate"] == pytest.approx(official_rules["overall"]["refusal_rate"])

    default = evaluate_config([dict(e) for e in examples], predictions, {})
    assert "left_out" not in default and default["n"] == len(rows)
    scored = {e["id"]: e["score"] for e in default["examples"]}
    assert scored["u_int_answer"] == scored["u_float_answer"] == 1.0  # "It is 7." holds the reference "7"

    # the judge: the same prompts as llm_judge.evaluate sends for the results eval_api.py kept
    official.StubOpenAI.calls = []
    official.StubOpenAI.reply = staticmethod(lambda prompt: '"answer_score": 1')
    code.llm_judge.init_vllm_judge()
    code.llm_judge._load_questions_metadata(str(root / "dataset_32k.json"))  # --questions_file: old answers
    code.llm_judge.evaluate(results, str(tmp_path / "judge.jsonl"), num_workers=1)
    judge = Replies()
    metric = get_metric("memlens_judge", parity="official", judge=judge, judge_prompts=code.root)
    scored = metric.score_many([outputs[e["id"]] for e in examples], examples)
    assert sorted(judge.requests) == sorted(c["messages"][0]["content"] for c in official.StubOpenAI.calls)
    assert metric.aggregate(scored, examples)["left_out"] == 2


# -- the judge's request body ---------------------------------------------------------------------------

@pytest.mark.parametrize("path", ["vllm", "api"])
def test_the_judge_request_body_is_llm_judge_s(tmp_path, monkeypatch, path):
    """llm_judge.py L154-169 @fd4c8d7, run unchanged with the real openai client against a loopback
    server: the vLLM judge (the default) sends ``max_tokens`` 2048 and ``chat_template_kwargs:
    {"enable_thinking": false}`` in the body (extra_body), the API judge (``--api_model``)
    ``max_completion_tokens`` 256 and no ``chat_template_kwargs`` (which OpenAI's API refuses). The
    request ``memlens_judge`` sends through JudgeClient is the same body, byte for byte as JSON."""
    code = official.load(tmp_path / "official", monkeypatch, stub_openai=False)
    example = {"id": "x", "question": "Which bread now?", "answers": ["brioche"],
               "meta": {"category": "knowledge_update", "question_subtype": "", "old_answer": "sourdough"}}
    with FakeOpenAI(lambda body: 'In summary ... [JSON]: {"answer_score": 1}') as server:
        code.llm_judge.init_vllm_judge(base_url=server.base_url, model_name="judge-model", api_key="k",
                                       is_api=path == "api")
        info = code.parse_utils.normalize_for_judge("Brioche.")
        score, _ = code.llm_judge._judge_one("Which bread now?", "brioche", info, "knowledge_update", "", "sourdough")
        theirs = server.requests[-1]
        judge = JudgeClient(model="judge-model", base_url=server.base_url, api_key="k")
        metric = get_metric("memlens_judge", judge=judge, judge_prompts=code.root, judge_path=path)
        [result] = metric.score_many(["Brioche."], [example])
        ours = server.requests[-1]
    assert len(server.requests) == 2 and ours == theirs and score == result.score == 1
    if path == "vllm":
        assert theirs["chat_template_kwargs"] == {"enable_thinking": False} and theirs["max_tokens"] == 2048
    else:
        assert "chat_template_kwargs" not in theirs and theirs["max_completion_tokens"] == 256
        assert "max_tokens" not in theirs


def test_parity_official_scores_a_reply_at_the_output_cap_as_compute_metrics_does(unusual, monkeypatch, tmp_path):
    """parse_utils.py L341-342 @fd4c8d7: ``if output_len >= 2048: prediction = ""`` before SubEM, F1
    and the refusal check. The same replies, two of them at 2048 generated tokens and one at 2047:
    parity mode's rule metrics equal the official compute_metrics run on them; the default reads
    every reply as written; the judge reads the replies in both."""
    root, out, _result, _by_url = unusual
    code = official.load(tmp_path / "official", monkeypatch)
    monkeypatch.chdir(root)
    results = _eval_api_results(code, root, tmp_path / "results", monkeypatch)
    capped = [r["question_id"] for r in results if r["reference_answer"]][:2]
    below = next(r["question_id"] for r in results if r["reference_answer"] and r["question_id"] not in capped)
    for result in results:
        result["output_len"] = 2048 if result["question_id"] in capped else 2047 if result["question_id"] == below else 3
    official_rules, _ = code.parse_utils.compute_metrics(results)
    rows = {qid: row for qid, row in _rows(out, monkeypatch, tmp_path).items()
            if qid in {r["question_id"] for r in results}}  # the numbers eval_api.py drops are another test's
    predictions = {r["question_id"]: {"prediction": r["prediction"], "generated_tokens": r["output_len"]}
                   for r in results}

    parity = evaluate_config([dict(e) for e in rows.values()], predictions, {"*": {"parity": "official"}})
    ours = parity["metrics"]["memlens_judge"]["rules"]
    assert ours["sub_em"] == pytest.approx(official_rules["overall"]["sub_em"])
    assert ours["f1"] == pytest.approx(official_rules["overall"]["f1"])
    assert ours["refusal_rate"] == pytest.approx(official_rules["overall"]["refusal_rate"])
    flagged = {e["id"] for e in parity["examples"] if e.get("extra", {}).get("output_cap")}
    assert flagged == set(capped)
    # what the judge reads: the reply, not the emptied one
    assert all(e["parsed"] for e in parity["examples"] if e["id"] in capped)

    default = evaluate_config([dict(e) for e in rows.values()], predictions, {})
    assert default["metrics"]["memlens_judge"]["rules"]["sub_em"] > ours["sub_em"]  # the two capped answers count
    assert not any(e.get("extra", {}).get("output_cap") for e in default["examples"])
