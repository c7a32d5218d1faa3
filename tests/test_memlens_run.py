"""MemLens end to end through the CLI: a built fixture release, ``mmlb run`` (an OpenAI-compatible
server on loopback, and the tiny random VLM through the HF chat template), then ``mmlb eval`` with the
official judge prompts read from the fetched repository and a loopback judge; the report's tables
per ability and per length."""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from mmlbdata.cli import main
from mmlbdata.dataset.build import build_configs

sys.path.insert(0, str(Path(__file__).parent))
import memlens_fixture as fixture  # noqa: E402
import memlens_official as official  # noqa: E402
from fake_openai import FakeOpenAI  # noqa: E402


@pytest.fixture(scope="module")
def built(tmp_path_factory, real_data, tokenizer_path):
    root = fixture.write_release(tmp_path_factory.mktemp("memlens_release"), real_data, num_images=4)
    out = tmp_path_factory.mktemp("memlens_out")
    results = build_configs(["memlens_32k", "memlens_128k"], {"memlens": root}, out, progress=False,
                            tokenizer=tokenizer_path)
    assert all(r.ok for r in results), [r.error for r in results]
    return out


def test_run_server_then_eval_with_the_official_judge(built, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf"))
    seen = []

    def model(body):  # by the question's number, not the request order (requests run concurrently)
        seen.append(body)
        number = int(re.search(r"in question (\d+)\?", body["messages"][-1]["content"][0]["text"]).group(1))
        return "<think>let me see</think>Insufficient information" if number % 2 else "brioche"

    preds = tmp_path / "preds.jsonl"
    with FakeOpenAI(model) as server:
        assert main(["run", "--backend", "openai", "--model", "served", "--base-url", server.base_url, "--data",
                     str(built), "--config", "memlens_32k", "--config", "memlens_128k", "--out", str(preds),
                     "--label-images"]) == 0
    first = next(b for b in seen if "in question 0?" in b["messages"][-1]["content"][0]["text"])["messages"]
    assert first[0]["role"] == "system" and first[-1]["role"] == "user"
    assert {m["role"] for m in first[1:-1]} == {"user", "assistant"}
    assert first[1]["content"][0]["text"].startswith("=== Session 1 (Date: ")
    assert any(c.get("text") == "[Image 1]" for c in first[1]["content"])
    assert seen[0]["max_tokens"] == 128 and "continue_final_message" not in seen[0]

    code_root = official.checkout(tmp_path / "official")
    asked = []

    def judge(body):
        prompt = body["messages"][0]["content"]
        asked.append(prompt)
        case = prompt.rsplit("[Current Case]", 1)[1]  # the examples above hold these lines too
        student = re.search(r"<Student Answer>: (.*)\n", case).group(1)
        standard = re.search(r"<Standard Answer>: (.*)\n", case).group(1)
        return '[JSON]: {"answer_score": %d}' % (student.lower() == standard.lower())

    with FakeOpenAI(judge) as server:
        assert main(["eval", str(preds), "--data", str(built), "--out", str(tmp_path / "ev"), "--no-plot",
                     "--judge-base-url", server.base_url, "--judge-model", "judge",
                     "--memlens-judge-prompts", str(code_root)]) == 0
    report = json.loads((tmp_path / "ev" / "report.json").read_text())
    config = report["configs"]["memlens_32k"]
    assert config["n"] == len(fixture.QUESTIONS)
    assert report["judge"]["calls"] == len(asked) and report["judge"]["calls"] + report["judge"]["cache_hits"] == 20
    metric = config["metrics"]["memlens_judge"]
    assert metric["judge_prompts"]["official"] is True and metric["judge_failed"] == 0
    # odd questions answered "Insufficient information": right for answer refusal (q009; q008 is even), ...
    refusal = config["by_category"]["answer_refusal"]
    assert (refusal["score"], refusal["n"], refusal["answered"]) == (0.5, 2, 2)
    assert config["by_category"]["knowledge_update"]["score"] == 0.5  # q006 "brioche" right, q007 wrong
    assert set(config["by_length"]) == {"32k"} and "task_key" in config["groups"]


def test_run_hf_tiny_model_feeds_the_conversation(built, tmp_path, monkeypatch):
    pytest.importorskip("transformers")
    from tests.tiny import build_tiny_vlm

    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf"))
    model = build_tiny_vlm(tmp_path / "tiny")
    preds = tmp_path / "p.jsonl"
    assert main(["run", "--backend", "hf", "--model", str(model), "--device", "cpu", "--data", str(built),
                 "--config", "memlens_32k", "--out", str(preds), "--limit", "2", "--max-new-tokens", "3"]) == 0
    rows = [json.loads(line) for line in preds.read_text().splitlines()]
    assert [r["id"] for r in rows] == ["q000", "q001"] and all(r["prompt_tokens"] > 100 for r in rows)
