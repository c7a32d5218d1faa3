"""A newcomer's first run (issue #18): offline tokenizer message, pasteable paths, demo provenance,
missing extras named, nothing left behind."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mmlbdata.core import tokens
from mmlbdata.cli import main

ROOT = Path(__file__).resolve().parents[1]


def _offline_env(tmp_path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("MMLB_TOKENIZER", "HF_HUB_OFFLINE")}
    # an empty cache, and a Hub endpoint nothing listens on: as a machine with no network
    env.update(HF_HOME=str(tmp_path / "hf"), HF_ENDPOINT="http://127.0.0.1:9", PYTHONPATH=str(ROOT))
    return env


def test_offline_demo_fails_fast_with_one_actionable_message(tmp_path):
    started = time.monotonic()
    run = subprocess.run([sys.executable, "-m", "mmlbdata.cli", "demo", "--out", str(tmp_path / "d")],
                         capture_output=True, text=True, env=_offline_env(tmp_path), cwd=tmp_path, timeout=120)
    elapsed = time.monotonic() - started
    assert run.returncode == 2
    assert elapsed < 30, f"took {elapsed:.0f} s to fail"
    err = run.stderr
    assert err.count("needs the Llama-2 tokenizer model") == 1  # once, not once per config
    assert "hf download hf-internal-testing/llama-tokenizer tokenizer.model" in err
    assert "export MMLB_TOKENIZER=" in err and "--tokenizer" in err
    assert "huggingface-cli" not in err and "Retrying" not in err and "Traceback" not in err
    assert not (tmp_path / "d").exists()  # nothing half-made in the user's folder


def test_hf_hub_offline_fails_without_a_probe(monkeypatch, tmp_path):
    monkeypatch.delenv("MMLB_TOKENIZER", raising=False)
    monkeypatch.setattr(tokens, "_DEFAULT_LOOKUP", {})
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", True)
    monkeypatch.setattr("huggingface_hub.try_to_load_from_cache", lambda *a, **k: None)
    monkeypatch.setattr(tokens, "hub_unreachable", lambda *a, **k: pytest.fail("probed while offline"))
    with pytest.raises(tokens.TokenizerNotFoundError, match="HF_HUB_OFFLINE is set"):
        tokens.find_tokenizer_model()
    # remembered: the second lookup does not search again
    monkeypatch.setattr("huggingface_hub.try_to_load_from_cache", lambda *a, **k: pytest.fail("searched twice"))
    with pytest.raises(tokens.TokenizerNotFoundError):
        tokens.find_tokenizer_model()


def test_cached_tokenizer_is_found_offline(monkeypatch, tokenizer_path):
    monkeypatch.delenv("MMLB_TOKENIZER", raising=False)
    monkeypatch.setattr(tokens, "_DEFAULT_LOOKUP", {})
    monkeypatch.setattr("huggingface_hub.try_to_load_from_cache", lambda *a, **k: str(tokenizer_path))
    assert tokens.find_tokenizer_model() == tokenizer_path


def test_global_tokenizer_option_is_accepted(tmp_path, tokenizer_path, monkeypatch, capsys):
    monkeypatch.delenv("MMLB_TOKENIZER", raising=False)
    out = tmp_path / "demo"
    assert main(["--tokenizer", str(tokenizer_path), "demo", "--out", str(out), "--questions", "1",
                 "--no-progress"]) == 0
    assert os.environ["MMLB_TOKENIZER"] == str(tokenizer_path)


@pytest.fixture(scope="module")
def demo_folder(tmp_path_factory, tokenizer_path):
    folder = tmp_path_factory.mktemp("first") / "demo_mmlb"
    cwd = os.getcwd()
    os.chdir(folder.parent)
    try:  # a relative --out, as a user types it
        assert main(["demo", "--out", "demo_mmlb", "--questions", "1", "--no-progress",
                     "--tokenizer", str(tokenizer_path)]) == 0
    finally:
        os.chdir(cwd)
    return folder


def test_load_with_line_is_absolute(tmp_path, tokenizer_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["demo", "--out", "rel_out", "--questions", "1", "--no-progress",
                 "--tokenizer", str(tokenizer_path)]) == 0
    line = next(l for l in capsys.readouterr().out.splitlines() if l.startswith("load with:"))
    assert f"load_dataset({str(tmp_path / 'rel_out')!r}" in line


def test_card_and_export_print_absolute_paths(demo_folder, tmp_path, capsys, monkeypatch):
    """Issue #18: every path printed for pasting is absolute, also when --out was typed relative."""
    monkeypatch.chdir(demo_folder.parent)
    capsys.readouterr()
    assert main(["card", demo_folder.name, "--no-plot"]) == 0
    assert capsys.readouterr().out.strip() == f"wrote {demo_folder / 'README.md'}"
    monkeypatch.chdir(tmp_path)
    for fmt in ("lmms-eval", "vlmevalkit", "mmlongbench"):
        assert main(["export", str(demo_folder), "--format", fmt, "--out", f"ex_{fmt}", "--config",
                     "vh_single_8k"]) == 0
        printed = capsys.readouterr().out.split()
        assert printed and all(line.startswith(str(tmp_path / f"ex_{fmt}")) for line in printed), printed
    readme = (tmp_path / "ex_lmms-eval" / "README.md").read_text()
    assert f"--include_path {tmp_path / 'ex_lmms-eval' / 'mmlb_vh'} " in readme


def test_demo_provenance_in_manifest_card_stats_and_push(demo_folder, tmp_path, capsys):
    manifest = json.loads((demo_folder / "manifests" / "vh_single_8k.json").read_text())
    assert manifest["provenance"].startswith("synthetic demo")
    assert main(["card", str(demo_folder), "--no-plot"]) == 0
    card = (demo_folder / "README.md").read_text()
    assert "DEMO DATA" in card and "original releases" not in card.split("## What it measures")[0]
    assert "CC BY" not in card and "license:\n- apache-2.0" in card
    capsys.readouterr()
    assert main(["stats", str(demo_folder)]) == 0
    assert "DEMO DATA" in capsys.readouterr().out
    assert main(["push", str(demo_folder), "--repo", "me/x", "--dry-run", str(tmp_path / "hub")]) == 1
    assert "--allow-demo" in capsys.readouterr().err
    assert main(["push", str(demo_folder), "--repo", "me/x", "--dry-run", str(tmp_path / "hub"),
                 "--allow-demo"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("would push 4 config(s)") and "pushed" not in out


def test_missing_extra_is_one_line_naming_the_extra(monkeypatch, capsys, tmp_path):
    import builtins

    real_import = builtins.__import__

    def no_torch(name, *args, **kwargs):
        if name.split(".")[0] in ("torch", "transformers", "matplotlib"):
            raise ModuleNotFoundError(f"No module named '{name}'", name=name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_torch)
    for mod in [m for m in sys.modules if m.split(".")[0] in ("torch", "transformers", "matplotlib")]:
        monkeypatch.delitem(sys.modules, mod)
    (tmp_path / "data" / "c").mkdir(parents=True)  # a folder holding config c (--data and --config are checked first)
    code = main(["run", "--backend", "hf", "--model", "x", "--data", str(tmp_path), "--config", "c",
                 "--out", str(tmp_path / "p.jsonl")])
    err = capsys.readouterr().err
    assert code == 2 and "pip install 'mmlbdata[runner]'" in err and "Traceback" not in err
    from mmlbdata.evaluation import report

    with pytest.raises(ImportError, match=r"mmlbdata\[eval\]"):
        report.plot({"configs": {}}, tmp_path / "s.png")


def test_output_folder_has_no_lock_files(demo_folder):
    leftovers = [p.name for p in demo_folder.rglob("*") if p.name.endswith(".lock") or p.name.endswith(".partial")]
    assert leftovers == []


def test_library_warnings_are_printed_once(tmp_path):
    code = ("import logging, sys; from mmlbdata import cli; sys.argv=['mmlb'];"
            "cli.main(['list', 'no_such_*']);"
            "from huggingface_hub.utils import logging as hl; hl.get_logger('huggingface_hub.x').warning('hub-once');"
            "logging.getLogger('datasets.builder').warning('ds-once')")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=tmp_path)
    assert run.stderr.count("hub-once") == 1 and run.stderr.count("ds-once") == 1


@pytest.mark.parametrize("command", ["build", "demo", "stats", "card", "push", "eval", "run", "export", "fetch", "list"])
def test_every_command_takes_no_progress(command):
    from mmlbdata.cli import make_parser

    parser = make_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices[command]
    assert "--no-progress" in sub._option_string_actions


def test_ci_runs_the_readme_test_command_verbatim():
    """.ci/run evals the README's test line; the line must exist and be the documented one."""
    script = (ROOT / ".ci" / "run").read_text()
    extract = next(line for line in script.splitlines() if line.startswith("test_command="))
    command = extract.split("=", 1)[1].strip()[2:-1]  # the $( ... ) pipeline
    out = subprocess.run(["bash", "-c", command], cwd=ROOT, capture_output=True, text=True)
    assert out.stdout.strip() == "python -m pytest"
    # CI's real sample data, never skipped where it is beside the clone
    assert "if [ -d ../shared/data ]; then\n    export MMLB_TEST_DATA=../shared/data\n" in script
    assert 'eval "$test_command"' in script and "pytest" not in script.replace(extract, "").replace(
        "the README's test command", "")
