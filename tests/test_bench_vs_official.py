"""benchmarks/bench_vs_official.py: the official code it times is the official code, run unchanged
from the mirrors (skipped where they are not fetched), and scores what this library scores."""
from __future__ import annotations

import math

import pytest

from benchmarks import bench_vs_official as bench
from benchmarks import official_code as oc


def _official_or_skip(path: str):
    try:
        return bench.OFFICIAL[path][0]
    except oc.Missing as exc:  # pragma: no cover - depends on the machine
        pytest.skip(str(exc))


@pytest.mark.parametrize("path", ["binary_acc", "cls_acc", "docqa", "mmlongbench_doc", "mmneedle_single",
                                  "mmneedle_multi5", "babilong", "longbench_f1"])
def test_the_official_side_scores_what_parity_mode_scores(path):
    """Per pair, the official function's value (0 where it raises) equals get_metric(...,
    parity="official"); the harness calls it as the official runners do."""
    pairs = bench.make_pairs(path, 60, seed="test")
    run = _official_or_skip(path)
    try:
        official = run(pairs.predictions, bench.official_items(pairs))
    except oc.Missing as exc:  # pragma: no cover
        pytest.skip(str(exc))
    ours = [r.score for r in bench.our_metric(pairs)]
    if path.startswith("mmneedle"):
        official = official[1]  # the exact-match list
    else:
        official = [_value(v) for v in official]
    assert all(math.isclose(a, b) for a, b in zip(ours, official)) and len(ours) == len(official) == 60


def _value(result) -> float:
    """The score in what each official function returns: MMLongBench's post_process
    ``(metrics, extra)``, eval_longbench's ``(correct, f1)``, a number or a bool; 0 for a crash."""
    if isinstance(result, Exception):
        return 0.0
    if isinstance(result, tuple) and isinstance(result[0], dict):
        return float(next(iter(result[0].values())))
    if isinstance(result, tuple):
        return float(result[0])
    return float(result)


def test_one_small_round_prints_every_part_it_was_asked_for(capsys):
    try:
        oc.mmlongbench()
    except oc.Missing as exc:  # pragma: no cover
        pytest.skip(str(exc))
    assert bench.main(["--n", "20", "--rounds", "1", "--only", "metrics", "--path", "sub_em",
                       "--path", "mmneedle_multi2"]) == 0
    out = capsys.readouterr().out
    assert "metric" in out and "mmneedle_multi2" in out and "ratio" in out and "whole" not in out
