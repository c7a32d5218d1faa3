"""``mmlb run``'s API backends: each option reaching the request body, tries and failures, image URL
mode from a published folder, and the progress bar (tests/test_api_parity.py holds the bodies
against MMLongBench's own runner)."""
from __future__ import annotations

import base64
import fcntl
import io
import json
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
import urllib.request
from pathlib import Path

import pytest
from PIL import Image

from fake_openai import FakeOpenAI
from mmlbdata.cli import main
from tests.smoke import write_built

GPT = "gpt-4o-2024-11-20"
ROOT = Path(__file__).resolve().parents[1]


def row(ident: str, prompt: str, images: list[bytes], answer: str, metric: str = "binary_acc") -> dict:
    return {"id": ident, "dataset": "visual_haystack", "length": 8192, "num_tokens": 100, "prompt": prompt,
            "images": [{"bytes": b, "path": None} for b in images], "question": "", "answers": [answer],
            "metric": metric, "meta": "{}"}


@pytest.fixture(scope="module")
def built(tmp_path_factory, coco_mini):
    pics = [p.read_bytes() for p in sorted((coco_mini / "val2017").glob("*.jpg"))[:3]]
    short = [row(f"vh{i}", f"Haystack:\n<image>\n<image>\n\nQuestion {i}: is there a dog?", pics[:2], gold)
             for i, gold in enumerate(["Yes", "No", "Yes", "No"])]
    long = [row("vh128", "<image>\n<image>\n<image>\n\nQuestion: is there a cat?", pics, "No")]
    return write_built(tmp_path_factory.mktemp("built"), {"vh_single_8k": short, "vh_single_128k": long})


@pytest.fixture(autouse=True)
def _keys(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("GEMINI_API_KEY", "gm-test")


def run(built: Path, out: Path, *argv: str, configs=("vh_single_8k",)) -> int:
    named = [arg for config in configs for arg in ("--config", config)]
    return main(["run", "--data", str(built), *named, "--out", str(out), "--no-progress", *argv])


def images_of(body: dict) -> list[dict]:
    return [part["image_url"] for part in body["messages"][0]["content"] if part["type"] == "image_url"]


# -- options in the body ----------------------------------------------------------------------------------
@pytest.mark.parametrize("argv, at_8k, at_128k", [
    ((), "auto", "low"),  # scripts/run_api.sh: GPT-4o's vh at 64K/128K with --image_detail low (L139-145)
    (("--image-detail", "high"), "high", "high"),
    (("--settings", "generic"), "auto", "auto"),  # the wrapper's default (arguments.py: auto)
])
def test_image_detail_reaches_every_image(built, tmp_path, argv, at_8k, at_128k):
    with FakeOpenAI(lambda body: "yes", strict=True) as server:
        assert run(built, tmp_path / "p.jsonl", "--backend", "openai", "--model", GPT, "--base-url", server.base_url,
                   *argv, configs=("vh_single_8k", "vh_single_128k")) == 0
    details = {len(images_of(b)): {i["detail"] for i in images_of(b)} for b in server.requests}
    assert details == {2: {at_8k}, 3: {at_128k}}


@pytest.mark.parametrize("model", [GPT, "served"])
@pytest.mark.parametrize("argv, temperature, top_p", [
    ((), 0.0, 1.0),  # arguments.py defaults: greedy (do_sample False), top_p 1.0
    (("--temperature", "0.7", "--top-p", "0.9"), 0.0, 0.9),  # openai_model.py: temperature only when sampling
    (("--do-sample", "--temperature", "0.7", "--top-p", "0.9"), 0.7, 0.9),
])
def test_sampling_options_reach_the_body(built, tmp_path, model, argv, temperature, top_p):
    """openai_model.py generate: temperature=self.temperature if self.do_sample else 0.0, top_p=self.top_p;
    the server profile ("served") follows the same rule (it sent temperature 0 whatever was asked)."""
    with FakeOpenAI(lambda body: "yes") as server:
        assert run(built, tmp_path / "p.jsonl", "--backend", "openai", "--model", model, "--base-url", server.base_url,
                   "--limit", "1", *argv) == 0
    [body] = server.requests
    assert (body["temperature"], body["top_p"]) == (temperature, top_p)


def test_image_resize_scales_every_image_before_png(built, tmp_path, coco_mini):
    """openai_model.py prepare_inputs: resize_image(image_list, image_resize): int(w * f) x int(h * f), LANCZOS."""
    first = sorted((coco_mini / "val2017").glob("*.jpg"))[0]
    width, height = Image.open(first).size
    with FakeOpenAI(lambda body: "yes", strict=True) as server:
        assert run(built, tmp_path / "p.jsonl", "--backend", "openai", "--model", GPT, "--base-url", server.base_url,
                   "--limit", "1", "--image-resize", "0.5") == 0
    url = images_of(server.requests[0])[0]["url"]
    sent = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))
    assert sent.format == "PNG" and sent.size == (int(width * 0.5), int(height * 0.5))


def test_gemini_options_reach_the_request(built, tmp_path, monkeypatch):
    """gemini.py: images at most --max-image-size a side (resize_image_max_size), the config's
    temperature and top_p as given (do_sample is not read there), no max_output_tokens for the
    thinking series (google-genai issue 626)."""
    genai = pytest.importorskip("google.genai")
    import api_official

    monkeypatch.setattr(genai, "Client", api_official.FakeGenAI)
    api_official.FakeGenAI.reset()
    assert run(built, tmp_path / "p.jsonl", "--backend", "gemini", "--model", "gemini-2.5-pro-preview-03-25",
               "--limit", "1", "--max-image-size", "100", "--temperature", "0.3", "--top-p", "0.8") == 0
    [call] = api_official.FakeGenAI.calls
    sizes = [Image.open(io.BytesIO(data)).size for data, _ in api_official.FakeGenAI.uploads.values()]
    assert sizes and all(max(size) == 100 for size in sizes)
    assert call["config"].model_dump(exclude_none=True) == {"temperature": 0.3, "top_p": 0.8, "candidate_count": 1}
    assert [json.loads(line)["prediction"] for line in (tmp_path / "p.jsonl").read_text().splitlines()] == ["Answer:yes"]


# -- tries and failures -------------------------------------------------------------------------------------
def test_tries_pause_as_call_api_and_give_up_on_a_refusal():
    """model_utils.call_api(func, limit=5, pause=5): 5 calls, 5 s apart; an answer a provider gives
    every time (400, 401, 403, 404, 422) is not asked again."""
    from mmlbdata.runner.api import Tries

    pauses: list[float] = []
    calls = []

    def flaky():
        calls.append(1)
        if len(calls) < 5:
            raise RuntimeError("503")
        return "ok"

    assert Tries(sleep=pauses.append).call(flaky, "x") == "ok" and pauses == [5.0] * 4
    refused = type("BadRequest", (Exception,), {"status_code": 400})
    calls.clear()

    def bad():
        calls.append(1)
        raise refused("Unrecognized request argument supplied: x")

    with pytest.raises(refused):
        Tries(sleep=pauses.append).call(bad, "x")
    assert len(calls) == 1


def test_a_failing_request_never_holds_or_fails_its_neighbours(built, tmp_path):
    """One request failing every try while three others are answered: theirs are written, its line
    records the error with an empty reply, the run says 1 failed and exits 1."""
    def fails(number, body):
        return "Question 2:" in json.dumps(body)

    with FakeOpenAI(lambda body: "yes", fails=fails, delay=0.05) as server:
        code = run(built, tmp_path / "p.jsonl", "--backend", "openai", "--model", GPT, "--base-url", server.base_url,
                   "--retry-pause", "0", "--concurrency", "4")
    lines = {json.loads(line)["id"]: json.loads(line) for line in (tmp_path / "p.jsonl").read_text().splitlines()}
    assert code == 1 and sorted(lines) == ["vh0", "vh1", "vh2", "vh3"]
    assert [i for i, line in lines.items() if line.get("error")] == ["vh2"] and lines["vh2"]["prediction"] == "Answer:"
    assert all(lines[i]["prediction"] == "Answer:yes" for i in ("vh0", "vh1", "vh3"))


def test_a_run_whose_requests_all_fail_stops_early(built, tmp_path, monkeypatch, caplog):
    """A wrong key (401: not tried again) fails every request: the run stops after the first few
    instead of recording every example as failed, and says what to check."""
    from mmlbdata.runner import core

    monkeypatch.setattr(core, "FAILED_BEFORE_ANY_ANSWER", 2)
    with FakeOpenAI(lambda body: "yes", fail_first=100, fail_status=401) as server:
        code = run(built, tmp_path / "p.jsonl", "--backend", "openai", "--model", GPT, "--base-url", server.base_url,
                   "--concurrency", "1")
    assert code == 1 and len((tmp_path / "p.jsonl").read_text().splitlines()) < 4
    assert "check --base-url and the API key" in caplog.text


def test_an_api_model_without_its_key_is_one_line(built, tmp_path, monkeypatch, capsys):
    """openai_model.py reads os.environ["OPENAI_API_KEY"] (gemini.py GEMINI_API_KEY): without it, one line."""
    monkeypatch.delenv("OPENAI_API_KEY")
    assert run(built, tmp_path / "p.jsonl", "--backend", "openai", "--model", GPT) == 2
    assert "openai needs an API key: set OPENAI_API_KEY" in capsys.readouterr().err


# -- image URL mode ------------------------------------------------------------------------------------------
HUB_RUN = """
import os, sys
from mmlbdata.cli import main
sys.exit(main(["run", "--backend", "openai", "--model", "gpt-4o-2024-11-20", "--data", sys.argv[1], "--config",
               sys.argv[2], "--out", sys.argv[3], "--no-progress", "--image-urls", "hub"]))
"""


def test_url_mode_sends_the_hub_urls_of_a_pushed_folder(tmp_path, coco_mini, tokenizer_path):
    """A folder built and pushed (`mmlb push`), run from the Hub with --image-urls hub: each image is
    sent as <endpoint>/datasets/<repo>/resolve/<commit>/images/<family>/..., the path its row records,
    and that URL serves the image's bytes."""
    from loopback_hub import LoopbackHub, commit_of

    from mmlbdata.dataset.build import build_configs
    from mmlbdata.dataset.hub import FolderUploader, push_folder

    [result] = build_configs(["vh_single_8k"], {"coco": coco_mini}, tmp_path / "built", limit=2,
                             store_root=tmp_path / "store", tokenizer=tokenizer_path, progress=False)
    assert result.ok, result.error
    uploader = FolderUploader(tmp_path / "hub")
    push_folder(tmp_path / "built", "org/mmlb", uploader=uploader, card=True)
    repo = uploader.repo_dir("org/mmlb")
    files = {p.relative_to(repo).as_posix(): p.read_bytes() for p in sorted(repo.rglob("*")) if p.is_file()}
    with LoopbackHub(repos={"org/mmlb": files}) as hub, FakeOpenAI(lambda body: "yes", strict=True) as server:
        hub.run_client(HUB_RUN, "org/mmlb", "vh_single_8k", str(tmp_path / "p.jsonl"), hf_home=tmp_path / "hf",
                       extra_env={"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-test"})
        urls = [image["url"] for body in server.requests for image in images_of(body)]
        prefix = f"{hub.endpoint}/datasets/org/mmlb/resolve/{commit_of('org/mmlb')}/"
        assert urls and all(url.startswith(prefix + "images/vh/") for url in urls)
        for url in set(urls):
            with urllib.request.urlopen(url) as response:  # noqa: S310 - the loopback Hub
                assert response.read() == (tmp_path / "built" / url[len(prefix):]).read_bytes()
    predicted = (tmp_path / "p.jsonl").read_text().splitlines()
    assert len(server.requests) == len(predicted) > 1 and server.refused == []


def test_url_mode_says_so_for_embedded_images(built, tmp_path, capsys):
    """An embedded config has no image files to point at: one line, before any request."""
    with FakeOpenAI(lambda body: "yes") as server:
        assert run(built, tmp_path / "p.jsonl", "--backend", "openai", "--model", GPT, "--base-url", server.base_url,
                   "--image-urls", "https://example.test/resolve/main") == 2
    assert server.requests == [] and "image URL mode needs images stored as files" in capsys.readouterr().err


def test_repo_path_is_the_path_the_row_records(tmp_path):
    from mmlbdata.runner.api_profiles import ImageURLs, repo_path

    local = {"bytes": None, "path": str(tmp_path / "images" / "vh" / "p-1" / "ab" / "abc.jpg")}
    assert repo_path(local, str(tmp_path)) == "images/vh/p-1/ab/abc.jpg"
    hub = {"bytes": b"x", "path": "hf://datasets/org/mmlb@0123abcd/images/vh/p-1/ab/abc.jpg"}
    assert repo_path(hub, None) == "images/vh/p-1/ab/abc.jpg"
    assert ImageURLs("https://hf.test/datasets/org/mmlb/resolve/main", str(tmp_path)).url(local) == \
        "https://hf.test/datasets/org/mmlb/resolve/main/images/vh/p-1/ab/abc.jpg"
    with pytest.raises(ValueError, match="stored as files"):
        repo_path({"bytes": b"x", "path": "abc.jpg"}, str(tmp_path))
    with pytest.raises(ValueError, match="not inside"):
        repo_path({"bytes": None, "path": "/elsewhere/abc.jpg"}, str(tmp_path))


# -- progress --------------------------------------------------------------------------------------------------
def on_a_terminal(argv: list[str], timeout: float = 120) -> str:
    """``python -m mmlbdata.cli ARGV`` with stdout and stderr on a pseudo-terminal; what it printed."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))  # a terminal's size: 40 x 120
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "mmlbdata.cli", *argv], stdin=slave, stdout=slave, stderr=slave,
                            env=env, close_fds=True)
    os.close(slave)
    chunks, deadline = [], time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError:  # EIO: the child closed the terminal
                    break
                if not data:
                    break
                chunks.append(data)
            elif proc.poll() is not None:
                break
    finally:
        os.close(master)
        proc.wait(timeout=30)
    assert proc.returncode == 0, b"".join(chunks).decode(errors="replace")[-3000:]
    return b"".join(chunks).decode(errors="replace")


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    from tests.tiny import build_tiny_vlm

    return build_tiny_vlm(tmp_path_factory.mktemp("tiny"))


@pytest.mark.parametrize("backend", ["openai", "hf"])
def test_a_terminal_shows_a_bar_with_total_rate_and_eta_and_one_summary(built, tmp_path, backend, request):
    """Issue 43 defect 5 and issue 44: a bar counting the config's 4 examples (n/4, ex/s, the time
    left) while the run goes, on an API backend and a local one, and the summary printed once."""
    common = ["run", "--data", str(built), "--config", "vh_single_8k", "--out", str(tmp_path / "p.jsonl")]
    if backend == "openai":
        with FakeOpenAI(lambda body: "yes", delay=0.4) as server:
            printed = on_a_terminal([*common, "--backend", "openai", "--model", GPT, "--base-url", server.base_url,
                                     "--concurrency", "1"])
    else:
        model = request.getfixturevalue("tiny_model")
        printed = on_a_terminal([*common, "--backend", "hf", "--model", str(model), "--device", "cpu",
                                 "--max-new-tokens", "2"])
    if backend == "openai":  # 0.4 s per answer: the bar redraws (every 0.2 s) while the run goes
        assert re.search(r"mmlb run: +\d+%\|[^|]*\| *[1-3]/4 \[\d\d:\d\d<\d\d:\d\d, +[\d.]+(ex/s|s/ex)", printed), printed
    else:  # the tiny model answers 4 examples faster than one redraw: the bar opens at 0/4, closes at 4/4
        assert re.search(r"mmlb run: +0%\|[^|]*\| *0/4 \[", printed), printed
    assert re.search(r"mmlb run: 100%\|[^|]*\| 4/4 \[\d\d:\d\d<00:00, +[\d.]+(ex/s|s/ex)", printed), printed
    assert printed.count("examples in ") == 1 and "4 examples in " in printed


def test_no_progress_is_quiet_and_the_summary_is_printed_once(built, tmp_path, capfd):
    with FakeOpenAI(lambda body: "yes") as server:
        assert run(built, tmp_path / "p.jsonl", "--backend", "openai", "--model", GPT, "--base-url", server.base_url,
                   configs=("vh_single_8k", "vh_single_128k")) == 0
    out, err = capfd.readouterr()
    assert "mmlb run:  " not in err and "ex/s]" not in err
    assert (out + err).count("examples in ") == 1


# -- run_api.sh as data -------------------------------------------------------------------------------------
def test_the_settings_table_is_run_api_sh():
    """official/mmlb_api_settings.RUNS against scripts/run_api.sh @22b9f27 itself: every block's
    model, tasks, lengths, script, image root and flags."""
    import mmlb_official
    from mmlbdata.official.mmlb_api_settings import RELEASE_IMAGE_URLS, RUNS

    script = mmlb_official.show("scripts/run_api.sh").decode()
    blocks = re.findall(r"model_name=(\S+)\nfor task in ([^;]+); do\n\s+python (\S+) (.*?)\ndone", script, re.S)
    parsed = []
    for model, tasks, program, rest in blocks:
        flags = dict(re.findall(r"--(\w+) (\S+)", rest.replace("\\\n", " ")))
        parsed.append((model, tuple(re.findall(r'"(\w+)"', tasks)), tuple(int(k) for k in flags["test_length"].split(",")),
                       program, flags["image_file_root"] == RELEASE_IMAGE_URLS, int(flags["api_sleep"]),
                       flags.get("image_detail", "auto"), int(flags["max_image_num"]) if "max_image_num" in flags else None,
                       int(flags["max_image_size"]) if "max_image_size" in flags else None))
    assert parsed == [(r.model, r.tasks, r.lengths, r.script, r.image_urls, r.api_sleep, r.image_detail,
                       r.max_image_num, r.max_image_size) for r in RUNS]
