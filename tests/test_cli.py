"""The `mmlb` command: demo, list, build, stats, exit codes and help."""
from __future__ import annotations

import json
import subprocess
import sys

import datasets
import pytest

from mmlbdata.cli import main


def test_demo_builds_loadable_configs(tmp_path, tokenizer_path, capsys, monkeypatch):
    monkeypatch.setenv("MMLB_TOKENIZER", str(tokenizer_path))
    out = tmp_path / "demo"
    assert main(["demo", "--out", str(out), "--questions", "2"]) == 0
    printed = capsys.readouterr().out
    assert "load_dataset(" in printed and "DEMO DATA" in printed
    for config in ["vh_single_8k", "vh_single_32k", "vh_multi_8k", "vh_multi_32k"]:
        ds = datasets.load_dataset(str(out), config, split="test").remove_columns("images")
        assert ds.num_rows > 0
        assert all(r["num_tokens"] <= r["length"] < json.loads(r["meta"])["next_num_tokens"] for r in ds)
    assert main(["stats", str(out)]) == 0
    stats = capsys.readouterr().out
    assert "vh_multi_32k" in stats and "fill" in stats


def test_list_and_sources(capsys):
    assert main(["list", "vh_*"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    # 5 lengths + 256k/512k (the extended release) x 2 datasets, + vh_single_4k / vh_multi_4k (the
    # official release's 4K files)
    assert len(lines) == 17 and lines[0].split() == ["config", "family", "length", "metric", "sources"]
    assert lines[1].startswith("vh_single_8k") and lines[-1].startswith("vh_multi_4k")
    assert any(line.split()[:3] == ["vh_single_512k", "vh", "524288"] for line in lines)
    assert main(["list", "--sources"]) == 0
    listing = capsys.readouterr().out
    assert listing.startswith("source key") and "coco" in listing and "mmlb_release" in listing
    assert main(["list", "no_such_*"]) == 1


def test_build_exit_codes_and_messages(tmp_path, coco_mini, tokenizer_path, capsys):
    args = ["build", "--out", str(tmp_path / "o"), "--tokenizer", str(tokenizer_path), "--no-progress",
            "--cache-dir", str(tmp_path / "cache")]
    assert main(args + ["vh_singel_8k"]) == 2
    assert "did you mean vh_single_8k" in capsys.readouterr().err
    assert main(args + ["vh_single_8k"]) == 1  # no source given: nothing could be built
    assert "--source coco=PATH" in capsys.readouterr().out
    assert main(args + ["vh-single_8k", "--source", f"coco={coco_mini}", "--limit", "2"]) == 0
    assert datasets.load_dataset(str(tmp_path / "o"), "vh_single_8k", split="test").num_rows == 12


def test_full_build_without_sources_says_the_way_forward_once(tmp_path, tokenizer_path, capsys):
    (tmp_path / "sources").mkdir()
    assert main(["build", "--all", "--benchmark", "mmneedle", "--sources-dir", str(tmp_path / "sources"),
                 "--out", str(tmp_path / "o"), "--tokenizer", str(tokenizer_path), "--no-progress"]) == 1
    captured = capsys.readouterr()
    assert "missing sources" not in captured.out and not (tmp_path / "o").exists()
    # one compact summary: a line per missing source key, not one per config
    summary = captured.out[captured.out.index("not built, sources missing: "):].splitlines()
    assert summary[1].split()[:3] == ["source", "key", "configs"]
    assert len(summary) == 2 + len({line.split()[0] for line in summary[2:]}) < 10
    notes = [line for line in captured.err.splitlines() if line.startswith("note:")]
    assert len(notes) == 1 and "not built for lack of sources" in notes[0] and "--fetch" in notes[0]


def test_stats_of_an_unbuilt_folder_is_an_error_on_stderr(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    for command in ("stats", "card", "export"):  # each says it the same way
        extra = ["--format", "lmms-eval", "--out", "x"] if command == "export" else []
        argv = [command, str(tmp_path / "empty"), *extra]
        assert main(argv) == 1
        captured = capsys.readouterr()
        assert captured.out == "" and captured.err.startswith("error: no built config in")
        assert main([command, str(tmp_path / "mmbl"), *argv[2:]]) == 1
        assert capsys.readouterr().err.startswith(f"error: {tmp_path / 'mmbl'}: no such folder")


@pytest.mark.parametrize("command", [[], ["build"], ["list"], ["stats"], ["demo"], ["push"]])
def test_help_everywhere(command, capsys):
    with pytest.raises(SystemExit) as info:
        main([*command, "--help"])
    assert info.value.code == 0 and "usage: mmlb" in capsys.readouterr().out


def test_console_script_runs():
    run = subprocess.run([sys.executable, "-m", "mmlbdata.cli", "--version"], capture_output=True, text=True)
    assert run.returncode == 0 and "mmlbdata" in run.stdout
