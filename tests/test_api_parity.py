"""``mmlb run``'s API requests held against MMLongBench's own API runner, run unchanged (tests/api_official.py).

One release in the official format (tests/test_mmlb_release.py's, real COCO photos and LongDocURL
pages: every family of MMLongBench at 8K, VRAG, VH, MM-NIAH text and image, ICL, summaries,
document QA) plus a 128K Visual Haystack row of 24 photos (one stored grayscale, one RGBA) is run
twice against one loopback server that records every request body: by the official
``eval_api.py`` (``--config configs/<task>_all.yaml``, the flags ``scripts/run_api.sh`` passes at that
length) and by ``mmlb run`` on the same release built with ``--source mmlb_release``. Every body
must be equal, field by field, image bytes included (each PNG re-encoded by both sides). The server
rejects what OpenAI rejects (tests/fake_openai.py ``strict``): a parameter it does not document
fails the request, and would fail the test.
"""
from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import urllib.request
from pathlib import Path

import pytest
from PIL import Image

import api_official
import mmlb_official
import no_torchvision
from fake_openai import FakeOpenAI
from mmlbdata.cli import main
from mmlbdata.dataset.build import build_all
from test_mmlb_release import write_release
from test_runner_profiles import CASES

GPT, CLAUDE, GEMINI = "gpt-4o-2024-11-20", "claude-3-7-sonnet-20250219", "gemini-2.0-flash-001"
YAMLS = sorted({yaml for yaml, _, _ in CASES})
CONFIGS_8K = [f"{key}_8k" for _, _, key in CASES]
LONG = "vh_single_128k"
#: the wrappers after GPT-4o's are held on VH, MM-NIAH image (choices as images) and ICL (a prompt
#: ending with an image) at 8K and the 128K row: the pieces are the same code for every family
SUBSET = ("vh_all.yaml", "mm_niah_image_all.yaml", "icl_all.yaml")
SUBSET_CONFIGS = ("vh_single_8k", "vh_multi_8k", *(f"mm_niah_{t}_image_8k" for t in ("retrieval", "counting",
                                                                                    "reasoning")), "cars196_8k", LONG)
#: scripts/run_api.sh's flags at 128K for the vh task, per model (GPT-4o: L139-145; Gemini: L16-22;
#: Claude did not run vh at 128K: L193-200)
LONG_FLAGS = {GPT: ["--image_detail", "low"], GEMINI: ["--max_image_num", "400", "--max_image_size", "384"],
              CLAUDE: []}


def reply(pieces: list[str]) -> str:
    """The model's reply, from the request's text alone (so both runs get the same replies): a
    mix of right, wrong and empty answers for every metric."""
    text = "".join(pieces)
    digest = int(hashlib.sha256(text.encode()).hexdigest(), 16)
    return ["yes", " No", "", " France", "A", " 42", " 2019", "The court ruled.", "1"][digest % 9]


def openai_reply(body: dict) -> str:
    return reply([part.get("text", "") for part in body["messages"][0]["content"]])


# -- the release, built ---------------------------------------------------------------------------------
def write_long_row(root: Path, real_data: Path) -> None:
    """NIAH/vh_single_test_1000_K128_dep6.jsonl: one question over 24 photos (data.py
    load_visual_haystack reads ``ctxs`` as the image list); one photo stored grayscale, one RGBA."""
    names = sorted(p.name for p in (real_data / "coco_mini" / "val2017").glob("*.jpg"))[:24]
    folder = root / "mmlb_image" / "coco128"
    folder.mkdir(parents=True, exist_ok=True)
    images = []
    for i, name in enumerate(names):
        source = real_data / "coco_mini" / "val2017" / name
        if i == 3:
            Image.open(source).convert("L").save(folder / name, quality=90)
        elif i == 7:
            name = name.replace(".jpg", ".png")
            rgba = Image.open(source).convert("RGBA")
            rgba.putalpha(Image.linear_gradient("L").resize(rgba.size))
            rgba.save(folder / name)
        else:
            (folder / name).write_bytes(source.read_bytes())
        images.append(f"coco128/{name}")
    path = root / "mmlb_data" / "NIAH" / "vh_single_test_1000_K128_dep6.jsonl"
    path.write_text(json.dumps({"id": 128, "question": "For the image with a dog, is there a frisbee?",
                                "answer": "No", "ctxs": images}) + "\n")


@pytest.fixture(scope="module")
def release(tmp_path_factory, real_data):
    root = tmp_path_factory.mktemp("release")
    write_release(root, real_data, 8)
    write_long_row(root, real_data)
    return root


@pytest.fixture(scope="module")
def built(release, tmp_path_factory, tokenizer_path):
    out = tmp_path_factory.mktemp("built")
    results = build_all(CONFIGS_8K + [LONG], {"mmlb_release": release}, out, store_root=out.parent / "store",
                        tokenizer=tokenizer_path, progress=False, options={"subset": "paper"})
    assert all(r.status == "built" for r in results), [(r.config, r.status, r.error) for r in results]
    return out


@pytest.fixture(scope="module")
def official(tmp_path_factory):
    no_torchvision.install()
    root = mmlb_official.checkout(tmp_path_factory.mktemp("mmlb_official"), extra=mmlb_official.API_FILES)
    keys = ("LLM_JUDGE_KEY", "LLM_JUDGE_ENDPOINT", "HF_DATASETS_CACHE", "OPENAI_API_KEY", "OPENAI_BASE_URL",
            "GEMINI_API_KEY")
    saved = {k: os.environ.get(k) for k in keys}
    os.environ.update(LLM_JUDGE_KEY="unused-placeholder", LLM_JUDGE_ENDPOINT="http://127.0.0.1:9",
                      HF_DATASETS_CACHE=str(tmp_path_factory.mktemp("hf_datasets")), OPENAI_API_KEY="sk-test",
                      GEMINI_API_KEY="gm-test")
    yield root
    for key, value in saved.items():
        os.environ.pop(key, None) if value is None else os.environ.__setitem__(key, value)
    mmlb_official.unload(root)


def in_process_icl_config(root: Path) -> str:
    """configs/icl_all.yaml with ``preprocessing_num_workers: null``. ICL prompts draw their exemplars
    with ``random`` inside ``datasets.map``, which forks a worker for any ``num_proc`` (run_api.sh's
    ``--preprocessing_num_workers 1`` too) and Python reseeds ``random`` in a forked child: no two
    official runs draw alike. Run in its own process, the map draws after ``set_seed(42)``, the draws
    ``mmlb build --source mmlb_release`` records (sources/mmlb_release.py). A config file, not code."""
    import yaml

    config = yaml.safe_load((root / "configs" / "icl_all.yaml").read_text())
    (root / "configs" / "icl_in_process.yaml").write_text(yaml.safe_dump({**config, "preprocessing_num_workers": None}))
    return "configs/icl_in_process.yaml"


def official_run(root: Path, release: Path, out: Path, model: str, extra: list[str] | None = None,
                 long_flags: list[str] | None = None, script: str = "eval_api", yamls=YAMLS,
                 image_root: str | None = None) -> None:
    """``python eval_api.py --config configs/<task>_all.yaml ...`` for every task at 8K, then vh at
    128K (``long_flags``), as run_api.sh runs it (--num_workers 0 here: the same items, in-process)."""
    common = ["--model_name_or_path", model, "--test_file_root", str(release / "mmlb_data"),
              "--image_file_root", image_root or str(release / "mmlb_image"), "--output_dir", str(out),
              "--num_workers", "0",
              "--api_sleep", "3", "--docqa_llm_judge", "False", *(extra or [])]
    for yaml in yamls:
        config = [f"configs/{yaml}", "--preprocessing_num_workers", "1"] if yaml != "icl_all.yaml" \
            else [in_process_icl_config(root)]
        api_official.run_eval_api(root, ["--config", *config, "--test_length", "8", *common], script)
    if long_flags is not None:
        api_official.run_eval_api(root, ["--config", "configs/vh_all.yaml", "--preprocessing_num_workers", "1",
                                         "--test_length", "128", *common, *long_flags], script)


def our_run(built: Path, out: Path, *argv: str, configs=tuple(CONFIGS_8K + [LONG])) -> int:
    named = [arg for config in configs for arg in ("--config", config)]
    return main(["run", "--data", str(built), *named, "--out", str(out), "--no-progress", *argv])


def by_prompt(bodies: list[dict]) -> dict:
    """Bodies grouped by their text (the release's three document-QA files hold the same rows), each
    group in a fixed order, so the two runs' orders do not matter."""
    keyed: dict = {}
    for body in bodies:
        texts = tuple(part.get("text", "<image>") for part in body["messages"][0]["content"])
        keyed.setdefault(texts, []).append(body)
    return {key: sorted(group, key=lambda b: json.dumps(b, sort_keys=True)) for key, group in keyed.items()}


def assert_same_bodies(ours: list[dict], theirs: list[dict], count: int = len(CONFIGS_8K) + 5 + 1) -> None:
    assert len(theirs) == count  # all: 20 items at 8K (vh_single, ICL, 3 DocQA: 2 each), 1 at 128K
    ours_by, theirs_by = by_prompt(ours), by_prompt(theirs)
    assert sorted(ours_by) == sorted(theirs_by)
    for key, group in theirs_by.items():
        assert len(ours_by[key]) == len(group), key[:2]
        for mine, body in zip(ours_by[key], group):
            assert mine.keys() == body.keys(), key[:2]
            for field in body:  # field by field: a failing one is named in the report
                assert (field, mine[field]) == (field, body[field]), key[:2]


@pytest.fixture(scope="module")
def gpt_bodies(official, release, built, tmp_path_factory):
    """(ours, theirs): every request body of each run for GPT-4o."""
    tmp = tmp_path_factory.mktemp("gpt")
    with FakeOpenAI(openai_reply, strict=True) as server:
        os.environ["OPENAI_BASE_URL"] = server.base_url
        try:
            with api_official.patched(official):
                official_run(official, release, tmp / "official", GPT, long_flags=LONG_FLAGS[GPT])
            theirs = list(server.requests)
            server.requests.clear()
            assert our_run(built, tmp / "preds.jsonl", "--backend", "openai", "--model", GPT) == 0
        finally:
            os.environ.pop("OPENAI_BASE_URL")
        assert server.refused == []
    return server.requests, theirs, tmp


def test_gpt4o_requests_equal_the_official_ones(gpt_bodies):
    """openai_model.py: one user message, every re.split piece (an empty text after a final
    image), each image RGB -> PNG base64 with detail (auto at 8K, low at 128K: run_api.sh), and
    max_tokens/temperature/top_p only; OpenAI's 400 for anything else never came."""
    ours, theirs, _ = gpt_bodies
    assert_same_bodies(ours, theirs)
    long = next(b for b in theirs if len(b["messages"][0]["content"]) > 40)
    images = [p["image_url"] for p in long["messages"][0]["content"] if p["type"] == "image_url"]
    assert len(images) == 24 and {i["detail"] for i in images} == {"low"}
    assert all(i["url"].startswith("data:image/png;base64,") for i in images)
    icl = next(b for b in theirs if "Now classify this image" in json.dumps(b))
    assert icl["messages"][0]["content"][-1] == {"type": "text", "text": ""}  # the prompt ends with <image>


def test_gpt4o_predictions_are_stored_as_eval_api_stores_them(gpt_bodies):
    """eval_api.py L91-92: output = system_template + reply; mmlb run's prediction is the same text,
    with the prefix it put first recorded (answer_prefix)."""
    _, _, tmp = gpt_bodies
    preds = [json.loads(line) for line in (tmp / "preds.jsonl").read_text().splitlines()]
    cache = [json.loads(line) for path in sorted((tmp / "official").glob("*.cache")) for line in path.read_text().splitlines()]
    assert sorted(p["prediction"] for p in preds) == sorted(r["output"] for r in cache)
    assert {(p["answer_prefix"], p["prediction"][:len(p["answer_prefix"])]) for p in preds} <= \
        {("Answer:", "Answer:"), ("label:", "label:"), ("Summary:", "Summary:")}


def test_claude_requests_equal_the_official_ones(official, release, built, tmp_path):
    """openai_model.py with a claude model: the same body, sent to Anthropic's OpenAI-compatible
    endpoint (the client's base_url there; --base-url here points both at the recording server).
    The wrapper's code is GPT-4o's (every family above), so Visual Haystack at 8K and 128K here."""
    api_official.CLIENT_URLS.clear()
    with FakeOpenAI(openai_reply, strict=True) as server:
        with api_official.patched(official, server.base_url):
            official_run(official, release, tmp_path / "official", CLAUDE, long_flags=LONG_FLAGS[CLAUDE],
                         yamls=("vh_all.yaml",))
        theirs = list(server.requests)
        server.requests.clear()
        assert our_run(built, tmp_path / "preds.jsonl", "--backend", "openai", "--model", CLAUDE, "--base-url",
                       server.base_url, configs=("vh_single_8k", "vh_multi_8k", LONG)) == 0
        assert server.refused == []
    assert set(api_official.CLIENT_URLS) == {"https://api.anthropic.com/v1/"}
    assert_same_bodies(server.requests, theirs, count=4)
    from mmlbdata.runner.backends import BackendOptions, server_url

    assert server_url(BackendOptions("openai", CLAUDE)) == "https://api.anthropic.com/v1/"


def test_gemini_requests_equal_the_official_ones(official, release, built, tmp_path, monkeypatch):
    """gemini.py through a fake google-genai client: the same contents (strings, and the same PNG
    bytes uploaded as image/png: at most 384 px a side at 128K, run_api.sh's --max_image_size) and
    the same GenerateContentConfig (temperature and top_p as given, one candidate, max_output_tokens
    for gemini-2.0-flash-001). The prompt pieces are GPT-4o's (every family above): VH, MM-NIAH
    image (choices as images) and ICL (a prompt ending with an image) at 8K, and the 128K row."""
    genai = pytest.importorskip("google.genai")
    monkeypatch.setattr(genai, "Client", api_official.FakeGenAI)
    api_official.FakeGenAI.reset(lambda contents: reply([c for c in contents if isinstance(c, str)]))
    with api_official.patched(official):
        official_run(official, release, tmp_path / "official", GEMINI, long_flags=LONG_FLAGS[GEMINI], yamls=SUBSET)
    theirs, their_uploads = [api_official.gemini_call(c) for c in api_official.FakeGenAI.calls], \
        dict(api_official.FakeGenAI.uploads)
    api_official.FakeGenAI.reset(lambda contents: reply([c for c in contents if isinstance(c, str)]))
    assert our_run(built, tmp_path / "preds.jsonl", "--backend", "gemini", "--model", GEMINI,
                   configs=SUBSET_CONFIGS) == 0
    ours = [api_official.gemini_call(c) for c in api_official.FakeGenAI.calls]
    assert len(theirs) == len(ours) == 9
    key = lambda call: tuple(p if isinstance(p, str) else "<image>" for p in call["contents"])  # noqa: E731
    assert sorted(map(key, ours)) == sorted(map(key, theirs))
    theirs_by = {key(c): c for c in theirs}
    for call in ours:
        assert call == theirs_by[key(call)]
    assert api_official.FakeGenAI.uploads.keys() == their_uploads.keys()
    assert {config["mime_type"] for _, config in their_uploads.values()} == {"image/png"}
    long = max(ours, key=lambda c: len(c["contents"]))
    sizes = {Image.open(__import__("io").BytesIO(their_uploads[p[1]][0])).size for p in long["contents"] if p[0] == "file"}
    assert max(max(s) for s in sizes) == 384
    assert long["config"] == {"temperature": 1.0, "top_p": 1.0, "max_output_tokens": 128, "candidate_count": 1}


# -- the vLLM server path -------------------------------------------------------------------------------
def file_bytes(url: str) -> tuple[str, str]:
    """An image URL as what it names: a file:// path or data URI read to the SHA-256 of its bytes."""
    if url.startswith("file://"):
        return ("bytes", hashlib.sha256(Path(url[len("file://"):]).read_bytes()).hexdigest())
    if url.startswith("data:"):
        return ("bytes", hashlib.sha256(base64.b64decode(url.split(",", 1)[1])).hexdigest())
    with urllib.request.urlopen(url) as response:  # noqa: S310 - a loopback server
        return ("bytes", hashlib.sha256(response.read()).hexdigest())


def by_image_bytes(bodies: list[dict]) -> list[dict]:
    """Bodies with each image URL replaced by the bytes it names."""
    out = []
    for body in bodies:
        body = json.loads(json.dumps(body))
        for message in body["messages"]:
            for part in message["content"] if isinstance(message["content"], list) else []:
                if part["type"] == "image_url":
                    part["image_url"]["url"] = file_bytes(part["image_url"]["url"])
        out.append(body)
    return out


def test_vllm_server_profile_sends_what_vllm_models_sends(official, release, built, tmp_path):
    """vllm_models.py (load_LLM with --use_vllm, eval_api_batch.py as the README runs it): local images
    as file:// URLs, the system_template as a closed assistant message, no image limit, no detail; the
    same with --model-profile vllm_server. The default profile differs where docs/runner.md says: it
    continues the prefix (continue_final_message) and sends the stored bytes."""
    model = "Qwen/Qwen2.5-VL-7B-Instruct"
    api_official.CLIENT_URLS.clear()
    with FakeOpenAI(openai_reply) as server:
        with api_official.patched(official, server.base_url):
            official_run(official, release, tmp_path / "official", model, extra=["--use_vllm", "--batch_size", "4"],
                         long_flags=[], script="eval_api_batch", yamls=SUBSET)
        theirs = by_image_bytes(server.requests)
        server.requests.clear()
        assert our_run(built, tmp_path / "preds.jsonl", "--backend", "openai", "--model", model,
                       "--model-profile", "vllm_server", "--base-url", server.base_url, configs=SUBSET_CONFIGS) == 0
        ours = by_image_bytes(server.requests)
        server.requests.clear()
        assert our_run(built, tmp_path / "default.jsonl", "--backend", "openai", "--model", model,
                       "--base-url", server.base_url, "--config", LONG) == 0
        default = server.requests
    assert set(api_official.CLIENT_URLS) == {"http://localhost:8000/v1"}
    assert_same_bodies(ours, theirs, count=9)
    long = next(b for b in theirs if len(b["messages"][0]["content"]) > 40)
    assert long["messages"][-1] == {"role": "assistant", "content": "Answer:"} and "extra_body" not in long
    assert default[-1]["continue_final_message"] is True and default[-1]["add_generation_prompt"] is False


# -- image URL mode -------------------------------------------------------------------------------------
def test_url_mode_sends_urls_that_name_the_same_images(official, release, built, tmp_path):
    """run_api.sh's GPT-4o runs: --image_file_root is the release's URL root, so openai_model.py sends
    each image's URL with detail and no re-encoding. mmlb run --image-urls ROOT sends each image's
    path in the published folder under ROOT (the files layout's images/<family>/...): the same
    bodies, URL for URL naming the same bytes (both roots served by one loopback file server)."""
    from loopback_http import LoopbackServer

    files = {f"/release/{p.relative_to(release / 'mmlb_image').as_posix()}": p.read_bytes()
             for p in (release / "mmlb_image").rglob("*") if p.is_file()}
    files.update({f"/ours/{p.relative_to(built).as_posix()}": p.read_bytes()
                  for p in (built / "images").rglob("*") if p.is_file()})
    with LoopbackServer(files=files) as images, FakeOpenAI(openai_reply, strict=True) as server:
        os.environ["OPENAI_BASE_URL"] = server.base_url
        try:
            with api_official.patched(official):
                official_run(official, release, tmp_path / "o", GPT, yamls=("vh_all.yaml", "icl_all.yaml"),
                             image_root=images.url("/release"))
            theirs = list(server.requests)
            server.requests.clear()
            assert main(["run", "--backend", "openai", "--model", GPT, "--data", str(built), "--config", "vh_single_8k",
                         "--config", "vh_multi_8k", "--config", "cars196_8k", "--out", str(tmp_path / "p.jsonl"),
                         "--no-progress", "--image-urls", images.url("/ours")]) == 0
        finally:
            os.environ.pop("OPENAI_BASE_URL")
        ours = list(server.requests)
        assert server.refused == []
        urls = [p["image_url"]["url"] for b in ours for p in b["messages"][0]["content"] if p["type"] == "image_url"]
        assert urls and all(re.match(re.escape(images.url("/ours/images/")) + r"[a-z_]+/[^/]+/[0-9a-f]{2}/[0-9a-f]{64}\.\w+$",
                                     u) for u in urls)
        assert by_prompt(by_image_bytes(ours)) == by_prompt(by_image_bytes(theirs))


# -- scores and failures as the official runner's ---------------------------------------------------------
#: the key of eval_api.py's averaged_metrics that each metric of ours stands for (utils.py calculate_metrics
#: L525-577 @22b9f27; the summaries: rougeL_f1, the paper's GPT-4o judge being scripts/eval_gpt4_summ.py)
OFFICIAL_KEYS = {"binary_acc": "acc", "sub_em": "sub_em", "count_acc": "soft_acc", "mc_acc": "mc_acc",
                 "cls_acc": "cls_acc", "docqa": "doc_qa", "summ_judge": "rougeL_f1"}


def official_scores(out: Path) -> dict[str, dict]:
    """config -> eval_api.py's averaged_metrics, from the result files it wrote."""
    from mmlbdata.core.lengths import normalize_config_name

    scores = {}
    for path in out.glob("*.json"):
        result = json.loads(path.read_text())
        config = f"{normalize_config_name(result['args']['datasets'])}_{result['args']['input_max_length'] // 1024}k"
        scores[config] = result["averaged_metrics"]
    return scores


def test_eval_parity_official_scores_the_run_as_eval_api_did(gpt_bodies, built):
    """mmlb eval --parity official on mmlb run's predictions = eval_api.py's averaged_metrics on the
    same replies, config by config (its answers left out where the parsed output is empty, the
    answer prefix counted once). The summaries' ROUGE-L through the library's rouge_l."""
    from mmlbdata.evaluation.evaluate import evaluate_config, load_examples, read_predictions

    _, _, tmp = gpt_bodies
    theirs = official_scores(tmp / "official")
    assert sorted(theirs) == sorted(CONFIGS_8K + [LONG])
    assert main(["eval", str(tmp / "preds.jsonl"), "--data", str(built), "--out", str(tmp / "eval"), "--no-plot",
                 "--parity", "official", "--protocol", "v1.1", "--extractor", "none", "--no-progress"]) == 0
    report = json.loads((tmp / "eval" / "report.json").read_text())
    predictions = read_predictions(tmp / "preds.jsonl")
    compared = 0
    for config, metrics in theirs.items():
        examples = load_examples(built, config)
        metric = examples[0]["metric"]
        if metric == "summ_judge":  # scored here by its judge; eval_api.py's number is ROUGE-L
            for example in examples:
                example["metric"] = "rouge_l"
            ours = evaluate_config(examples, predictions.for_config(config), {"*": {"parity": "official"}})["score"]
        else:
            ours = report["configs"][config]["score"]
        key = OFFICIAL_KEYS[metric]
        if key not in metrics:  # every reply of the config parsed empty: eval_api.py averages nothing
            assert ours != ours or report["configs"][config]["metrics"][metric].get("answered") == 0, config
            continue
        assert ours * 100 == pytest.approx(metrics[key], abs=1e-9), (config, metric, ours, metrics)
        compared += 1
    assert compared >= 12


def test_failed_requests_are_tried_and_recorded_as_the_official_runner_does(official, release, built, tmp_path):
    """A server that fails every 3rd request, and every request of one question: the official
    eval_api.py and mmlb run make as many requests of that question (the client's 3 per call_api
    try, 5 tries) and record the same texts: its empty answer as 'Answer:' (system_template + ''),
    the others answered; nothing else lost. Resumed against a healthy server, mmlb run asks only
    that question again, and mmlb eval sees one answer per id."""
    doomed = "do any of them contain a bus"

    def fails(number: int, body: dict) -> bool:
        return number % 3 == 0 or doomed in json.dumps(body)

    def asked(bodies):
        return sum(doomed in json.dumps(b) for b in bodies)

    configs = ("vh_single_8k", "vh_multi_8k", "mmlongdoc_8k")
    with FakeOpenAI(openai_reply, strict=True, fails=fails) as server:
        os.environ["OPENAI_BASE_URL"] = server.base_url
        try:
            with api_official.patched(official):
                official_run(official, release, tmp_path / "official", GPT, yamls=("vh_all.yaml", "docqa_all.yaml"))
            theirs = list(server.requests)
            server.requests.clear()
            code = our_run(built, tmp_path / "preds.jsonl", "--backend", "openai", "--model", GPT, "--retry-pause", "0",
                           configs=configs)
        finally:
            os.environ.pop("OPENAI_BASE_URL")
        ours = list(server.requests)
    assert code == 1 and asked(theirs) == asked(ours) == 15
    cache = [json.loads(line) for path in (tmp_path / "official").glob("*mmlongdoc*.cache")
             for line in path.read_text().splitlines()]
    cache += [json.loads(line) for path in (tmp_path / "official").glob("vh_*.cache") for line in path.read_text().splitlines()]
    lines = [json.loads(line) for line in (tmp_path / "preds.jsonl").read_text().splitlines()]
    assert sorted(line["prediction"] for line in lines) == sorted(r["output"] for r in cache)
    [failed] = [line for line in lines if line.get("error")]
    assert failed["prediction"] == "Answer:" and "InternalServerError" in failed["error"]

    with FakeOpenAI(openai_reply, strict=True) as server:
        assert our_run(built, tmp_path / "preds.jsonl", "--backend", "openai", "--model", GPT, "--base-url",
                       server.base_url, configs=configs) == 0
        assert len(server.requests) == 1 and asked(server.requests) == 1
    from mmlbdata.evaluation.evaluate import read_predictions

    predictions = read_predictions(tmp_path / "preds.jsonl")
    assert predictions.duplicates == [] and predictions.rows["vh_multi_8k"][failed["id"]].get("error") is None


# -- which wrapper: load_LLM's order ---------------------------------------------------------------------
@pytest.mark.parametrize("model", [GPT, CLAUDE, GEMINI, "org/Qwen2-VL-7B-gpt-distilled", "/ckpt/gemini-style-qwen2.5-vl",
                                   "anthropic/claude-gpt-judge"])
def test_the_wrapper_is_chosen_in_load_llm_order(official, model, monkeypatch):
    """vlm_model/__init__.py @22b9f27 L7-12: "gpt" or "claude" anywhere in the path (case kept) ->
    openai_model.py, then "gemini" -> gemini.py, before --use_vllm and every family test; the
    official load_LLM itself picks the class here. A transformers run of such a path gets no family
    profile from auto (the official code would not run it as one) and says so."""
    genai = pytest.importorskip("google.genai")
    import vlm_model

    from mmlbdata.runner.api_profiles import api_profile_for
    from mmlbdata.runner.backends import BackendOptions, describe_profile

    monkeypatch.setattr(genai, "Client", api_official.FakeGenAI)
    with api_official.patched(official):
        args = mmlb_official.parse_arguments(official, ["--config", "configs/vh_all.yaml", "--model_name_or_path", model])
        chosen = type(vlm_model.load_LLM(args)).__name__
    ours = api_profile_for(model)
    assert (chosen, "claude" in model) == {"openai": ("OpenAIModel", False), "claude": ("OpenAIModel", True),
                                          "gemini": ("GeminiModel", False)}[ours]
    said = describe_profile(BackendOptions("hf", model))
    assert said.startswith("profile: generic: MMLongBench's load_LLM sends") and "before any model family" in said
    assert "profile: qwen" in describe_profile(BackendOptions("hf", "org/Qwen2-VL-7B-Instruct"))


def test_image_limit_and_size_are_the_official_functions(official):
    """model_utils.truncate_images (the last max_image_num images, earlier <image> tags removed) then
    re.split, and resize_image_max_size, run unchanged beside ours on random prompts and sizes."""
    import random

    from vlm_model import model_utils

    from mmlbdata.runner.api_profiles import keep_last_images, official_pieces, within
    from mmlbdata.runner.chat import to_content

    rng = random.Random(7)
    for _ in range(300):
        parts = [rng.choice(["", "a", "\n", " b c ", "<image>", "<image>"]) for _ in range(rng.randrange(12))]
        prompt, count = "".join(parts), "".join(parts).count("<image>")
        keep = rng.choice([None, 1, 2, 5])  # 0: the official image_list[-0:] keeps every image (then asserts)
        text, kept = model_utils.truncate_images(prompt, list(range(count)), keep)
        content, _ = to_content(prompt, count, None)
        pieces, indices = official_pieces(keep_last_images(content, keep))
        assert (pieces, indices) == (re.split(r"(<image>)", text), kept), (prompt, keep)
    for size in [(640, 480), (480, 640), (384, 384), (385, 10), (10, 2000), (1000, 999), (300, 200)]:
        image = Image.new("RGB", size, (10, 200, 30))
        [official_image] = model_utils.resize_image_max_size([image], 384)
        assert within(image, 384).size == official_image.size, size
