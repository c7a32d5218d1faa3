"""A run beside the published models: ``mmlb eval --compare-paper``.

For each benchmark a report covers, the run's numbers are put on the rows of the paper's own
tables (:mod:`mmlbdata.evaluation.published`): MMLongBench's Figure 22 (category x length) and
Figures 23-26 (dataset x length), MMLongBench-Doc's Table 3, MMNeedle's Tables 2-5 and 8-12,
LongVideoBench's Tables 5, 7 and 8, ReadBench's Figure 3 (with a text-context baseline). Each
compared cell gets the run's rank among the published models and the nearest of them above and
below; each benchmark says which part of the paper it compared and what is missing.

The run's numbers are the engine's (:func:`mmlbdata.evaluation.evaluate.evaluate`: each config's
headline score, each metric's aggregates); only the way the paper combines them is added here.
MMLongBench's categories, as ``figure_scripts/utils.py`` @22b9f27 computes them: a dataset's
score per length; a Visual Haystack accuracy under 50 counted as 100 minus it (``get_averaged_metric``
flips it; every published VH value is >= 50); each MM-NIAH task the mean of its text-needle and
image-needle halves (Appendix D); a category the mean of its datasets (``custom_avgs``; the
engine's categories, :data:`mmlbdata.official.names.CATEGORIES`); the average the mean of the
five, none missing (``skipna=False``). Summarization is the judge's fluency x F1 (``gpt4-flu-f1``);
without a judge it has no score, and the comparison says so.

The result is plain JSON (report.json's ``paper_comparison``): the text report, the figures and
the dataset card read it without importing this module.
"""
from __future__ import annotations

import math
import re
from typing import Callable, Optional, Sequence

from mmlbdata.evaluation import published as pub
from mmlbdata.evaluation.evaluate import category_of

RUN_LABEL = "this run"
PAPER_PROTOCOL = pub.load("mmlongbench")["protocol"]


def compare(report: dict) -> dict:
    """The run of ``report`` (``evaluate``'s result) against every paper it touches."""
    used: set[str] = set()
    benchmarks = {}
    for name, compare_one in BENCHMARKS.items():
        part = compare_one(report)
        if part is not None:
            benchmarks[name] = part
            used.update(part.pop("_configs"))
    other = sorted(set(report.get("configs", {})) - used)
    return {"benchmarks": benchmarks,
            "not_compared": [{"config": c, "why": _why_not_compared(c)} for c in other]}


# --- one table ----------------------------------------------------------------------------------

def compare_table(table: pub.Table, run: Sequence[Optional[float]], *, headline: bool = True,
                  label: str = RUN_LABEL, note: str = "") -> dict:
    """The run's values (one per column of ``table``, None where it has none) among the table's
    models: per column the rank (1 = best; ties share it), how many are ranked, the nearest model
    above and below (at the paper's precision), the model closest over all compared columns, and
    the rows as a reader sees them (best first by the mean over the compared columns, the run's
    row among them)."""
    run = [None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v) for v in run]
    ranked = [r for r in table.rows if not r.extra.get("reference")]  # a human baseline is shown, not ranked
    cells = []
    for i, column in enumerate(table.columns):
        if run[i] is None:
            continue
        shown = round(run[i], table.digits)
        published = [(r.model, r.values[i]) for r in ranked if r.values[i] is not None]
        higher = [p for p in published if p[1] > shown]
        lower = [p for p in published if p[1] < shown]
        cells.append({"column": column, "run": run[i], "rank": len(higher) + 1, "of": len(published) + 1,
                      "above": _named(min(higher, key=lambda p: p[1])) if higher else None,
                      "below": _named(max(lower, key=lambda p: p[1])) if lower else None,
                      "tied": [m for m, v in published if v == shown]})
    compared = [c["column"] for c in cells]
    return {"table": table.title, "key": table.key, "source": table.source, "caption": table.caption,
            "columns": list(table.columns), "compared_columns": compared, "digits": table.digits,
            "label": label, "run": run, "cells": cells, "closest": _closest(ranked, run),
            "rows": _display_rows(table, run, label), "headline": headline,
            "not_available": dict(table.not_available), **({"note": note} if note else {})}


def _named(pair) -> dict:
    return {"model": pair[0], "score": pair[1]}


def _closest(rows, run) -> Optional[dict]:
    """The published model nearest the run: least mean absolute difference over the columns both
    have (a model must have at least half of the run's columns)."""
    wanted = [i for i, v in enumerate(run) if v is not None]
    best = None
    for row in rows:
        shared = [i for i in wanted if row.values[i] is not None]
        if not shared or 2 * len(shared) < len(wanted):
            continue
        gap = sum(abs(row.values[i] - run[i]) for i in shared) / len(shared)
        if best is None or gap < best["mean_abs_diff"]:
            best = {"model": row.model, "mean_abs_diff": gap, "columns": len(shared)}
    return best


def _display_rows(table: pub.Table, run, label: str) -> list[dict]:
    """Published rows and the run's, best first by the mean over the run's columns, the run before
    the rows it ties (rows without all of those columns after, in the paper's order)."""
    wanted = [i for i, v in enumerate(run) if v is not None]

    def key(values):
        got = [values[i] for i in wanted if values[i] is not None]
        return (-(len(got) == len(wanted)), -(sum(got) / len(got)) if got else 0.0)

    rows = [{"model": r.model, "group": r.group, "values": list(r.values),
             "cells": [_printed(c, v, table.digits) for c, v in zip(r.printed, r.values)], "run": False}
            for r in table.rows]
    rows.append({"model": label, "group": "", "values": list(run),
                 "cells": ["" if v is None else f"{v:.{table.digits}f}" for v in run], "run": True})
    order = sorted(range(len(rows)), key=lambda i: (*key(rows[i]["values"]), not rows[i]["run"], i))
    return [rows[i] for i in order]


def _printed(cell, value: Optional[float], digits: int) -> str:
    """A cell as the paper prints it; a wording that stands for a number ("s.a.") after its number."""
    if isinstance(cell, (int, float)) and not isinstance(cell, bool):
        return f"{cell:.{digits}f}"
    return str(cell) if value is None else f"{value:.{digits}f} ({cell})"


def _percent(value) -> Optional[float]:
    """An engine fraction as the papers' percentage (None for no score)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return 100.0 * value


def length_of(config: str, result: dict) -> Optional[str]:
    """The config's one length label ("8k"), when its name ends with it."""
    lengths = list(result.get("by_length") or {})
    if len(lengths) == 1 and config.endswith(f"_{lengths[0]}"):
        return lengths[0]
    return None


# --- MMLongBench -------------------------------------------------------------------------------------

#: Visual Haystack's datasets: a binary accuracy below 50 is flipped by the paper's figure script
FLIPPED = ("vh_single", "vh_multi")


def mmlongbench_scores(report: dict) -> tuple[dict, list[str], list[str]]:
    """{(paper dataset, length): score %} of the run as the paper reports a dataset, the configs
    used, and notes (flipped accuracies, datasets without a score)."""
    by_library = {lib: panel for panel, lib in pub.mmlongbench_datasets().items()}
    lengths = pub.load("mmlongbench")["lengths"]
    scores, used, notes = {}, [], []
    for config, result in report.get("configs", {}).items():
        length = length_of(config, result)
        dataset = config[: -len(length) - 1] if length else None
        if dataset not in by_library:
            continue
        used.append(config)
        if length not in lengths:
            notes.append(f"{config}: the paper reports 8K-128K only")
            continue
        value = _percent(result.get("score"))
        if value is None or not result.get("n"):
            notes.append(f"{config}: no score ({_no_score_reason(result)})")
            continue
        if dataset in FLIPPED and value < 50:
            notes.append(f"{config}: accuracy {value:.1f} counted as {100 - value:.1f}, as the paper's figure "
                         "script flips a Visual Haystack accuracy below 50 (figure_scripts/utils.py @22b9f27)")
            value = 100.0 - value
        scores[(by_library[dataset], length)] = value
        paper_n = pub.load("mmlongbench")["examples"][by_library[dataset]]
        if result.get("total", paper_n) < paper_n:
            notes.append(f"{config}: {result['total']} examples; the paper's score averages {paper_n} (Appendix D), "
                         f"so expect a wider spread (this run's standard error: {_percent(result.get('stderr') or 0):.1f})")
    return scores, used, notes


def _no_score_reason(result: dict) -> str:
    for aggregate in (result.get("metrics") or {}).values():
        if isinstance(aggregate, dict) and aggregate.get("note"):
            return str(aggregate["note"])
    return "nothing scored"


def category_units() -> dict[str, dict[str, list[str]]]:
    """category -> {unit: its datasets}: a unit is a dataset, or an MM-NIAH task whose text (T)
    and image (I) halves are averaged first. Categories are the engine's (``category_of``)."""
    out: dict[str, dict[str, list[str]]] = {}
    for panel, library in pub.mmlongbench_datasets().items():
        category = category_of({"dataset": library})
        unit = re.sub(r" \((T|I)\)$", "", panel)
        out.setdefault(category, {}).setdefault(unit, []).append(panel)
    return out


def mmlongbench_categories(scores: dict) -> tuple[dict, dict]:
    """{(category or "Avg.", length): score} as Figure 22 computes it, and {(category, length): the
    datasets missing} where the run has some of a category's datasets at a length but not all."""
    data = pub.load("mmlongbench")
    values, missing = {}, {}
    for length in data["lengths"]:
        for category in data["categories"]:
            units = category_units()[category]
            panels = [p for halves in units.values() for p in halves]
            absent = [p for p in panels if (p, length) not in scores]
            if len(absent) == len(panels):
                continue
            if absent:
                missing[(category, length)] = absent
                continue
            means = [sum(scores[(p, length)] for p in halves) / len(halves) for halves in units.values()]
            values[(category, length)] = sum(means) / len(means)
        parts = [values.get((c, length)) for c in data["categories"]]
        if None not in parts:
            values[(data["average"], length)] = sum(parts) / len(parts)
    return values, missing


def compare_mmlongbench(report: dict) -> Optional[dict]:
    scores, used, notes = mmlongbench_scores(report)
    if not used:
        return None
    data = pub.load("mmlongbench")
    lengths, average = data["lengths"], data["average"]
    categories, partial = mmlongbench_categories(scores)
    compared = []
    for panel in [*data["categories"], average]:
        run = [categories.get((panel, length)) for length in lengths]
        if any(v is not None for v in run):
            compared.append(compare_table(pub.mmlongbench_panel(panel, "figure_22"), run))
    for panel in pub.mmlongbench_datasets():
        run = [scores.get((panel, length)) for length in lengths]
        if any(v is not None for v in run):
            compared.append(compare_table(pub.mmlongbench_panel(panel), run, headline=False))
    missing = [f"{category} at {length}: no {', '.join(units)} in this run" for (category, length), units
               in sorted(partial.items(), key=lambda kv: (lengths.index(kv[0][1]), kv[0][0]))]
    ran = {panel for panel, _ in scores}
    for category in data["categories"]:
        if not ran & {h for halves in category_units()[category].values() for h in halves}:
            missing.append(f"{category}: none of its datasets in this run")
    covered = sorted({length for _, length in scores}, key=lengths.index)
    absent = [length for length in lengths if length not in covered]
    if absent and scores:
        missing.append(f"lengths {', '.join(absent)}: not in this run")
    if not any(c["key"] == f"figure_22/{average}" for c in compared):
        missing.append(f"{average}: needs all five categories at a length")
    return {"paper": pub.PAPER_NAMES["mmlongbench"], "reference": data["reference"],
            "compared": compared, "overall": overall_ranking(compared), "missing": missing,
            "notes": [*_protocol_notes(report), *notes],
            "figure_1_models": data["figures"]["figure_1"]["models"],
            "run_datasets": {f"{panel}|{length}": value for (panel, length), value in scores.items()},
            "_configs": used}


def overall_ranking(compared: list[dict], models: Optional[Sequence[str]] = None) -> Optional[dict]:
    """The run among Figure 22's models (or ``models``) over every (category, length) cell the run
    has: each model's mean over those cells (its N/A cells left out), best first, the run before
    the models it ties; ``rank`` = 1 + the models strictly above. None when the run has no cell."""
    tables = [t for t in compared if t["key"].startswith("figure_22/")]
    cells = [(t["key"], i) for t in tables for i, v in enumerate(t["run"]) if v is not None]
    if not cells:
        return None
    values: dict[str, dict] = {}
    for table in tables:
        for row in table["rows"]:
            values.setdefault(row["model"], {}).update(
                {(table["key"], i): v for i, v in enumerate(row["values"]) if v is not None})
    order = []
    for model, got in values.items():
        run = model == tables[0]["label"]
        if not run and models is not None and model not in models:
            continue
        shared = [got[c] for c in cells if c in got]
        if shared:
            order.append({"model": model, "score": sum(shared) / len(shared), "run": run, "cells": len(shared)})
    order.sort(key=lambda e: (-round(e["score"], 6), not e["run"]))
    rank = next(i for i, e in enumerate(order) if e["run"]) + 1
    return {"cells": len(cells), "rank": rank, "of": len(order), "order": order}


def _protocol_notes(report: dict) -> list[str]:
    """How the run was scored, where MMLongBench's published numbers were scored otherwise."""
    protocol = (report.get("protocol") or {}).get("name")
    notes = []
    if protocol and protocol != PAPER_PROTOCOL:
        notes.append(f"the published numbers were scored under MMLongBench protocol {PAPER_PROTOCOL} (the "
                     f"paper's code); this run under {protocol} (document QA by an LLM judge when one is "
                     f"configured, answers read to the end): pass --protocol {PAPER_PROTOCOL} to score as the paper")
    return notes + _parity_notes(report)


def _parity_notes(report: dict) -> list[str]:
    """Every paper scored with its own code: say when the run was not."""
    if report.get("parity") == "official":
        return []
    return ["scored with this library's default scorers; --parity official scores as the papers' code does "
            "(docs/evaluation.md lists every difference)"]


# --- MMLongBench-Doc ---------------------------------------------------------------------------------

#: Table 3's columns -> the engine's mmlongbench_doc aggregate (``metrics/docs.py``)
DOC_COLUMNS = {"TXT": "acc[source=Pure-text (Plain-text)]", "LAY": "acc[source=Generalized-text (Layout)]",
               "CHA": "acc[source=Chart]", "TAB": "acc[source=Table]", "FIG": "acc[source=Figure]",
               "SIN": "acc[single_page]", "MUL": "acc[cross_page]", "UNA": "acc[unanswerable]",
               "ACC": "acc", "F1": "f1"}
WHOLE_DOCUMENT = re.compile(r"mmlongbench_doc(_concat)?$")


def compare_mmlongbench_doc(report: dict) -> Optional[dict]:
    configs = {c: r for c, r in report.get("configs", {}).items() if c.startswith("mmlongbench_doc")}
    if not configs:
        return None
    table = pub.mmlongbench_doc_table()
    compared, missing, notes = [], [], _parity_notes(report)
    for config, result in configs.items():
        if not WHOLE_DOCUMENT.fullmatch(config):
            notes.append(f"{config}: Table 3 feeds whole documents; no published row at a token budget")
            continue
        aggregate = (result.get("metrics") or {}).get("mmlongbench_doc") or {}
        run = [_percent(aggregate.get(DOC_COLUMNS[c])) for c in table.columns]
        absent = [c for c, v in zip(table.columns, run) if v is None]
        if absent:
            missing.append(f"{config}: no {', '.join(absent)} (no question of that kind scored)")
        if result.get("answered", 0) < result.get("total", 0):
            notes.append(f"{config}: Table 3's columns are over the {result['answered']} answered of "
                         f"{result['total']} questions")
        how = "pages concatenated into images, as the paper feeds open-source LVLMs" if config.endswith("_concat") \
            else "every page an image, as the paper feeds GPT-4o, GPT-4V and Gemini-1.5-Pro"
        compared.append(compare_table(table, run, label=f"this run ({config})", note=how))
    if not compared:
        missing.append("Table 3: no whole-document config (mmlongbench_doc, mmlongbench_doc_concat) in this run")
    return {"paper": pub.PAPER_NAMES["mmlongbench_doc"], "reference": pub.load("mmlongbench_doc")["reference"],
            "compared": compared, "missing": missing, "notes": notes, "_configs": list(configs)}


# --- MMNeedle ---------------------------------------------------------------------------------------

NEEDLE_CONFIG = re.compile(r"mmneedle_m(\d+)_n(\d+)_k(\d+)$")
METRIC_KEYS = {"Existence": "exist", "Index": "index", "Exact": "exact"}


def needle_value(aggregates: dict, m: int, n: int, k: int, samples: str, metric: str) -> Optional[float]:
    aggregate = aggregates.get((m, n, k))
    if aggregate is None:
        return None
    kind = "single" if k == 1 else "multi"
    return _percent(aggregate.get(f"{kind}.{'pos' if samples == 'positive' else 'neg'}.{METRIC_KEYS[metric]}"))


def mmneedle_cells(report: dict) -> tuple[dict, list[str]]:
    """{(m, n, k): the config's mmneedle aggregate} and the configs read."""
    aggregates, used = {}, []
    for config, result in report.get("configs", {}).items():
        match = NEEDLE_CONFIG.fullmatch(config)
        if match:
            used.append(config)
            aggregates[tuple(map(int, match.groups()))] = (result.get("metrics") or {}).get("mmneedle") or {}
    return aggregates, used


def _needle_column(column: str, table: pub.Table) -> tuple[int, int, str]:
    """(m, n, metric) of a column: "4x4 Exact" in a positive table, "2x2 10 imgs" in a negative one."""
    size, rest = column.split(" ", 1)
    n = int(size.split("x")[0])
    if table.meta["samples"] == "positive":
        return table.meta["m"], n, rest
    return int(rest.split()[0]), n, "Existence"


def compare_mmneedle(report: dict) -> Optional[dict]:
    aggregates, used = mmneedle_cells(report)
    budget = [c for c in report.get("configs", {}) if re.fullmatch(r"mmneedle_n\d+_k\d+_\d+k", c)]
    if not used and not budget:
        return None
    compared, missing, notes = [], [], _parity_notes(report)
    for key, table in pub.mmneedle_tables().items():
        k, run = table.meta["k"], []
        for column in table.columns:
            m, n, metric = _needle_column(column, table)
            run.append(needle_value(aggregates, m, n, k, table.meta["samples"], metric))
        if any(v is not None for v in run):
            compared.append(compare_table(table, run, note=_needle_setting(table)))
            absent = sorted({f"mmneedle_m{_needle_column(c, table)[0]}_n{_needle_column(c, table)[1]}_k{k}"
                             for c, v in zip(table.columns, run) if v is None})
            if absent:
                missing.append(f"{table.title}: no {', '.join(absent)} in this run")
        else:
            missing.append(f"{table.title} ({_needle_setting(table)}): not in this run")
    if (1, 2, 5) in aggregates:
        notes.append("mmneedle_m1_n2_k5 has 4 needles (a 2x2 grid has 4 cells); the paper's code repeated a needle")
    notes += [f"{c}: a token-budget config; the paper reports its M x N settings only" for c in budget]
    return {"paper": pub.PAPER_NAMES["mmneedle"], "reference": pub.load("mmneedle")["reference"],
            "compared": compared, "missing": missing, "notes": notes, "_configs": used + budget}


def _needle_setting(table: pub.Table) -> str:
    meta = table.meta
    if meta["samples"] == "positive":
        return f"M={meta['m']}, K={meta['k']}, positive samples"
    return f"K={meta['k']}, negative samples"


# --- LongVideoBench ----------------------------------------------------------------------------------

LVB_CONFIG = re.compile(r"lvb_(val|test)_(\d+)f$")
#: the engine's duration_group table keys -> the paper's groups (seconds)
DURATION_GROUPS = {"15": "(8,15]", "60": "(15,60]", "600": "(180,600]", "3600": "(900,3600]"}


def _lvb_run(result: dict, columns: Sequence[str]) -> list[Optional[float]]:
    """One value per column: a duration group or question category (answered only, the engine's
    group tables), or a total (the config's headline)."""
    groups = result.get("groups") or {}
    by_column = {DURATION_GROUPS[k]: _percent(v["score"]) for k, v in (groups.get("duration_group") or {}).items()
                 if k in DURATION_GROUPS}
    by_column.update({k: _percent(v["score"]) for k, v in (groups.get("question_category") or {}).items()})
    total = _percent(result.get("score"))
    return [total if c in ("all", "Val Total", "Test Total") else by_column.get(c) for c in columns]


def compare_lvb(report: dict) -> Optional[dict]:
    configs = {c: r for c, r in report.get("configs", {}).items() if c.startswith("lvb_")}
    if not configs:
        return None
    compared, missing, notes = [], [], _parity_notes(report)
    tables = pub.lvb_tables()
    table5_frames = sorted({f for _, rows in pub.lvb_table5_panels().values() for f in rows})
    splits = set()
    for config, result in sorted(configs.items()):
        match = LVB_CONFIG.fullmatch(config)
        if not match:
            notes.append(f"{config}: {_lvb_variant(config)}; Tables 5, 7 and 8 interleave frames and subtitles")
            continue
        split, frames = match.group(1), int(match.group(2))
        splits.add(split)
        label = f"this run ({config})"
        if split == "val":
            if frames in table5_frames:
                table = pub.lvb_table5_at(frames)
                compared.append(compare_table(table, _lvb_run(result, table.columns), label=label,
                                              note=f"validation set, max_frames {frames}"))
            else:
                missing.append(f"Table 5 has no max_frames {frames} row")
            table = tables["table_8"]  # its 35 models hold Table 7's 23
            run = [_lvb_run(result, ["Val Total"])[0] if c == "Val Total" else None for c in table.columns]
            compared.append(compare_table(table, run, label=label,
                                          note="validation total; the other columns are the test set's"))
        else:
            for key in ("table_7", "table_8"):
                table = tables[key]
                run = [None if c == "Val Total" else v for c, v in zip(table.columns, _lvb_run(result, table.columns))]
                compared.append(compare_table(table, run, label=label, note=f"test set, max_frames {frames}"))
    if "test" not in splits:
        missing.append("test set (Tables 7, 8: Test Total, duration groups, 17 question categories): not in this run")
    if "val" not in splits:
        missing.append("validation set (Table 5; the Val Total of Tables 7, 8): not in this run")
    return {"paper": pub.PAPER_NAMES["longvideobench"], "reference": pub.load("longvideobench")["reference"],
            "compared": compared, "missing": missing, "notes": notes, "_configs": list(configs)}


def _lvb_variant(config: str) -> str:
    if config.endswith("_frames"):
        return "frames without subtitles (the paper's Table 6 studies it; not transcribed)"
    if config.endswith("_subs"):
        return "subtitles only (the paper's Table 6 studies it; not transcribed)"
    return "frames chosen to fill a token budget; the paper reports max_frames settings only"


# --- ReadBench ---------------------------------------------------------------------------------------

#: the run's datasets -> Figure 3's columns
READBENCH_COLUMNS = {"readbench_mmlu_redux": "MMLU Redux", "readbench_mmlu_pro": "MMLU Pro",
                     "readbench_gpqa": "GPQA Diam.", "readbench_longbench": "Long Bench",
                     "readbench_babilong": "BabiL Overall"}


def compare_readbench(report: dict) -> Optional[dict]:
    configs = [c for c in report.get("configs", {}) if c.startswith("readbench_")]
    if not configs:
        return None
    table = pub.readbench_table()
    delta = ((report.get("delta_vs_baseline") or {}).get("overall") or {}).get("by_dataset") or {}
    run = [None] * len(table.columns)
    for dataset, column in READBENCH_COLUMNS.items():
        if dataset in delta:
            run[table.columns.index(column)] = 100.0 * delta[dataset]
    compared, missing = [], []
    if any(v is not None for v in run):
        compared.append(compare_table(table, run, note="the run's image score minus its --baseline text score"))
        absent = [c for c, v in zip(table.columns, run) if v is None]
        missing.append(f"{', '.join(absent)}: not computed from this run (page-count bins and the paper's "
                       "overall average need its per-question page counts)")
    else:
        missing.append("Figure 3 reports multimodal minus text-only scores: score the same questions with "
                       "`mmlb run --text-context` and pass that report.json as --baseline")
    std = [c for c in configs if c.startswith("readbench_std_")]
    notes = [f"{c}: a token-budget variant of this library; not in the paper" for c in std]
    return {"paper": pub.PAPER_NAMES["readbench"], "reference": pub.load("readbench")["reference"],
            "compared": compared, "missing": missing, "notes": notes, "_configs": configs}


def _why_not_compared(config: str) -> str:
    if config.startswith("memlens"):
        return "MemLens is not among the five papers"
    return "not in the papers' result tables (a dataset or setting of this library only)"


BENCHMARKS: dict[str, Callable[[dict], Optional[dict]]] = {
    "mmlongbench": compare_mmlongbench, "mmlongbench_doc": compare_mmlongbench_doc, "mmneedle": compare_mmneedle,
    "longvideobench": compare_lvb, "readbench": compare_readbench}
