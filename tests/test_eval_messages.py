"""``mmlb eval`` as a newcomer meets it: a score that counts every example (missing = wrong), its
uncertainty, and one precise message per way the inputs can be wrong (issue 32)."""
from __future__ import annotations

import json
import math
import time
from pathlib import Path

import pytest

from mmlbdata.cli import main
from mmlbdata.evaluation.uncertainty import bootstrap_interval, mean_stderr
from tests.smoke import write_built

CONFIG = "vh_single_8k"


def example(i: int) -> dict:
    gold = "yes" if i % 2 == 0 else "no"
    return {"id": f"vh{i:02d}", "dataset": "visual_haystack", "length": 8192, "num_tokens": 100,
            "prompt": "Is there a dog? Answer yes or no.", "images": [], "question": "",
            "answers": [gold], "metric": "binary_acc", "meta": json.dumps({"category": "NIAH"})}


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    """A built folder with one 30-example config (gold: yes for even ids, no for odd)."""
    return write_built(tmp_path_factory.mktemp("built"), {CONFIG: [example(i) for i in range(30)]})


def write_lines(path: Path, lines: list) -> Path:
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    return path


def ten_predictions(path: Path) -> Path:
    """10 of the 30 examples answered: 7 right (vh00..vh06), 3 wrong (vh07..vh09 answered "maybe yes")."""
    rows = [{"id": f"vh{i:02d}", "config": CONFIG, "prediction": ("yes" if i % 2 == 0 else "no") if i < 7 else
             ("no" if i % 2 == 0 else "yes")} for i in range(10)]
    return write_lines(path, rows)


def mmlb_eval(*argv) -> int:
    return main(["eval", *map(str, argv), "--no-plot", "--no-progress"])


def test_ten_of_thirty_scores_over_thirty_with_answered_only_beside(data, tmp_path, capsys):
    out = tmp_path / "out"
    assert mmlb_eval(ten_predictions(tmp_path / "p.jsonl"), "--data", data, "--out", out) == 0
    printed = capsys.readouterr().out
    row = next(line for line in printed.splitlines() if line.startswith(CONFIG))
    assert row.split()[:3] == [CONFIG, "10/30", "23.3"] and row.split()[-1] == "70.0"  # 7/30, then 7/10
    assert "answered-only %" in printed and "counted as wrong" in printed
    res = json.loads((out / "report.json").read_text())["configs"][CONFIG]
    assert (res["answered"], res["total"]) == (10, 30)
    assert res["score"] == pytest.approx(7 / 30) and res["score_answered"] == pytest.approx(7 / 10)
    scores = [1.0] * 7 + [0.0] * 23
    assert res["stderr"] == pytest.approx(mean_stderr(scores))
    # lmms-eval's mean_stderr by hand: sample std (n - 1) / sqrt(n)
    mu = 7 / 30
    assert res["stderr"] == pytest.approx(math.sqrt((7 * (1 - mu) ** 2 + 23 * mu ** 2) / 29) / math.sqrt(30))
    assert res["ci95"] == bootstrap_interval(scores) and res["ci95"][0] < 7 / 30 < res["ci95"][1]
    assert res["by_length"]["8k"]["answered"] == 10 and res["by_length"]["8k"]["n"] == 30
    assert res["by_length"]["8k"]["stderr"] == pytest.approx(res["stderr"])


def test_official_parity_keeps_the_official_answered_only_mean(data, tmp_path, capsys):
    out = tmp_path / "out"
    assert mmlb_eval(ten_predictions(tmp_path / "p.jsonl"), "--data", data, "--out", out, "--parity", "official") == 0
    printed = capsys.readouterr().out
    assert "as the official code scores" in printed
    res = json.loads((out / "report.json").read_text())["configs"][CONFIG]
    assert res["missing_counted_as_wrong"] is False and res["score"] == pytest.approx(7 / 10)
    assert (res["answered"], res["total"], res["n"]) == (10, 30, 10)


def test_bootstrap_interval_is_seeded_and_near_the_normal_one():
    values = [1.0, 0.0, 0.0, 1.0, 1.0, 0.5]
    assert bootstrap_interval(values) == bootstrap_interval(values)
    assert bootstrap_interval([]) == [] and mean_stderr([1.0]) == 0.0
    for scores in ([1.0] * 300 + [0.0] * 700, [i / 999 for i in range(1000)]):  # few / many distinct scores
        mu, se = sum(scores) / len(scores), mean_stderr(scores)
        low, high = bootstrap_interval(scores)
        assert low == pytest.approx(mu - 1.96 * se, abs=0.01) and high == pytest.approx(mu + 1.96 * se, abs=0.01)
    assert bootstrap_interval([0.25] * 40) == [0.25, 0.25] and all(type(x) is float for x in bootstrap_interval(values))
    with pytest.raises(ValueError):  # a level outside [0, 1]: percentiles outside [0, 100]
        bootstrap_interval([0.0, 1.0], level=1.5)


def test_report_paths_are_absolute(data, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ten_predictions(tmp_path / "p.jsonl")
    (tmp_path / "d").symlink_to(data)
    assert mmlb_eval("p.jsonl", "--data", "d", "--out", "out") == 0
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["predictions"] == str(tmp_path / "p.jsonl") and report["data"] == str(tmp_path / "d")


def failure(capsys, *argv) -> tuple[int, str]:
    code = mmlb_eval(*argv)
    return code, capsys.readouterr().err


@pytest.mark.parametrize("lines, expected", [
    ([], "p.jsonl is empty: expected JSON lines"),
    (["", "  "], "p.jsonl is empty: expected JSON lines"),
    (['[{"id": "vh00", "config": "vh_single_8k", "prediction": "yes"}]'], "is a JSON array, not JSON lines"),
    (["[", '  {"id": "vh00", "prediction": "yes"}', "]"], "is a JSON array, not JSON lines"),
    ([{"id": "vh00", "config": CONFIG, "response": "yes"}],
     "no line has both 'id' and 'prediction' (keys found: config, id, response)"),
    (['{"id": "vh00", "config": "vh_single_8k", "prediction": "ye'], "line 1 is truncated"),
    (["id,prediction", "vh00,yes"], "is not JSON lines: line 1: not JSON"),
])
def test_each_broken_predictions_file_has_its_own_message(data, tmp_path, capsys, lines, expected):
    out = tmp_path / "out"
    code, err = failure(capsys, write_lines(tmp_path / "p.jsonl", lines), "--data", data, "--out", out)
    assert code == 2 and expected in err and "pass --config" not in err
    assert not out.exists()  # no empty --out folder left behind


def test_a_truncated_last_line_among_good_ones_is_named_and_the_rest_scored(data, tmp_path, capsys):
    path = ten_predictions(tmp_path / "p.jsonl")
    with path.open("a") as f:
        f.write('{"id": "vh11", "config": "vh_single_8k", "predic')
    assert mmlb_eval(path, "--data", data, "--out", tmp_path / "out") == 0
    assert "line 11: truncated" in capsys.readouterr().out


def test_predictions_without_config_name_the_keys_found(data, tmp_path, capsys):
    preds = write_lines(tmp_path / "p.jsonl", [{"id": "vh00", "prediction": "yes"}])
    code, err = failure(capsys, preds, "--data", data, "--out", tmp_path / "out")
    assert code == 2 and "no line names its config (keys found: id, prediction)" in err


def test_nothing_scored_exits_non_zero(data, tmp_path, capsys):
    preds = write_lines(tmp_path / "p.jsonl", [{"id": "other-1", "config": CONFIG, "prediction": "yes"}])
    out = tmp_path / "out"
    code, err = failure(capsys, preds, "--data", data, "--out", out)
    assert code == 1 and "nothing could be scored" in err and "'other-1'" in err and "'vh00'" in err
    assert not out.exists()


def test_mistyped_config_gets_a_suggestion(data, tmp_path, capsys):
    code, err = failure(capsys, ten_predictions(tmp_path / "p.jsonl"), "--data", data, "--config", "vh_singel_8k",
                        "--out", tmp_path / "out")
    assert code == 2 and "config 'vh_singel_8k' is not built in" in err and "did you mean 'vh_single_8k'" in err


@pytest.mark.parametrize("given", ["nonexistent_folder", "./mmbl", "../a/b/c"])
def test_a_local_looking_data_path_that_does_not_exist(tmp_path, capsys, monkeypatch, given):
    monkeypatch.chdir(tmp_path)
    ten_predictions(tmp_path / "p.jsonl")
    started = time.monotonic()
    code, err = failure(capsys, "p.jsonl", "--data", given, "--out", "out")
    assert code == 2 and f"--data {given}: no such folder: " in err and "Traceback" not in err
    assert time.monotonic() - started < 5 and not (tmp_path / "out").exists()


def test_a_hub_id_offline_is_one_message(tmp_path, capsys, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    started = time.monotonic()
    code, err = failure(capsys, ten_predictions(tmp_path / "p.jsonl"), "--data", "someorg/mmlb",
                        "--out", tmp_path / "out")
    assert code == 2 and "the Hub repository someorg/mmlb cannot be reached: offline mode is set" in err
    assert err.count("\n") == 1 and time.monotonic() - started < 5


def test_a_hub_id_with_the_hub_unreachable_is_one_message_in_seconds(tmp_path, capsys, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "0")
    monkeypatch.setattr(constants, "ENDPOINT", "http://127.0.0.1:9")  # the discard port: refused at once
    started = time.monotonic()
    code, err = failure(capsys, ten_predictions(tmp_path / "p.jsonl"), "--data", "someorg/mmlb",
                        "--out", tmp_path / "out")
    assert code == 2 and "the Hub repository someorg/mmlb cannot be reached: 127.0.0.1:9 is unreachable" in err
    assert err.count("\n") == 1 and time.monotonic() - started < 5


def test_missing_predictions_file(data, tmp_path, capsys):
    code, err = failure(capsys, tmp_path / "nope.jsonl", "--data", data, "--out", tmp_path / "out")
    assert code == 2 and f"predictions file not found: {tmp_path / 'nope.jsonl'}" in err


def test_eval_help_states_the_layout_and_the_predictions_format(capsys):
    with pytest.raises(SystemExit):
        main(["eval", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "data/<config>/" not in text and "mmlb build --out" in text
    assert '{"id": "vh_single_00000_d0.0", "config": "vh_single_8k", "prediction": "Yes"}' in text
    assert "counts as wrong" in text
