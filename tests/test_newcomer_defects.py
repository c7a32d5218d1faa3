"""Issue 43's newcomer defects, one test each (the 5th, `mmlb run`'s progress, is the API runner's
issue), as a new user meets them on a fresh clone with the README verbatim."""
from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest
from test_layout import _images, _rows

from mmlbdata.cli import main
from mmlbdata.core.store import ImageStore
from mmlbdata.dataset.build import store_config

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture()
def toy(tmp_path) -> Path:
    """A built folder holding ``toy_8k`` (rows r0, r1, r2; metric binary_acc, gold "a")."""
    refs = _images(ImageStore(tmp_path / "store"), 3)
    out = tmp_path / "toy"
    store_config(out, "toy_8k", _rows(refs, [[0], [1, 2], [2]]), manifest={"family": "toy"})
    return out


def _lines(path: Path, rows: list) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_1_run_with_a_config_not_built_says_so_in_one_line(toy, tmp_path, capsys):
    code = main(["run", "--backend", "openai", "--model", "m", "--base-url", "http://127.0.0.1:9/v1",
                 "--data", str(toy), "--config", "toy_8kk", "--out", str(tmp_path / "preds.jsonl")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert "config 'toy_8kk' is not built in" in err and "did you mean 'toy_8k'" in err


def test_2_eval_on_a_source_folder_says_it_holds_no_built_config(tmp_path, capsys):
    source = tmp_path / "coco2017"
    (source / "val2017").mkdir(parents=True)
    (source / "val2017" / "1.jpg").write_bytes(b"\xff\xd8\xff")
    preds = _lines(tmp_path / "p.jsonl", [{"id": "x", "config": "vh_single_8k", "prediction": "yes"}])
    code = main(["eval", str(preds), "--data", str(source), "--config", "vh_single_8k", "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code == 2 and "no built config in" in err and "give the folder `mmlb build --out` wrote" in err, err
    assert "BuilderConfig" not in err


def test_3_demo_refuses_a_folder_of_real_configs(toy, capsys):
    before = {p: p.read_bytes() for p in toy.rglob("*") if p.is_file()}
    assert main(["demo", "--out", str(toy)]) == 2
    err = capsys.readouterr().err
    assert "holds 1 config(s) built from real sources (toy_8k)" in err and "a folder of its own" in err
    assert {p: p.read_bytes() for p in toy.rglob("*") if p.is_file()} == before


def test_4_family_narrows_the_benchmark_and_an_unknown_family_is_refused():
    from mmlbdata.dataset.build import select_configs
    from mmlbdata.dataset.registry import UnknownConfigError, all_configs

    vh = select_configs(benchmark="mmlongbench", families=["vh"])
    assert vh and {all_configs()[name].family for name in vh} == {"vh"}
    with pytest.raises(UnknownConfigError, match=r"unknown family 'vhh' \(did you mean 'vh'\?\)"):
        select_configs(families=["vhh"])
    with pytest.raises(UnknownConfigError, match="family 'mmneedle' is not part of benchmark 'mmlongbench'"):
        select_configs(benchmark="mmlongbench", families=["mmneedle"])


def test_6_a_predictions_file_with_a_utf8_bom_keeps_its_first_prediction(tmp_path):
    from mmlbdata.evaluation.evaluate import read_predictions

    path = tmp_path / "p.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + _lines(tmp_path / "x", [{"id": "a", "prediction": "yes"},
                                                                 {"id": "b", "prediction": "no"}]).read_bytes())
    preds = read_predictions(path)
    assert sorted(preds.for_config("c")) == ["a", "b"] and preds.malformed == []


@pytest.mark.parametrize("content, ids", [
    ({"id": "a", "config": "toy_8k", "prediction": "yes"}, ["a"]),  # one prediction, pretty-printed
    ({"a": "yes", "b": "no"}, ["a", "b"]),  # {id: prediction}
    ({"a": {"prediction": "yes"}, "b": {"prediction": "no", "config": "toy_8k"}}, ["a", "b"])])
def test_7_a_pretty_printed_json_object_is_read_not_called_truncated(tmp_path, content, ids):
    from mmlbdata.evaluation.evaluate import read_predictions

    path = tmp_path / "p.json"
    path.write_text(json.dumps(content, indent=2))
    preds = read_predictions(path)
    assert sorted(preds.for_config("toy_8k")) == ids and preds.malformed == []


def test_8_predictions_naming_another_config_say_which(toy, tmp_path, capsys):
    preds = _lines(tmp_path / "p.jsonl", [{"id": f"r{i}", "config": "other_8k", "prediction": "a"} for i in range(3)])
    code = main(["eval", str(preds), "--data", str(toy), "--config", "toy_8k", "--out", str(tmp_path / "r"),
                 "--no-plot"])
    err = capsys.readouterr().err
    assert code == 1 and "nothing could be scored" in err
    assert "the predictions' lines name config(s) other_8k, not toy_8k" in err and "--config other_8k" in err


def test_9_gc_of_a_missing_folder_says_no_such_folder(tmp_path, capsys):
    assert main(["gc", str(tmp_path / "nope")]) == 1
    err = capsys.readouterr().err
    assert "no such folder" in err and "no built config" not in err


def test_10_push_help_says_how_the_files_layout_is_sent(capsys):
    with pytest.raises(SystemExit):
        main(["push", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "image bytes embedded" not in text.split("Embedded layout:")[0]
    assert "the image files the repository lacks go first, in commits of at most 100 files" in text


def test_11_the_readme_install_list_names_every_extra_a_message_asks_for():
    extras = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    asked = set()
    for path in (ROOT / "mmlbdata").rglob("*.py"):  # require(module, extra, ...) and MissingExtraError messages
        asked |= set(re.findall(r"require\(\s*\"[\w.]+\",\s*\"(\w+)\"", path.read_text()))
    assert "runner" in asked and asked <= extras
    readme = (ROOT / "README.md").read_text()
    install = readme[readme.index("## Install"):readme.index("## First run")]
    assert [extra for extra in sorted(asked) if f'pip install -e ".[{extra}]"' not in install] == []


def test_12_a_null_prediction_is_called_null(tmp_path):
    from mmlbdata.evaluation.evaluate import read_predictions

    preds = read_predictions(_lines(tmp_path / "p.jsonl", [{"id": "a", "prediction": None},
                                                            {"id": "b", "prediction": "no"}]))
    assert [m["error"] for m in preds.malformed] == ["'prediction' is null, not a string (write \"\" for an empty answer)"]


def test_13_a_full_build_and_its_rerun_report_the_same_bytes(tmp_path, coco_mini, tokenizer_path):
    """vh_multi_8k, built after vh_single_8k, moves their shared photos to a partition named after
    it and rewrites vh_single_8k's metadata (shorter paths): the first run's table must show the
    size the rerun shows."""
    from mmlbdata.dataset.build import build_all

    names = ["vh_single_8k", "vh_multi_8k"]
    common = dict(limit=2, tokenizer=tokenizer_path, store_root=tmp_path / "store", progress=False)
    first = build_all(names, {"coco": coco_mini}, tmp_path / "out", **common)
    again = build_all(names, {"coco": coco_mini}, tmp_path / "out", **common)
    assert [r.status for r in first] == ["built", "built"] and [r.status for r in again] == ["kept", "kept"]
    assert [r.stats.num_bytes for r in first] == [r.stats.num_bytes for r in again]
    assert [r.stats.metadata_bytes for r in first] == [(tmp_path / "out" / f"{n}.metadata.parquet").stat().st_size
                                                      for n in names]


def test_14_push_without_a_card_says_the_card_is_a_placeholder(toy, tmp_path, capsys):
    assert main(["push", str(toy), "--repo", "org/toy", "--dry-run", str(tmp_path / "dry")]) == 0
    err = capsys.readouterr().err
    assert "is the placeholder `mmlb build` writes" in err and f"run `mmlb card {toy}" in err


def test_15_ctrl_c_says_what_was_kept_and_how_to_go_on(toy, tmp_path, monkeypatch, capsys):
    from mmlbdata.cli import build as build_command

    def first_then_ctrl_c(names, sources, out, **kwargs):
        store_config(out, names[0], _rows(_images(ImageStore(tmp_path / "store"), 3), [[0]]), manifest={"family": "vh"})
        raise KeyboardInterrupt

    monkeypatch.setattr(build_command, "build_configs", first_then_ctrl_c)
    monkeypatch.setattr(build_command, "tokenizer_or_message", lambda *args: None)
    (tmp_path / "coco").mkdir()
    out = tmp_path / "out"
    code = main(["build", "vh_single_8k", "vh_single_32k", "--source", f"coco={tmp_path / 'coco'}", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 130
    assert f"{out} holds 1 of the 2 asked config(s) complete: vh_single_8k" in err
    assert f"not built: vh_single_32k; to build them: mmlb build vh_single_32k --source coco={tmp_path / 'coco'}" in err
    assert "no partial file is left" in err


def test_16_the_build_progress_bar_has_a_total(tmp_path, coco_mini, tokenizer_path, capsys):
    from mmlbdata.dataset.build import build_config

    result = build_config("vh_single_8k", {"coco": coco_mini}, tmp_path / "out", limit=2, tokenizer=tokenizer_path,
                          store_root=tmp_path / "store", progress=True)
    assert result.ok and result.stats.num_rows == 12  # 2 questions x 6 depths
    assert "12/12" in capsys.readouterr().err  # tqdm's n/total, then the ETA
