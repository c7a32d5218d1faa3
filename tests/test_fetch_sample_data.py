"""The sample data on a fresh machine: ``python -m tests.fetch_sample_data`` (tests/fetch_sample_data.py).

The origin is a loopback HTTP server serving the shared copy at the raw-GitHub paths the manifest
names (``/<repository>/<commit>/<path>``), so the manifest's mapping, the downloader's checksums
and resume, and the derived ``labels.json`` are all exercised; nothing leaves the machine.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest
from loopback_http import Behaviour, LoopbackServer

from tests.fetch_sample_data import COMMAND, COMPLETE, MANIFEST, fetch, is_complete

ROOT = Path(__file__).resolve().parents[1]


def _origin_files(real_data: Path) -> dict[str, bytes]:
    """URL path -> bytes, for every fetched file of the manifest, from the shared copy."""
    content = json.loads(MANIFEST.read_text())
    files = {}
    for entry in content["files"]:
        if "source" in entry:
            origin = content["origins"][entry["origin"]]
            files[f"/{origin['repo']}/{origin['commit']}/{quote(entry['source'])}"] = \
                (real_data / entry["path"]).read_bytes()
    return files


def test_the_manifest_names_every_file_of_the_shared_copy(real_data):
    """Every file a test may read is fetched (or made), with the shared copy's size and bytes."""
    import hashlib

    entries = {e["path"]: e for e in json.loads(MANIFEST.read_text())["files"]}
    shared = {p.relative_to(real_data).as_posix() for p in real_data.rglob("*") if p.is_file()}
    # beside the listed files: the shared copy's own description, or the fetched copy's completion mark
    assert shared - set(entries) in ({"README.md"}, {COMPLETE})
    for path, entry in entries.items():
        body = (real_data / path).read_bytes()
        assert (len(body), hashlib.sha256(body).hexdigest()) == (entry["size"], entry["sha256"]), path
        assert ("source" in entry) != ("derived" in entry), path


def test_fetch_from_the_origins_checks_every_file_and_resumes(real_data, tmp_path):
    files = _origin_files(real_data)
    broken = sorted(files)[:2]
    with LoopbackServer(files=files, behaviour={path: Behaviour(status=404) for path in broken}) as origin:
        problems = fetch(tmp_path / "data", base_url=origin.url(""), progress=False, retries=0)
        assert len(problems) == 2 and not is_complete(tmp_path / "data")
        kept = sorted(set(files) - set(broken))[0]
        assert origin.count(kept) == 1
        origin.behaviour.clear()
        assert fetch(tmp_path / "data", base_url=origin.url(""), progress=False, retries=0) == []
        assert origin.count(kept) == 1  # already there with its checksum: not asked for again
        assert all(origin.count(path) == 2 for path in broken)
    assert is_complete(tmp_path / "data")
    labels = "images/imagenet_samples_100/labels.json"  # made from the photos, not fetched
    assert (tmp_path / "data" / labels).read_bytes() == (real_data / labels).read_bytes()


def test_a_corrupt_download_is_refused(real_data, tmp_path):
    files = _origin_files(real_data)
    target = next(path for path in sorted(files) if path.endswith("tokenizer.model"))
    files[target] = bytes([files[target][0] ^ 0xFF]) + files[target][1:]  # same size, other bytes
    with LoopbackServer(files=files) as origin:
        problems = fetch(tmp_path / "data", base_url=origin.url(""), progress=False, retries=0)
    assert [line.split(":")[0] for line in problems] == ["llama2/tokenizer.model"]
    assert "sha256 mismatch" in problems[0] and not (tmp_path / "data" / "llama2" / "tokenizer.model").exists()


def _fresh_clone(into: Path) -> Path:
    """The project's files (tracked, and new ones not ignored) copied where no ../shared is."""
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"], cwd=ROOT,
                            capture_output=True, text=True)
    if listed.returncode != 0:
        pytest.skip("not a git checkout: cannot tell the project's files")
    clone = into / "clone"
    for name in filter(None, listed.stdout.split("\0")):
        source = ROOT / name
        if source.is_file():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            (clone / name).write_bytes(source.read_bytes())
    assert not (clone.parent / "shared").exists()
    return clone


DATA_TESTS = ["tests/test_tokens.py", "tests/test_icl.py"]  # the tokenizer; photos and the made labels.json


def test_a_fresh_clone_skips_without_the_data_then_fetches_it_and_passes(real_data, tmp_path):
    clone = _fresh_clone(tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in ("MMLB_TEST_DATA", "MMLB_TOKENIZER")}
    env["PYTHONPATH"] = str(clone)
    pytest_command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", *DATA_TESTS]
    before = subprocess.run(pytest_command, cwd=clone, env=env, capture_output=True, text=True, timeout=900)
    assert before.returncode == 0, before.stdout[-3000:]
    skips = [line for line in before.stdout.splitlines() if line.startswith("SKIPPED")]
    assert skips and all(f"sample data absent: run `{COMMAND}`" in line for line in skips)
    assert "Traceback" not in before.stdout and " passed" in before.stdout  # tests needing no data still ran
    with LoopbackServer(files=_origin_files(real_data)) as origin:
        fetched = subprocess.run([sys.executable, "-m", "tests.fetch_sample_data", "--no-progress"], cwd=clone,
                                 env={**env, "MMLB_SAMPLE_DATA_URL": origin.url("")}, capture_output=True,
                                 text=True, timeout=900)
    assert fetched.returncode == 0, fetched.stderr[-3000:]
    assert is_complete(clone / "tests" / "sample_data")
    after = subprocess.run(pytest_command, cwd=clone, env=env, capture_output=True, text=True, timeout=900)
    assert after.returncode == 0, after.stdout[-3000:]
    assert "skipped" not in after.stdout.splitlines()[-1], after.stdout[-2000:]
