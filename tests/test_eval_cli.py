"""``mmlb eval`` and ``mmlb run`` end to end on a small built-dataset folder (real COCO images),
with the tiny random VLM on CPU and the OpenAI-server backend against a loopback server."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from fake_openai import FakeOpenAI
from mmlbdata.cli import COMMANDS
from mmlbdata.cli import eval as eval_cmd
from mmlbdata.cli import run as run_cmd
from mmlbdata.runner.chat import to_content
from tests.smoke import write_built


def row(id, dataset, length, prompt, images, answers, metric, question="", **meta):
    return {"id": id, "dataset": dataset, "length": length, "num_tokens": 100, "prompt": prompt,
            "images": [{"bytes": b, "path": None} for b in images], "question": question,
            "answers": answers, "metric": metric, "meta": json.dumps(meta)}


@pytest.fixture(scope="module")
def built(tmp_path_factory, coco_mini):
    pics = [p.read_bytes() for p in sorted((coco_mini / "val2017").glob("*.jpg"))[:3]]
    vh = [row(f"vh{i}", "visual_haystack", 8192, "Haystack: <image><image>\nQuestion: is there a dog? Answer yes or no.",
              pics[:2], [gold], "binary_acc", category="NIAH") for i, gold in enumerate(["yes", "no", "yes", "no"])]
    vh16 = [row("vh16_0", "visual_haystack", 16384, "<image><image><image> Is there a cat?", pics, ["no"],
                "binary_acc", category="NIAH")]
    doc = [row("d0", "mmlongbench_doc", 8192, "<image> What share?", pics[:1], ["0.1829"], "mmlongbench_doc",
               question="What share?", answer_format="Float", evidence_pages="[3]", evidence_sources="['Chart']",
               category="DocVQA"),
           row("d1", "mmlongbench_doc", 8192, "<image> How many?", pics[:1], ["8"], "mmlongbench_doc",
               question="How many?", answer_format="Int", evidence_pages="[1, 2]", category="DocVQA")]
    return write_built(tmp_path_factory.mktemp("built"),
                       {"vh_single_8k": vh, "vh_single_16k": vh16, "mmlongbench_doc_8k": doc})


def cli(*argv) -> int:
    parser = argparse.ArgumentParser(prog="mmlb")
    sub = parser.add_subparsers()
    eval_cmd.register(sub)
    run_cmd.register(sub)
    args = parser.parse_args([str(a) for a in argv])
    return args.func(args)


def write_preds(path: Path, rows: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def test_commands_listed():
    assert {"eval", "run"} <= set(COMMANDS)


def test_eval_tables_report_plot_and_problems(built, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    preds = write_preds(tmp_path / "p.jsonl", [
        {"id": "vh0", "config": "vh_single_8k", "prediction": "Answer: yes"},
        {"id": "vh1", "config": "vh_single_8k", "prediction": "Yes, I see one.", "extra": 1},
        {"id": "vh2", "config": "vh_single_8k", "prediction": "no... actually yes"},
        "{not json",
        {"config": "vh_single_8k", "prediction": "no id"},
        {"id": "ghost", "config": "vh_single_8k", "prediction": "yes"},
        {"id": "vh16_0", "config": "vh_single_16k", "prediction": "no"},
    ])
    out = tmp_path / "out"
    assert cli("eval", preds, "--data", built, "--config", "vh_single_8k", "--config", "vh_single_16k",
               "--out", out) == 0
    printed = capsys.readouterr().out
    assert "vh_single_8k" in printed and "malformed prediction lines: 2" in printed and "line 4" in printed
    report = json.loads((out / "report.json").read_text())
    res = report["configs"]["vh_single_8k"]
    # vh0 right, vh1 wrong (gold no), vh2 right; vh3 has no prediction: counted as wrong
    assert (res["answered"], res["total"], res["n"]) == (3, 4, 4) and res["score"] == pytest.approx(2 / 4)
    assert res["score_answered"] == pytest.approx(2 / 3) and res["missing_counted_as_wrong"] is True
    assert res["stderr"] == pytest.approx((1 / 3) ** 0.5 / 2)  # sample std of [1, 0, 1, 0] / sqrt(4)
    assert {e["id"]: (e["score"], e["parsed"]) for e in res["examples"]} == {
        "vh0": (1.0, "yes"), "vh1": (0.0, "yes"), "vh2": (1.0, "yes")}
    assert res["problems"]["unknown_ids"] == ["ghost"] and res["problems"]["missing_predictions"] == 1
    assert {k: v for k, v in res["by_length"]["8k"].items() if k != "ci95"} == {
        "score": 0.5, "n": 4, "answered": 3, "stderr": pytest.approx((1 / 3) ** 0.5 / 2)}
    low, high = res["by_length"]["8k"]["ci95"]
    assert 0.0 <= low < 0.5 < high <= 1.0
    assert report["configs"]["vh_single_16k"]["by_category"]["NIAH"]["score"] == 1.0
    assert [m["line"] for m in report["problems"]["malformed_lines"]] == [4, 5]
    # pooled per dataset (3 of 5 visual_haystack right, the unanswered one wrong), then unweighted
    assert report["overall"]["by_dataset"] == {"visual_haystack": 0.6}
    assert report["overall"]["mean_over_configs"] == pytest.approx((2 / 4 + 1) / 2)
    assert (out / "scores.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # a baseline run gives deltas (ReadBench image-minus-text)
    out2 = tmp_path / "out2"
    assert cli("eval", preds, "--data", built, "--config", "vh_single_8k", "--out", out2, "--no-plot",
               "--baseline", out / "report.json") == 0
    delta = json.loads((out2 / "report.json").read_text())["delta_vs_baseline"]
    assert delta["vh_single_8k"]["score"] == 0.0
    # baseline covered 2 configs, this run 1: per-dataset delta compares pooled scores
    assert delta["overall"]["by_dataset"]["visual_haystack"] == pytest.approx(2 / 4 - 0.6)


def test_eval_mmlongbench_doc_extractor_none_and_missing_judge(built, tmp_path, capsys, monkeypatch):
    for var in ("OPENAI_API_KEY", "MMLB_JUDGE_API_KEY", "MMLB_JUDGE_BASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    preds = write_preds(tmp_path / "p.jsonl", [
        {"id": "d0", "config": "mmlongbench_doc_8k", "prediction": "18.29%"},
        {"id": "d1", "config": "mmlongbench_doc_8k", "prediction": "8.7"}])
    out = tmp_path / "o"
    assert cli("eval", preds, "--data", built, "--config", "mmlongbench_doc_8k", "--out", out,
               "--extractor", "none", "--no-plot") == 0
    agg = json.loads((out / "report.json").read_text())["configs"]["mmlongbench_doc_8k"]["metrics"]["mmlongbench_doc"]
    assert agg["acc"] == 1.0 and agg["f1"] == 1.0 and agg["acc[single_page]"] == 1.0
    capsys.readouterr()
    assert cli("eval", preds, "--data", built, "--config", "mmlongbench_doc_8k", "--out", out, "--no-plot") == 2
    assert "needs an LLM judge" in capsys.readouterr().err


def test_to_content_interleaves_and_keeps_last_images():
    content, kept = to_content("a<image>b<image><image>c", 3)
    assert content == [{"type": "text", "text": "a"}, {"type": "image", "index": 0}, {"type": "text", "text": "b"},
                       {"type": "image", "index": 1}, {"type": "image", "index": 2}, {"type": "text", "text": "c"}]
    content, kept = to_content("a<image>b<image><image>c", 3, max_images=2)
    assert kept == [1, 2] and content[0] == {"type": "text", "text": "ab"}
    with pytest.raises(ValueError, match="placeholders"):
        to_content("<image>", 2)


def test_text_context_replaces_the_pages():
    from mmlbdata.runner.chat import text_context

    prompt, images = text_context("Read <context>\n<image><image>\n</context> Q?", ["p1", "p2"],
                                  {"context": "Mary went to the kitchen."})
    assert prompt == "Read <context>\nMary went to the kitchen.\n</context> Q?" and images == []
    assert text_context("<image> x", ["p"], {}) == ("<image> x", ["p"])


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    pytest.importorskip("transformers")
    from tests.tiny import build_tiny_vlm

    return build_tiny_vlm(tmp_path_factory.mktemp("tiny"))


def test_run_hf_tiny_model_then_eval(built, tiny_model, tmp_path, capsys):
    preds = tmp_path / "preds.jsonl"
    assert cli("run", "--backend", "hf", "--model", tiny_model, "--device", "cpu", "--data", built,
               "--config", "vh_single_8k", "--config", "vh_single_16k", "--out", preds,
               "--batch-size", "2", "--max-images", "2", "--max-new-tokens", "4") == 0
    rows = [json.loads(l) for l in preds.read_text().splitlines()]
    assert [r["id"] for r in rows] == ["vh0", "vh1", "vh2", "vh3", "vh16_0"]
    assert all(r["prediction"].startswith("Answer:") and r["generated_tokens"] <= 4 for r in rows)
    # 3 images kept as 2 for vh16_0: fewer prompt tokens than 3 images would need (4 per image)
    assert all(r["prompt_tokens"] > 8 for r in rows)
    assert "ex/s" in capsys.readouterr().out
    # resumable: nothing left to do
    assert cli("run", "--backend", "hf", "--model", tiny_model, "--device", "cpu", "--data", built,
               "--config", "vh_single_8k", "--out", preds) == 0
    assert len(preds.read_text().splitlines()) == 5
    assert "(4 already done" in capsys.readouterr().out
    assert cli("eval", preds, "--data", built, "--out", tmp_path / "ev", "--no-plot") == 0
    report = json.loads((tmp_path / "ev" / "report.json").read_text())
    assert set(report["configs"]) == {"vh_single_8k", "vh_single_16k"} and report["configs"]["vh_single_8k"]["n"] == 4


def test_run_openai_server_backend_sends_interleaved_images(built, tmp_path):
    seen = []

    def responder(body):
        seen.append(body)
        return "yes"

    with FakeOpenAI(responder) as server:
        preds = tmp_path / "p.jsonl"
        assert cli("run", "--backend", "openai", "--model", "served", "--base-url", server.base_url,
                   "--data", built, "--config", "vh_single_16k", "--out", preds, "--max-images", "2") == 0
    body = seen[0]
    user = body["messages"][0]["content"]
    assert [c["type"] for c in user] == ["image_url", "image_url", "text"]
    assert user[0]["image_url"]["url"].startswith("data:image/jpeg;base64,")
    assert body["messages"][1] == {"role": "assistant", "content": "Answer:"}
    assert body["continue_final_message"] is True and body["temperature"] == 0.0 and body["max_tokens"] == 128
    assert json.loads(preds.read_text())["prediction"] == "Answer:yes"


def test_rebuilt_folder_of_same_name_is_not_read_stale(tmp_path):
    from mmlbdata.evaluation.evaluate import load_examples

    first = write_built(tmp_path / "a" / "built", {"c_8k": [row("x1", "d", 8192, "q", [], ["1"], "sub_em")]})
    assert [e["id"] for e in load_examples(first, "c_8k")] == ["x1"]
    second = write_built(tmp_path / "b" / "built", {"c_8k": [row("y1", "d", 8192, "q", [], ["1"], "sub_em"),
                                                           row("y2", "d", 8192, "q", [], ["2"], "sub_em")]})
    examples = load_examples(second, "c_8k")
    assert [e["id"] for e in examples] == ["y1", "y2"] and "images" not in examples[0]


def test_eval_on_a_real_built_folder(tmp_path, tokenizer_path, capsys):
    """The foundation's demo build (real reader, counter, writer): oracle predictions score 1,
    inverted ones 0; through the real ``mmlb`` entry point."""
    from mmlbdata.cli import main
    from mmlbdata.evaluation.evaluate import load_examples

    built = tmp_path / "demo"
    assert main(["demo", "--out", str(built), "--questions", "2", "--tokenizer", str(tokenizer_path)]) == 0
    examples = load_examples(built, "vh_single_8k")
    assert examples and all(e["metric"] == "binary_acc" for e in examples)
    flip = {"yes": "no", "no": "yes"}
    preds = write_preds(tmp_path / "p.jsonl",
                        [{"id": e["id"], "config": "vh_single_8k", "prediction": f"Answer: {e['answers'][0]}"}
                         for e in examples[:-1]]
                        + [{"id": examples[-1]["id"], "config": "vh_single_8k",
                            "prediction": flip[examples[-1]["answers"][0].lower()]}])
    capsys.readouterr()
    assert main(["eval", str(preds), "--data", str(built), "--config", "vh_single_8k", "--out", str(tmp_path / "o")]) == 0
    res = json.loads((tmp_path / "o" / "report.json").read_text())["configs"]["vh_single_8k"]
    assert res["score"] == pytest.approx((len(examples) - 1) / len(examples))
    assert list(res["by_length"]) == ["8k"] and (tmp_path / "o" / "scores.png").is_file()
    assert "vh_single_8k" in capsys.readouterr().out


def test_vllm_offline_backend_call_shape(monkeypatch, built):
    """vllm is not installable here: a stand-in module records what LLM.chat receives."""
    import sys
    import types

    calls = {}

    class Out:
        def __init__(self):
            self.prompt_token_ids = [1, 2, 3]
            self.outputs = [types.SimpleNamespace(text=" yes", token_ids=[7, 8])]

    class LLM:
        def __init__(self, model, **kwargs):
            calls["init"] = (model, kwargs)

        def chat(self, conversations, params, **kwargs):
            calls["chat"] = (conversations, params, kwargs)
            return [Out() for _ in conversations]

    fake = types.SimpleNamespace(LLM=LLM, SamplingParams=lambda **kw: kw)
    monkeypatch.setitem(sys.modules, "vllm", fake)
    from mmlbdata.runner.core import Request
    from mmlbdata.runner.vllm import VLLMBackend

    backend = VLLMBackend("some/model", max_model_len=8192)
    req = Request(id="a", config="c", metric="binary_acc", images=[b"\x89PNG\r\n\x1a\nxx"],
                  content=[{"type": "image", "index": 0}, {"type": "text", "text": "q"}], prefix="Answer:",
                  max_new_tokens=128)
    gens = backend.generate([req])
    assert gens[0].text == " yes" and (gens[0].prompt_tokens, gens[0].generated_tokens) == (3, 2)
    conversations, params, kwargs = calls["chat"]
    assert params == {"temperature": 0.0, "max_tokens": 128}
    assert kwargs["continue_final_message"] is True and kwargs["add_generation_prompt"] is False
    assert conversations[0][0]["content"][0]["image_url"]["url"].startswith("data:image/png;base64,")
    assert conversations[0][1] == {"role": "assistant", "content": "Answer:"}
    assert calls["init"][1]["max_model_len"] == 8192


@pytest.mark.gpu
def test_run_hf_tiny_model_on_cuda(built, tiny_model, tmp_path):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    preds = tmp_path / "p.jsonl"
    assert cli("run", "--backend", "hf", "--model", tiny_model, "--device", "cuda", "--data", built,
               "--config", "vh_single_8k", "--out", preds, "--batch-size", "4", "--max-new-tokens", "4") == 0
    assert len(preds.read_text().splitlines()) == 4


def test_run_failed_batch_is_reported_and_resumable(built, tmp_path, capsys):
    from mmlbdata.runner.core import Generation, run

    class Flaky:
        def __init__(self, fail_first: bool):
            self.fail = fail_first

        def generate(self, requests):
            if self.fail:
                self.fail = False
                raise RuntimeError("CUDA out of memory")
            return [Generation("yes", 10, 1) for _ in requests]

    out = tmp_path / "p.jsonl"
    stats = run(Flaky(True), built, ["vh_single_8k"], out, batch_size=2)
    assert (stats.errors, stats.examples) == (2, 2) and "CUDA out of memory" in capsys.readouterr().err
    assert [json.loads(l)["id"] for l in out.read_text().splitlines()] == ["vh2", "vh3"]
    stats = run(Flaky(False), built, ["vh_single_8k"], out, batch_size=2)  # only the failed ids are redone
    assert (stats.skipped, stats.examples, stats.errors) == (2, 2, 0)


def test_eval_parity_switch_and_a_non_utf8_line(built, tmp_path, capsys):
    """--parity official: each output is scored as the runner's "Answer:" + output (eval.py L73-74
    @22b9f27), so a bare "1" is no number ("Answer:1") and, like no yes/no at all, takes the cycling
    default (0,1,1,0 by example order: vh0 gets 0 = no, wrong; vh1 gets 1 = yes, wrong; vh2 gets 1,
    right); the default scores all three 0. The non-UTF-8 line is reported by number and skipped;
    --original-bugs is the same as official."""
    preds = tmp_path / "p.jsonl"
    lines = [json.dumps({"id": i, "config": "vh_single_8k", "prediction": p}).encode()
             for i, p in (("vh0", "1"), ("vh1", "maybe"), ("vh2", "hmm"))]
    preds.write_bytes(b"\n".join(lines[:2] + [b'{"id": "vh3", "prediction": "\xff"}'] + lines[2:]) + b"\n")
    scores = {}
    for flags in (["--parity", "official"], [], ["--original-bugs"]):
        out = tmp_path / ("o" + "".join(flags))
        assert cli("eval", preds, "--data", built, "--config", "vh_single_8k", "--out", out, "--no-plot", *flags) == 0
        report = json.loads((out / "report.json").read_text())
        scores[tuple(flags)] = report["configs"]["vh_single_8k"]["score"]
        assert [m["line"] for m in report["problems"]["malformed_lines"]] == [3]
        assert report["problems"]["malformed_lines"][0]["error"].startswith("not UTF-8")
    assert scores == {("--parity", "official"): pytest.approx(1 / 3), (): 0.0, ("--original-bugs",): pytest.approx(1 / 3)}
    assert "line 3: not UTF-8" in capsys.readouterr().out
