"""Messages a newcomer can act on (issue 32): path arguments checked before any work, the
tokenizer found in a folder or refused at once for what it is, "did you mean" for flags, source
keys and config names."""
from __future__ import annotations

import json
import time

import pytest

from mmlbdata.cli import main
from mmlbdata.core import tokens


def run(capsys, *argv) -> tuple[int, str]:
    code = main([str(a) for a in argv])
    return code, capsys.readouterr().err


def test_push_of_a_mistyped_folder_is_refused_before_anything(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, err = run(capsys, "push", "mmbl", "--repo", "org/mmlb", "--dry-run", "dry")
    assert code == 1 and f"error: mmbl: no such folder: {tmp_path / 'mmbl'}" in err
    assert not (tmp_path / "dry").exists()


def test_push_of_a_folder_with_no_build_says_so(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    code, err = run(capsys, "push", tmp_path / "empty", "--repo", "org/mmlb", "--dry-run", tmp_path / "dry")
    assert code == 1 and "no built config in" in err and not (tmp_path / "dry").exists()


def test_push_of_a_mistyped_config_gets_a_suggestion(tmp_path, capsys):
    from tests.smoke import write_built

    folder = write_built(tmp_path / "built", {"vh_single_8k": []})
    code, err = run(capsys, "push", folder, "--repo", "org/mmlb", "--config", "vh_singel_8k",
                    "--dry-run", tmp_path / "d")
    assert code == 1 and "did you mean 'vh_single_8k'" in err


def build(tmp_path, coco_mini, *extra) -> list:
    return ["build", "vh_single_8k", "--source", f"coco={coco_mini}", "--out", tmp_path / "o", "--limit", "1",
            "--no-progress", "--cache-dir", tmp_path / "cache", *extra]


def test_tokenizer_folder_finds_its_tokenizer_model(tmp_path, coco_mini, tokenizer_path, capsys):
    assert tokens.find_tokenizer_model(tokenizer_path.parent) == tokenizer_path
    code, _ = run(capsys, *build(tmp_path, coco_mini, "--tokenizer", tokenizer_path.parent))
    assert code == 0


def test_tokenizer_folder_without_the_model(tmp_path, coco_mini, capsys):
    code, err = run(capsys, *build(tmp_path, coco_mini, "--tokenizer", tmp_path))
    assert code == 2 and f"the folder given by --tokenizer has no tokenizer.model: {tmp_path}" in err


@pytest.mark.parametrize("content, what", [
    (b"", "is an empty file"),
    (b'{"version": "1.0", "model": {}}', "is a JSON file (tokenizer.json"),
    (b"version https://git-lfs.github.com/spec/v1\noid sha256:abc\n", "is a Git LFS pointer"),
    (b"<!DOCTYPE html><html>", "is an HTML/XML page"),
    (b"hello tokenizer\n", "is a 16-byte text file starting 'hello tokenizer'"),
])
def test_a_bad_tokenizer_file_fails_at_once_saying_what_it_is(tmp_path, coco_mini, capsys, content, what):
    bad = tmp_path / "tokenizer.model"
    bad.write_bytes(content)
    started = time.monotonic()
    code, err = run(capsys, *build(tmp_path, coco_mini, "--tokenizer", bad))
    assert code == 2 and f"not a SentencePiece tokenizer model: {bad} {what}" in err
    assert "ModelProto" not in err and "Traceback" not in err and not (tmp_path / "o").exists()
    assert time.monotonic() - started < 1.5


def test_missing_tokenizer_hint_names_the_command_run(tmp_path, coco_mini, capsys, monkeypatch):
    monkeypatch.delenv("MMLB_TOKENIZER", raising=False)
    monkeypatch.setattr(tokens, "_DEFAULT_LOOKUP", {})
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", True)
    monkeypatch.setattr("huggingface_hub.try_to_load_from_cache", lambda *a, **k: None)
    code, err = run(capsys, *build(tmp_path, coco_mini))
    assert code == 2 and "mmlb demo" not in err
    assert f"give it to the command:  mmlb build vh_single_8k --source coco={coco_mini} --out {tmp_path / 'o'}" in err
    assert err.rstrip().count("--tokenizer ./llama2/tokenizer.model") == 1


def test_mistyped_source_key_and_missing_source_path(tmp_path, coco_mini, tokenizer_path, capsys):
    base = ["build", "vh_single_8k", "--out", tmp_path / "o", "--tokenizer", tokenizer_path, "--no-progress"]
    code, err = run(capsys, *base, "--source", f"cocoo={coco_mini}")
    assert code == 2 and "no recipe reads a source 'cocoo' (did you mean 'coco'?)" in err
    code, err = run(capsys, *base, "--source", "coco=./no_coco")
    assert code == 2 and "--source coco=./no_coco: no such file or folder: " in err
    code, err = run(capsys, *base, "--all", "--sources-dir", tmp_path / "nosrc")
    assert code == 2 and f"--sources-dir {tmp_path / 'nosrc'}: no such folder" in err
    assert not (tmp_path / "o").exists()


def test_mistyped_flag_gets_the_subcommand_usage_and_a_suggestion(tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        main(["build", "vh_single_8k", "--limt", "2", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert info.value.code == 2 and err.startswith("usage: mmlb build") and "did you mean '--limit'" in err


def test_run_checks_data_before_loading_a_model(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, err = run(capsys, "run", "--backend", "hf", "--model", "no/such-model", "--data", "./mmbl",
                    "--config", "vh_single_8k", "--out", "p.jsonl")
    assert code == 2 and f"mmlb run: --data ./mmbl: no such folder: {tmp_path / 'mmbl'}" in err


def test_skipped_records_counted_by_reason_with_examples(tmp_path, tokenizer_path, real_data, capsys):
    """The real samples.json with 8 of its 135 documents: 1,000+ skips of a few kinds."""
    code, err = run(capsys, "build", "mmlongdoc_8k", "--source", f"mmlongbench_doc={real_data / 'mmlongbench_doc'}",
                    "--out", tmp_path / "o", "--tokenizer", tokenizer_path, "--no-progress")
    assert code == 0
    lines = err.splitlines()
    start = lines.index(next(line for line in lines if "record(s) skipped, by reason:" in line))
    counts = [line for line in lines[start + 1:] if line.strip() and line.strip().split()[0].isdigit()]
    assert "document '…' not found in the source" in counts[0]  # the most frequent kind first
    assert len(counts) >= 5 and sum(int(line.split()[0]) for line in counts) == int(lines[start].split()[1])
    examples = [line for line in lines if line.strip().startswith("e.g. ")]
    assert len(examples) <= 2 * len(counts) and "not found in the source" in examples[0]
    assert f"(every skipped record: {tmp_path / 'o' / 'manifests' / 'mmlongdoc_8k.json'})" in err


def test_a_failed_config_keeps_its_skipped_summary(tmp_path, tokenizer_path, real_data, capsys):
    source = tmp_path / "mmlongbench_doc"
    source.mkdir()
    (source / "samples.json").write_bytes((real_data / "mmlongbench_doc" / "samples.json").read_bytes())
    code, err = run(capsys, "build", "--all", "mmlongdoc_8k", "--source", f"mmlongbench_doc={source}",
                    "--out", tmp_path / "o", "--tokenizer", tokenizer_path, "--no-progress")
    assert code == 1 and "see the skipped records above" not in err
    assert "mmlongdoc_8k: 1082 record(s) skipped, by reason:" in err and "document '…' not found" in err
    manifest = tmp_path / "o" / "manifests" / "mmlongdoc_8k.failed.json"
    assert f"(why, and every skipped record: {manifest})" in err
    kept = json.loads(manifest.read_text())
    assert kept["status"] == "failed" and "no example could be built" in kept["error"]
    assert sum(r["count"] for r in kept["by_reason"]) == kept["num_skipped"] == 1082  # every question of samples.json


@pytest.fixture(scope="module")
def small_build(tmp_path_factory, coco_mini, tokenizer_path):
    out = tmp_path_factory.mktemp("small") / "mmlb"
    assert main(["build", "vh_single_8k", "--source", f"coco={coco_mini}", "--out", str(out), "--limit", "1",
                 "--tokenizer", str(tokenizer_path), "--no-progress"]) == 0
    return out


def test_card_without_matplotlib_is_written_without_the_plot(small_build, capsys, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name.split(".")[0] == "matplotlib":
            raise ModuleNotFoundError(f"No module named '{name}'", name=name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    for mod in [m for m in __import__("sys").modules if m.split(".")[0] == "matplotlib"]:
        monkeypatch.delitem(__import__("sys").modules, mod)
    (small_build / "stats.png").unlink(missing_ok=True)
    code = main(["card", str(small_build)])
    captured = capsys.readouterr()
    assert code == 0 and f"wrote {small_build / 'README.md'}" in captured.out
    assert "note: card written without stats.png" in captured.err and "mmlbdata[eval]" in captured.err
    assert not (small_build / "stats.png").exists() and "stats.png" not in (small_build / "README.md").read_text()


def test_vlmevalkit_export_defaults_to_image_paths_and_base64_says_its_size(small_build, tmp_path, capsys,
                                                                             monkeypatch):
    from mmlbdata.cli import export

    assert main(["export", str(small_build), "--format", "vlmevalkit", "--out", str(tmp_path / "p")]) == 0
    assert "note:" not in capsys.readouterr().err
    header = (tmp_path / "p" / "vh_single_8k.tsv").read_text().splitlines()[0].split("\t")
    assert header[:2] == ["index", "image_path"] and "image" not in header  # VLMEvalKit: meta_only rows
    written = sum(p.stat().st_size for p in (tmp_path / "p").rglob("*") if p.is_file())
    monkeypatch.setattr(export, "LARGE_TSV_BYTES", written)  # base64 holds each image once per row showing it
    assert main(["export", str(small_build), "--format", "vlmevalkit", "--out", str(tmp_path / "b64"),
                 "--images", "base64"]) == 0
    err = capsys.readouterr().err
    assert "note: the TSVs hold " in err and " MB: --images base64 puts a copy" in err and "(the default)" in err
