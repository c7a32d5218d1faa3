"""The v1.1 document-QA judge replayed against the official code, run unchanged.

``mmlongdoc_8k --limit 12`` is built from the real MMLongBench-Doc sample, exported to the release
layout, and scored twice through one loopback judge that answers by a hash of the exact prompt:

* by us (``evaluate_config`` under protocol v1.1, both parity modes);
* by the official ``data.py`` @22b9f27 ``load_doc_qa_with_llm_judge`` (L506-551: the question gets
  "Based on Document {doc_id:.15}, ..." at L521, ``docqa_post_process`` calls ``utils.py``
  ``calculate_metrics(parsed, answer, "doc_qa_llm", ...)`` L566-572) on the runner's text
  ``system_template + output`` (eval.py L73-74), with its own ``utils.py``, ``utils_prompt.py`` and
  ``vlm_model`` taken from the MMLongBench git mirror at test time (nothing of it is in this repo).

Any difference in a prompt (question, ``<Standard Answer>`` reference, parsed prediction) gives
another reply, so equal prompts and equal scores on all 12 rows is the check. The mirror is found
through ``MMLB_MMLONGBENCH_GIT`` (a git directory of EdinburghNLP/MMLongBench), else a
``.mirror/EdinburghNLP+MMLongBench/repo`` in a folder above this checkout; the test skips without.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from fake_openai import FakeOpenAI
from mirrors import git_show, mirror_git
from mmlbdata.dataset.build import build_configs
from mmlbdata.evaluation.evaluate import evaluate_config, load_examples
from mmlbdata.evaluation.judge import JudgeClient
from mmlbdata.exports.mmlongbench import export_jsonl

V11 = "22b9f27"
OFFICIAL_FILES = ("data.py", "utils.py", "utils_prompt.py", "vlm_model/__init__.py", "vlm_model/model_utils.py")
MODEL = "judge-replay"


def official_tree(git_dir: Path, dest: Path) -> Path:
    """The official files at v1.1, written out unchanged (``git show``)."""
    for name in OFFICIAL_FILES:
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        (dest / name).write_bytes(git_show(git_dir, V11, name))
    return dest


def hashed_reply(body: dict) -> str:
    """The judge: a reply fixed by the exact prompt (a list-F1 JSON for the list prompt, else a
    score line), so two prompts that differ by one character are told apart by the score."""
    prompt = body["messages"][-1]["content"]
    h = int(hashlib.sha256(prompt.encode("utf-8")).hexdigest(), 16)
    if "covered_count" in prompt:
        student = 1 + h % 4
        return f'[JSON]: {{"student_answer_count": {student}, "covered_count": {(h >> 8) % (student + 1)}}}'
    return f"[Score]: {h % 2} point"


OFFICIAL_RUN = textwrap.dedent("""
    import json, sys
    from argparse import Namespace
    official, release, endpoint, predictions = sys.argv[1:5]
    sys.path.insert(0, official)
    import data  # the official data.py, unchanged
    args = Namespace(test_file_root=release + "/mmlb_data", image_file_root=release + "/mmlb_image",
                     preprocessing_num_workers=None, seed=42, llm_judge_key="k", llm_judge_endpoint=endpoint,
                     llm_judge_type="openai", llm_judge_model="%s")
    loaded = data.load_doc_qa_with_llm_judge(args, "documentQA/mmlongdoc_K8.jsonl")
    outputs = json.load(open(predictions))
    scores = []
    for example, output in zip(loaded["data"], outputs):
        text = loaded["system_template"].format(**example) + output  # eval.py L73-74
        mets, _others = loaded["post_process"]({"output": text}, example)
        scores.append(mets["doc_qa_llm"])
    print(json.dumps(scores))
""" % MODEL)


@pytest.fixture(scope="module")
def replay(tmp_path_factory, real_data, tokenizer_path):
    git_dir = mirror_git("MMLB_MMLONGBENCH_GIT", "EdinburghNLP+MMLongBench")
    if git_dir is None:
        pytest.skip("no EdinburghNLP/MMLongBench git mirror (set MMLB_MMLONGBENCH_GIT)")
    root = tmp_path_factory.mktemp("replay")
    official = official_tree(git_dir, root / "official")
    results = build_configs(["mmlongdoc_8k"], {"mmlongbench_doc": real_data / "mmlongbench_doc"}, root / "out",
                            limit=12, tokenizer=tokenizer_path, store_root=root / "store", progress=False)
    assert all(r.ok for r in results), [r.error for r in results]
    export_jsonl(root / "out", root / "release", configs=["mmlongdoc_8k"])
    examples = load_examples(root / "out", "mmlongdoc_8k")
    # every other answer right, the rest a miss, so the judge sees both kinds of prediction
    outputs = [f" {e['answers'][0]}" if i % 2 == 0 else " I could not find it." for i, e in enumerate(examples)]
    (root / "outputs.json").write_text(json.dumps(outputs))
    return root, official, examples, outputs


def _official_scores(root: Path, official: Path, server: FakeOpenAI) -> list:
    env = {**os.environ, "HF_DATASETS_CACHE": str(root / "hf_cache"), "HF_DATASETS_OFFLINE": "1"}
    run = subprocess.run([sys.executable, "-c", OFFICIAL_RUN, str(official), str(root / "release"),
                          server.base_url, str(root / "outputs.json")],
                         capture_output=True, text=True, env=env, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("parity", ["default", "official"])
def test_judged_scores_and_prompts_equal_the_official_run(replay, parity):
    root, official, examples, outputs = replay
    assert len(examples) == 12 and any(json.loads(e["meta"])["answer_format"] == "List" for e in examples)
    with FakeOpenAI(hashed_reply) as server:
        theirs = _official_scores(root, official, server)
        their_prompts = [r["messages"][-1]["content"] for r in server.requests]
        judge = JudgeClient(model=MODEL, base_url=server.base_url, api_key="k")
        predictions = {str(e["id"]): {"prediction": o} for e, o in zip(examples, outputs)}
        options = {"*": {"parity": parity}, "docqa": {"judge": judge, "judge_prompts": official / "utils_prompt.py"}}
        ours = evaluate_config(examples, predictions, options, protocol="v1.1")
        our_prompts = [r["messages"][-1]["content"] for r in server.requests[len(their_prompts):]]
    assert len(theirs) == 12 and sorted(our_prompts) == sorted(their_prompts)
    by_id = {row["id"]: row["score"] for row in ours["examples"]}
    assert [by_id[str(e["id"])] for e in examples] == [float(s) for s in theirs]
    assert len(set(theirs)) > 1
