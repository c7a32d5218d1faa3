"""``mmlb eval --compare-paper``: a run beside the published models.

The replay builds a dataset folder and predictions that reproduce one published model's
per-dataset scores (Figures 23-26 of MMLongBench, at every length: k right answers of n, and the
summaries' judge replies giving the published fluency x F1), runs the real ``mmlb eval`` (the
summarization judge a loopback OpenAI server), and checks that the comparison puts the run on that
model's row of Figure 22: its category values, its rank, its nearest model. Then partial runs, the
Visual Haystack flip, and the other four papers on the engine's own aggregates."""
from __future__ import annotations

import argparse
import json
import math
import re
from pathlib import Path

import pytest

from fake_openai import FakeOpenAI
from mmlbdata.cli import eval as eval_cmd
from mmlbdata.core.lengths import length_tokens
from mmlbdata.dataset.registry import all_configs
from mmlbdata.evaluation import compare_paper as cp
from mmlbdata.evaluation import published as pub
from mmlbdata.evaluation.evaluate import evaluate_config
from tests.smoke import write_built

REPLAYED = "Qwen2.5-VL-32B"  # mid-table in Figure 22, and one of Figure 1's nine
LENGTHS = ("8k", "16k", "32k", "64k", "128k")
DEPTHS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
#: per metric: (gold answers, a right prediction, a wrong one)
ANSWERS = {"sub_em": (["Paris"], "Answer: Paris", "Answer: London"), "binary_acc": (["yes"], "yes", "no"),
           "mc_acc": (["B"], "Answer: B", "Answer: C"), "count_acc": (["[1, 2]"], "[1, 2]", "[5]"),
           "cls_acc": (["3"], "label: 3", "label: 4"), "docqa": (["Paris"], "Answer: Paris", "Answer: London")}


def cli(*argv) -> int:
    parser = argparse.ArgumentParser(prog="mmlb")
    eval_cmd.register(parser.add_subparsers())
    args = parser.parse_args([str(a) for a in argv])
    return args.func(args)


def row(ident, dataset, length, metric, answers, **meta):
    return {"id": ident, "dataset": dataset, "length": length, "num_tokens": 100, "prompt": "question?",
            "images": [], "question": "question?", "answers": answers, "metric": metric, "meta": json.dumps(meta)}


def replay(model: str):
    """(configs: {name: rows}, predictions): k right of n per config, k/n = the model's published
    value exactly (n = 1000 / gcd); a summarization config is one example whose judge replies give
    fluency 1, recall = precision = the value (a key point list of 1000)."""
    configs, predictions = {}, []
    for panel, dataset in pub.mmlongbench_datasets().items():
        for length, value in zip(LENGTHS, pub.mmlongbench_panel(panel).row(model).values):
            config, tokens = f"{dataset}_{length}", length_tokens(length)
            metric = all_configs()[config].config.metric
            tenths = round(value * 10)
            if metric == "summ_judge":
                rows = [row(f"{config}_0", dataset, tokens, metric, ["expert summary"], keypoints=["k"] * 1000)]
                predictions.append({"id": rows[0]["id"], "config": config, "prediction": f"Summary: TARGET={tenths}"})
                configs[config] = rows
                continue
            n = 1000 // math.gcd(tenths, 1000)
            right = tenths * n // 1000
            gold, yes, no = ANSWERS[metric]
            meta = {"answer_format": "Str"} if metric == "docqa" else {}
            rows = [row(f"{config}_{i}", dataset, tokens, metric, gold, depth=DEPTHS[i % 6], **meta) for i in range(n)]
            # right answers spread over the depths, more of them near the end of the context
            order = sorted(range(n), key=lambda i: (-DEPTHS[i % 6], i))
            good = set(order[:right])
            predictions += [{"id": r["id"], "config": config, "prediction": yes if i in good else no}
                            for i, r in enumerate(rows)]
            configs[config] = rows
    return configs, predictions


def judge_reply(body: dict) -> str:
    """The summarization judge: fluency 1; recall and precision of the TARGET the summary names."""
    text = body["messages"][-1]["content"]
    target = int(re.search(r"TARGET=(\d+)", text).group(1))
    if '"sentence_count"' in text:
        return json.dumps({"precision": target, "sentence_count": 1000})
    if '"recall"' in text:
        return json.dumps({"recall": target})
    return json.dumps({"fluency": 1})


@pytest.fixture(scope="module")
def replayed(tmp_path_factory):
    """``mmlb eval --compare-paper --plot`` of the replayed model: (report, out folder, printed)."""
    root = tmp_path_factory.mktemp("replay")
    configs, predictions = replay(REPLAYED)
    data = write_built(root / "built", configs)
    preds = root / "preds.jsonl"
    preds.write_text("".join(json.dumps(p) + "\n" for p in predictions))
    out = root / "out"
    with FakeOpenAI(judge_reply) as judge, pytest.MonkeyPatch.context() as mp:
        mp.setenv("MMLB_JUDGE_API_KEY", "test")
        import contextlib
        import io

        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            assert cli("eval", preds, "--data", data, "--out", out, "--protocol", "v1.0", "--compare-paper", "--plot",
                       "--judge-base-url", judge.base_url, "--judge-model", "fake-judge") == 0
    return json.loads((out / "report.json").read_text()), out, printed.getvalue()


def _published_rank(table: pub.Table, model: str, column: int) -> int:
    mine = table.row(model).values[column]
    return 1 + sum(1 for r in table.rows if r.model != model and r.values[column] is not None
                   and r.values[column] > mine)


def test_replay_lands_on_the_published_row_with_its_rank(replayed):
    report, _, printed = replayed
    part = report["paper_comparison"]["benchmarks"]["mmlongbench"]
    # every dataset's score is the published one (the engine's scores, as the paper reports them)
    for key, value in part["run_datasets"].items():
        panel, length = key.split("|")
        published = pub.mmlongbench_panel(panel).row(REPLAYED).values[LENGTHS.index(length)]
        assert value == pytest.approx(published, abs=1e-9), key
    headline = {t["key"]: t for t in part["compared"] if t["headline"]}
    assert list(headline) == [f"figure_22/{p}" for p in ("VRAG", "NIAH", "ICL", "Summ", "DocVQA", "Avg.")]
    exact = 0
    for key, table in headline.items():
        published = pub.mmlongbench_panel(key.split("/")[1], "figure_22")
        assert table["closest"]["model"] == REPLAYED and table["closest"]["mean_abs_diff"] < 0.1
        for i, cell in enumerate(table["cells"]):
            mine = published.row(REPLAYED).values[i]
            # the category as the paper computes it from its own rounded datasets: within rounding
            assert abs(cell["run"] - mine) <= 0.1, (key, cell)
            # models (the replayed one too) within rounding of the run may fall on either side of it
            near = sum(1 for r in published.rows if r.values[i] is not None and abs(r.values[i] - mine) <= 0.1)
            assert abs(cell["rank"] - _published_rank(published, REPLAYED, i)) <= near, (key, cell)
            if round(cell["run"], 1) == mine:
                exact += 1
                assert cell["rank"] == _published_rank(published, REPLAYED, i) and REPLAYED in cell["tied"]
    assert exact == 23  # of the 30 cells; the other 7 are 0.1 off: the paper averages unrounded datasets
    assert part["missing"] == [] and part["overall"]["cells"] == 30
    assert part["overall"]["order"][part["overall"]["rank"] - 1]["run"]
    assert "MMLongBench Figure 22: Avg." in printed and ">>  this run" in printed


def test_replay_report_says_the_protocol_and_scorers(replayed):
    report, _, _ = replayed
    notes = report["paper_comparison"]["benchmarks"]["mmlongbench"]["notes"]
    assert report["protocol"]["name"] == "v1.0" and not any("protocol v1.0 (the paper" in n for n in notes)
    assert any("--parity official" in n for n in notes)


def test_partial_run_says_what_it_compared_and_what_is_missing():
    report = {"configs": {"vh_single_8k": {"score": 0.6, "n": 10, "by_length": {"8k": {}}},
                          "mm_niah_retrieval_text_8k": {"score": 0.9, "n": 10, "by_length": {"8k": {}}},
                          "mm_niah_retrieval_text_16k": {"score": 0.8, "n": 10, "by_length": {"16k": {}}},
                          "triviaqa_8k": {"score": 0.5, "n": 10, "by_length": {"8k": {}}}},
              "protocol": {"name": "v1.1"}, "parity": "default"}
    part = cp.compare(report)["benchmarks"]["mmlongbench"]
    assert [t["table"] for t in part["compared"]] == ["MMLongBench Figure 24: VH-Single",
                                                      "MMLongBench Figure 24: MM-NIAH-Ret (T)"]
    assert part["compared"][0]["compared_columns"] == ["8k"] and part["overall"] is None
    missing = part["missing"]
    assert missing[0] == ("NIAH at 8k: no VH-Multi, MM-NIAH-Ret (I), MM-NIAH-Count (T), MM-NIAH-Count (I), "
                          "MM-NIAH-Reason (T), MM-NIAH-Reason (I) in this run")
    assert missing[1].startswith("NIAH at 16k: no VH-Single, VH-Multi, MM-NIAH-Ret (I)")
    assert {"VRAG: none of its datasets in this run", "ICL: none of its datasets in this run",
            "lengths 32k, 64k, 128k: not in this run", "Avg.: needs all five categories at a length"} <= set(missing)
    assert any("protocol v1.0" in n for n in part["notes"])  # the paper's protocol, not this run's
    assert cp.compare(report)["not_compared"] == [
        {"config": "triviaqa_8k", "why": "not in the papers' result tables (a dataset or setting of this library only)"}]


def test_visual_haystack_below_chance_is_flipped_as_the_paper_flips_it():
    report = {"configs": {"vh_single_8k": {"score": 0.3, "n": 10, "by_length": {"8k": {}}}}}
    part = cp.compare(report)["benchmarks"]["mmlongbench"]
    assert part["run_datasets"] == {"VH-Single|8k": pytest.approx(70.0)}
    assert any("accuracy 30.0 counted as 70.0" in n for n in part["notes"])


def test_summarization_without_a_judge_has_no_score_and_says_why():
    report = {"configs": {"gov_report_8k": {"score": float("nan"), "n": 0, "by_length": {"8k": {}},
                                            "metrics": {"summ_judge": {"note": "no judge configured"}}}}}
    part = cp.compare(report)["benchmarks"]["mmlongbench"]
    assert part["compared"] == [] and "gov_report_8k: no score (no judge configured)" in part["notes"]


def test_rank_ties_and_neighbours_at_the_papers_precision():
    table = pub.mmlongbench_panel("VRAG", "figure_22")
    gpt4o = table.row("GPT-4o").values[0]  # 80.5
    cell = cp.compare_table(table, [gpt4o / 1 + 0.04, None, None, None, None])["cells"][0]
    higher = sorted(v for _, v in table.column("8k") if v is not None and v > gpt4o)
    assert cell["rank"] == 1 + len(higher) and cell["tied"] == ["GPT-4o"] and cell["of"] == 47
    assert cell["above"] == {"model": "Claude-3.7-Sonnet", "score": 84.9}
    assert cell["below"] == {"model": "Gemini-2.5-Pro", "score": 79.8}
    top = cp.compare_table(table, [99.0, None, None, None, None])["cells"][0]
    assert (top["rank"], top["above"]) == (1, None)


# --- the other papers, on the engine's own aggregates ---------------------------------------------------

def _doc_row(i, gold, fmt, pages, sources):
    return row(f"d{i}", "mmlongbench_doc", 0, "mmlongbench_doc", [gold], answer_format=fmt,
               evidence_pages=str(pages), evidence_sources=str(sources), question="q?")


def test_mmlongbench_doc_table_3_columns_from_the_engines_aggregate():
    examples = [_doc_row(0, "Paris", "Str", [3], ["Pure-text (Plain-text)"]),
                _doc_row(1, "7", "Int", [1, 2], ["Table", "Chart"]),
                _doc_row(2, "Not answerable", "None", [], []),
                _doc_row(3, "London", "Str", [5], ["Generalized-text (Layout)", "Figure"])]
    predictions = {"d0": {"prediction": "Paris"}, "d1": {"prediction": "7"}, "d2": {"prediction": "Not answerable"},
                   "d3": {"prediction": "Rome"}}
    result = evaluate_config(examples, predictions, {"mmlongbench_doc": {"extractor": None}})
    part = cp.compare({"configs": {"mmlongbench_doc": result, "mmlongbench_doc_8k": result}})["benchmarks"][
        "mmlongbench_doc"]
    [table] = part["compared"]
    run = dict(zip(table["columns"], table["run"]))
    assert run == {"TXT": 100.0, "LAY": 0.0, "CHA": 100.0, "TAB": 100.0, "FIG": 0.0, "SIN": 50.0, "MUL": 100.0,
                   "UNA": 100.0, "ACC": 75.0, "F1": pytest.approx(100 * result["metrics"]["mmlongbench_doc"]["f1"])}
    acc = next(c for c in table["cells"] if c["column"] == "ACC")
    assert acc["rank"] == 1 and acc["of"] == 25  # 24 models (the human baseline is not ranked)
    assert any("mmlongbench_doc_8k: Table 3 feeds whole documents" in n for n in part["notes"])


def _needle_rows(k: int):
    gold = "; ".join(["1, 2, 1"] * k) if k > 1 else "1, 2, 1"
    positives = [row(f"p{i}", "mmneedle_m1_n2_k1", 0, "mmneedle", [gold], k=k) for i in range(4)]
    negatives = [row(f"n{i}", "mmneedle_m1_n2_k1", 0, "mmneedle", ["; ".join(["-1"] * k)], k=k) for i in range(2)]
    return positives + negatives


def test_mmneedle_tables_from_the_engines_aggregate():
    examples = _needle_rows(1)
    # existence 3/4, index 2/4, exact 1/4 on the positives; existence 1/2 on the negatives
    predictions = {"p0": "1, 2, 1", "p1": "1, 1, 1", "p2": "2, 2, 1", "p3": "-1", "n0": "-1", "n1": "1, 1, 1"}
    result = evaluate_config(examples, {k: {"prediction": v} for k, v in predictions.items()})
    part = cp.compare({"configs": {"mmneedle_m1_n2_k1": result}})["benchmarks"]["mmneedle"]
    by_table = {t["key"]: t for t in part["compared"]}
    assert set(by_table) == {"table_2", "table_5"}
    assert dict(zip(by_table["table_2"]["columns"], by_table["table_2"]["run"])) == {
        "2x2 Existence": 75.0, "2x2 Index": 50.0, "2x2 Exact": 25.0, "4x4 Existence": None, "4x4 Index": None,
        "4x4 Exact": None, "8x8 Existence": None, "8x8 Index": None, "8x8 Exact": None}
    assert by_table["table_5"]["run"][1] == 50.0  # "2x2 1 img"
    assert "MMNeedle Table 2: no mmneedle_m1_n4_k1, mmneedle_m1_n8_k1 in this run" in part["missing"]
    assert any(m.startswith("MMNeedle Table 3 (M=10, K=1, positive samples): not in this run") for m in part["missing"])


def _lvb_rows():
    groups = [15, 60, 600, 3600]
    return [row(f"v{i}", "lvb_val", 0, "lvb_mc", ["A"], duration_group=groups[i % 4],
                question_category=["S2E", "T3O"][i % 2], level="L1", topic_category="KS") for i in range(8)]


def test_lvb_table_5_and_leaderboards_from_the_engines_aggregate():
    predictions = {f"v{i}": {"prediction": "A" if i < 6 else "B"} for i in range(8)}
    result = evaluate_config(_lvb_rows(), predictions)
    part = cp.compare({"configs": {"lvb_val_64f": result, "lvb_val_subs": result}})["benchmarks"]["longvideobench"]
    table5 = part["compared"][0]
    assert table5["table"] == "LongVideoBench Table 5 (max_frames 64)"
    assert dict(zip(table5["columns"], table5["run"])) == {"(8,15]": 100.0, "(15,60]": 100.0, "(180,600]": 50.0,
                                                           "(900,3600]": 50.0, "all": 75.0}
    # Phi-3-Vision and Mantis-BakLLaVA cannot take 64 frames: their rows say so and are not ranked
    assert table5["cells"][-1]["of"] == 7
    phi = next(r for r in table5["rows"] if r["model"] == "Phi-3-Vision")
    assert phi["cells"] == ["Context Length Exceeded"] * 5
    table8 = next(t for t in part["compared"] if t["key"] == "table_8")
    assert table8["compared_columns"] == ["Val Total"] and table8["cells"][0]["of"] == 36
    assert [t["key"] for t in part["compared"]] == ["table_5/64", "table_8"]
    assert any("test set" in m for m in part["missing"])
    assert any(n.startswith("lvb_val_subs: subtitles only") for n in part["notes"])


def test_readbench_needs_the_text_baseline_and_then_compares_its_delta():
    report = {"configs": {"readbench_mmlu_pro": {}, "readbench_gpqa": {}}}
    part = cp.compare(report)["benchmarks"]["readbench"]
    assert part["compared"] == [] and "--baseline" in part["missing"][0]
    report["delta_vs_baseline"] = {"overall": {"by_dataset": {"readbench_mmlu_pro": -0.05, "readbench_gpqa": 0.02}}}
    part = cp.compare(report)["benchmarks"]["readbench"]
    [table] = part["compared"]
    assert table["run"][:3] == [None, pytest.approx(-5.0), pytest.approx(2.0)]
    gpqa = table["cells"][1]
    assert gpqa["column"] == "GPQA Diam." and gpqa["rank"] == 3  # behind Qwen2.5-VL 7B (+5.08) and GPT-4o (+3.16)
    assert "MMLU Redux" in part["missing"][0]


# --- the figures, checked as images -------------------------------------------------------------------------

HIGHLIGHT_RGB = (0xD6, 0x27, 0x28)


def _pixels(path):
    import numpy as np
    from PIL import Image

    return np.asarray(Image.open(path).convert("RGB")).astype(int)


def _near(pixels, rgb, tolerance=12):
    import numpy as np

    return np.all(np.abs(pixels - np.array(rgb)) <= tolerance, axis=-1)


def _hex(colour: str) -> tuple:
    return tuple(int(colour[i:i + 2], 16) for i in (1, 3, 5))


def _expected_rank(part: dict, models=None) -> int:
    """1 + the published models whose mean over the run's (category, length) cells is above the
    run's: worked out from the package's tables, not from the figure code."""
    cells = [(t["key"].split("/")[1], i, v) for t in part["compared"] if t["key"].startswith("figure_22/")
             for i, v in enumerate(t["run"]) if v is not None]
    run = sum(v for _, _, v in cells) / len(cells)
    above = 0
    for model in models or pub.load("mmlongbench")["models"]:
        mine = [pub.mmlongbench_panel(p, "figure_22").row(model).values[i] for p, i, _ in cells]
        mine = [v for v in mine if v is not None]
        above += sum(mine) / len(mine) > run
    return above + 1


@pytest.mark.parametrize("which", ["figure1", "figure22"])
def test_heatmap_frames_the_runs_row_where_its_rank_is(replayed, which, tmp_path):
    from mmlbdata.evaluation import figures

    report, out, _ = replayed
    part = report["paper_comparison"]["benchmarks"]["mmlongbench"]
    models = pub.load("mmlongbench")["figures"]["figure_1"]["models"] if which == "figure1" else None
    drawn = figures.mmlongbench_heatmap(report["paper_comparison"], tmp_path / "h.png", models)
    assert (out / "figures" / f"mmlongbench_{which}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rank = _expected_rank(part, models)
    rows = (len(models) if models else 46) + 1
    pixels = _pixels(tmp_path / "h.png")
    red = _near(pixels, HIGHLIGHT_RGB)
    for panel, (x0, y0, x1, y1) in drawn["panels"].items():
        height = (y1 - y0) / rows
        box = red[int(y0) - 4:int(y1) + 4, int(x0) + 3:int(x1) - 3]
        ys = box.any(axis=1).nonzero()[0] + int(y0) - 4
        assert len(ys), panel
        middle = (ys.min() + ys.max()) / 2
        assert int((middle - y0) // height) == rank - 1, (panel, rank)
        assert ys.max() - ys.min() <= height + 6  # one row framed, no other
        # the framed row's cells carry the run's values: its 8k cell is as dark as its score says
    assert rank == part["overall"]["rank"] if models is None else True


def test_length_band_spans_the_published_lowest_to_highest(replayed, tmp_path):
    from mmlbdata.evaluation import figures

    report, _, _ = replayed
    drawn = figures.mmlongbench_lengths(report["paper_comparison"], tmp_path / "l.png")
    pixels = _pixels(tmp_path / "l.png")
    band = _near(pixels, _hex(figures.BAND), 6) | _near(pixels, _hex(figures.QUARTILES), 6)
    run = {t["key"]: t["run"] for t in report["paper_comparison"]["benchmarks"]["mmlongbench"]["compared"]}
    for key, (x0, y0, x1, y1) in drawn["panels"].items():
        (xa, xb), (ya, yb) = drawn["limits"][key]["x"], drawn["limits"][key]["y"]
        values = [r.values for r in pub.mmlongbench_panel(key.split("/")[1], "figure_22").rows]

        def py(v):
            return y1 - (v - ya) / (yb - ya) * (y1 - y0)

        lows = [min(v[i] for v in values if v[i] is not None) for i in range(5)]
        highs = [max(v[i] for v in values if v[i] is not None) for i in range(5)]

        def at(series, x):  # the band's edge between two lengths: a straight line
            i = min(int(x), 3)
            return series[i] + (series[i + 1] - series[i]) * (x - i)

        checked = 0
        for i in (0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4):
            # a pixel column at a length or half-way between two (2 px inside the band at its two ends)
            px = round(x0 + (i - xa) / (xb - xa) * (x1 - x0)) + (2 if i == 0 else -2 if i == 4 else 0)
            x = xa + (px + 0.5 - x0) / (x1 - x0) * (xb - xa)
            ys = band[:, px].nonzero()[0]
            ys = ys[(ys >= y0 - 1) & (ys <= y1 + 1)]
            line = py(at(run[key], x))
            if i == int(i):  # the run's point on its own value
                marker = _near(pixels[int(y0):int(y1), px - 2:px + 3], HIGHLIGHT_RGB).any(axis=1).nonzero()[0]
                assert abs(marker.mean() + int(y0) - line) <= 3, (key, i)
            top, bottom = py(at(highs, x)), py(at(lows, x))
            if min(abs(line - top), abs(line - bottom)) < 8:
                continue  # the run's line or point covers the band's edge here
            assert abs(ys.min() - top) <= 2.5 and abs(ys.max() - bottom) <= 2.5, (key, i)
            checked += 1
        assert checked >= 7, key


def test_depth_heatmap_colours_follow_the_scores(replayed, tmp_path):
    from mmlbdata.evaluation import figures

    report, _, _ = replayed
    depth = report["depth_by_length"]
    assert set(depth) == set(figures.DEPTH_DATASETS)
    drawn = figures.niah_depth(depth, tmp_path / "d.png")
    pixels = _pixels(tmp_path / "d.png")
    low, high = drawn["range"]
    assert (low, high) == (0.0, 1.0)
    for dataset, (x0, y0, x1, y1) in drawn["panels"].items():
        depths = sorted({float(d) for cells in depth[dataset].values() for d in cells})
        for j, length in enumerate(LENGTHS):
            for k, d in enumerate(depths):
                value = depth[dataset].get(length, {}).get(f"{d:.1f}")
                if value not in (0.0, 1.0, None):
                    continue
                x = int(x0 + (j + 0.15) * (x1 - x0) / 5)  # a corner of the cell, away from its number
                y = int(y0 + (k + 0.15) * (y1 - y0) / len(depths))
                # N/A (a length the run lacks) is grey, never the colour of a score of 0
                expected = {1.0: figures.DEPTH_COLOURS[2], 0.0: figures.DEPTH_COLOURS[0]}.get(value, figures.NOT_RUN_COLOUR)
                assert _near(pixels[y, x], _hex(expected), 8), (dataset, length, d, value)


def test_depth_tables_follow_the_examples_depths(replayed):
    """VH-Single at 128K: the replay's right answers fill the deepest positions first (1,000 rows,
    a depth each in turn), so each depth's share is known; a share under 0.5 is flipped as the
    figure script flips a binary accuracy."""
    report, _, _ = replayed
    right = round(pub.mmlongbench_panel("VH-Single").row(REPLAYED).values[4] * 10)
    counts = {d: sum(1 for i in range(1000) if DEPTHS[i % 6] == d) for d in DEPTHS}
    expected = {}
    for d in sorted(DEPTHS, reverse=True):
        share = min(right, counts[d]) / counts[d]
        right -= min(right, counts[d])
        expected[f"{d:.1f}"] = share if share >= 0.5 else 1 - share
    assert report["depth_by_length"]["vh_single"]["128k"] == pytest.approx(expected)
    assert 0.5 < min(expected.values()) < 1.0  # one depth partly right: the test reads a real mean


def test_mmneedle_grid_colours_each_setting(tmp_path):
    from mmlbdata.evaluation import figures

    perfect = {f"p{i}": {"prediction": "1, 2, 1"} for i in range(4)} | {"n0": {"prediction": "-1"},
                                                                          "n1": {"prediction": "-1"}}
    wrong = {f"p{i}": {"prediction": "-1"} for i in range(4)} | {"n0": {"prediction": "1, 1, 1"},
                                                                  "n1": {"prediction": "1, 1, 1"}}
    report = {"configs": {"mmneedle_m1_n2_k1": evaluate_config(_needle_rows(1), perfect),
                          "mmneedle_m10_n8_k2": evaluate_config(_needle_rows(2), wrong)}}
    drawn = figures.mmneedle_grid(report, tmp_path / "n.png")
    pixels = _pixels(tmp_path / "n.png")
    rows, columns = len(figures.NEEDLE_SETTINGS), len(figures.NEEDLE_COUNTS)

    def colour(panel, setting, k):
        x0, y0, x1, y1 = drawn["panels"][panel]
        y = int(y0 + (figures.NEEDLE_SETTINGS.index(setting) + 0.08) * (y1 - y0) / rows)
        x = int(x0 + (figures.NEEDLE_COUNTS.index(k) + 0.08) * (x1 - x0) / columns)
        return pixels[y, x]

    green, red = _hex(figures.DEPTH_COLOURS[2]), _hex(figures.DEPTH_COLOURS[0])
    assert _near(colour("positive Exact", (1, 2), 1), green, 8)
    assert _near(colour("negative Existence", (1, 2), 1), green, 8)
    assert _near(colour("positive Existence", (10, 8), 2), red, 8)
    assert _near(colour("negative Existence", (10, 8), 2), red, 8)
    assert _near(colour("positive Exact", (1, 4), 5), (0xDD, 0xDD, 0xDD), 4)  # not run


# --- the card's section -------------------------------------------------------------------------------------

def test_card_shows_a_real_runs_place_among_the_papers(tmp_path, coco_mini, tokenizer_path, capsys):
    """A real VH-Single build (coco_mini, one question at six depths), scored by ``mmlb eval``; then
    ``mmlb card --report``: the card shows the run beside Figure 24's 46 models, and what it did not
    compare (the rest of NIAH, the other lengths); a report written without --compare-paper gets
    its comparison worked out by the card command."""
    from mmlbdata.cli import main
    from mmlbdata.dataset.build import build_configs
    from mmlbdata.evaluation.evaluate import load_examples

    built = tmp_path / "built"
    results = build_configs(["vh_single_8k"], {"coco": coco_mini}, built, limit=1, store_root=tmp_path / "store",
                            tokenizer=tokenizer_path, progress=False)
    assert all(r.ok for r in results), [r.error for r in results]
    examples = load_examples(built, "vh_single_8k")
    preds = tmp_path / "p.jsonl"
    preds.write_text("".join(json.dumps({"id": e["id"], "config": "vh_single_8k", "prediction": e["answers"][0]}) + "\n"
                             for e in examples))
    assert cli("eval", preds, "--data", built, "--out", tmp_path / "plain", "--no-plot") == 0
    plain = json.loads((tmp_path / "plain" / "report.json").read_text())
    assert "paper_comparison" not in plain  # only with --compare-paper
    capsys.readouterr()
    assert main(["card", str(built), "--no-plot", "--report", str(tmp_path / "plain" / "report.json")]) == 0
    card = (built / "README.md").read_text()
    section = card.split("## Scores of a run against the papers")[1].split("## Known differences")[0]
    assert "| `vh_single_8k` | 6/6 | 100.0 |" in section
    assert "#### MMLongBench Figure 24: VH-Single (Appendix E.12)" in section
    assert "| 8k | 100.0 | 1 / 47 | - | Gemini-2.5-Pro (85.4) |" in section
    assert "- Not compared: NIAH at 8k: no VH-Multi, MM-NIAH-Ret (T)" in section
    assert "- Not compared: lengths 16k, 32k, 64k, 128k: not in this run" in section
    # the same through `mmlb eval --compare-paper`: printed, and in report.json
    assert cli("eval", preds, "--data", built, "--out", tmp_path / "compared", "--no-plot", "--compare-paper") == 0
    printed = capsys.readouterr().out
    assert "== against the papers ==" in printed and "MMLongBench Figure 24: VH-Single" in printed
    compared = json.loads((tmp_path / "compared" / "report.json").read_text())["paper_comparison"]
    assert compared == json.loads(json.dumps(cp.compare(plain)))
    bad = tmp_path / "bad.json"
    bad.write_text("[]")
    assert main(["card", str(built), "--no-plot", "--report", str(bad)]) == 1
    assert "not an `mmlb eval` report.json" in capsys.readouterr().err


def test_plot_and_no_plot_exclude_each_other(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli("eval", tmp_path / "p.jsonl", "--data", tmp_path, "--out", tmp_path / "o", "--plot", "--no-plot")
    assert exit_info.value.code == 2 and "not allowed with argument" in capsys.readouterr().err
