"""Render an evaluation report: text tables, JSON, a score-vs-length plot, run deltas."""
from __future__ import annotations

import json
from pathlib import Path

from mmlbdata.core.extras import require
from mmlbdata.evaluation.evaluate import _length_key


def format_table(headers: list[str], rows: list[list]) -> str:
    cells = [[str(h) for h in headers]] + [[_fmt(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{100 * value:.1f}" if value <= 1.0 else f"{value:.3f}"
    return str(value)


def render(report: dict) -> str:
    """Per-config, per-category and per-length tables (scores in %), plus problems."""
    out = []
    configs = report["configs"]
    if report.get("parity") == "official":
        out.append("parity: official (each metric as the benchmark's own scorer returns it, bugs included)")
    protocol = report.get("protocol")
    if protocol:
        out.append(f"MMLongBench protocol {protocol['name']} ({protocol['repository']} @{protocol['commit'][:7]})")
    judge = report.get("docqa_judge")
    if judge:
        origin = judge["prompts"]
        out.append(f"document QA: LLM judge {judge['model']}, prompts {origin['file']} (md5 {origin['md5']}"
                   + (f", {origin['repository']} @{origin['commit'][:7]})" if origin["official"] else
                      ", NOT the pinned official file)"))
    out.append(headline_table(configs))
    out.append(headline_note(configs))
    overall = report.get("overall")
    if overall and len(configs) > 1:
        out.append(f"mean over configs {_fmt(overall['mean_over_configs'])}; "
                   f"unweighted mean over datasets {_fmt(overall['mean_over_datasets'])}")
    for config, res in configs.items():
        out.append(f"\n== {config} ==")
        for metric, agg in res["metrics"].items():
            rows = [[k, v] for k, v in agg.items() if k != "n"]
            out.append(format_table([f"{metric} (answered only, n={agg.get('n', '')})", "value"], rows))
        out.append(format_table(["category", "answered", "score %", "stderr", "95% CI"],
                                [_uncertain_row(k, v) for k, v in res["by_category"].items()]))
        out.append(format_table(["length", "answered", "score %", "stderr", "95% CI"],
                                [_uncertain_row(k, v) for k, v in res["by_length"].items()]))
        for key, table in res["groups"].items():
            out.append(format_table([f"{key} (answered only)", "n", "score %"],
                                    [[k, v["n"], v["score"]] for k, v in table.items()]))
        problems = res["problems"]
        mismatch = problems.get("protocol_mismatch")
        if mismatch:
            out.append(f"WARNING: built under MMLongBench protocol {mismatch['built']}, scored under "
                       f"{mismatch['scored']}: the score follows neither (pass --protocol {mismatch['built']})")
        if problems["unknown_ids"]:
            out.append(f"prediction ids not in the config: {len(problems['unknown_ids'])} "
                       f"{problems['unknown_ids'][:5]}")
        if problems["missing_predictions"]:
            out.append(f"examples without prediction: {problems['missing_predictions']}"
                       + (" (counted as wrong)" if res.get("missing_counted_as_wrong")
                          else " (left out, as the official code does)"))
    malformed = report["problems"].get("malformed_lines", [])
    if malformed:
        out.append(f"\nmalformed prediction lines: {len(malformed)}")
        out.extend(f"  {_where(m)}: {m['error']}" for m in malformed[:20])
    if report["problems"].get("duplicate_ids"):
        out.append(f"duplicate ids (last kept): {report['problems']['duplicate_ids'][:10]}")
    if report.get("judge"):
        j = report["judge"]
        out.append(f"\njudge {j['model']}: {j['calls']} calls, {j['cache_hits']} cached, {j['failures']} failed, "
                   f"{j['prompt_tokens']}+{j['completion_tokens']} tokens, ${j['cost_usd']:.4f}")
    if report.get("paper_comparison"):
        out.append(paper_comparison_text(report["paper_comparison"]))
    return "\n".join(out)


def paper_comparison_text(comparison: dict) -> str:
    """``--compare-paper``: per benchmark, each compared table's ranks (this run among the published
    models, the nearest above and below), the whole table for the paper's headline tables, then
    what was not compared and why (``compare_paper.compare``'s JSON)."""
    out = ["\n== against the papers =="]
    for part in comparison["benchmarks"].values():
        out.append(f"\n{part['paper']} ({part['reference']})")
        out.extend(f"compared: {t['table']} ({', '.join(t['compared_columns'])})" for t in part["compared"])
        overall = part.get("overall")
        if overall:
            out.append(f"overall: rank {overall['rank']} of {overall['of']} over the {overall['cells']} category x length "
                       "cells this run has (each model's mean over them)")
        for table in part["compared"]:
            out.append(f"\n{table['table']} ({_where(table['source'])})" + (f": {table['note']}" if table.get("note") else ""))
            out.append(format_table(["column", table["label"], "rank", "nearest above", "nearest below", "tied"],
                                    [_rank_row(cell, table["digits"]) for cell in table["cells"]]))
            if table["closest"]:
                out.append(f"closest published model: {table['closest']['model']} (mean difference "
                           f"{table['closest']['mean_abs_diff']:.2f} over {table['closest']['columns']} columns)")
            if table["headline"]:
                out.append(format_table(["", "model", *table["columns"]],
                                        [[">>" if r["run"] else "", r["model"], *r["cells"]] for r in table["rows"]]))
        out.extend(f"missing: {line}" for line in part["missing"])
        out.extend(f"note: {line}" for line in part["notes"])
    for item in comparison.get("not_compared", []):
        out.append(f"not compared: {item['config']} ({item['why']})")
    return "\n".join(out)


def _where(source: dict) -> str:
    page = f", page {source['page']}" if source.get("page") else ""
    return f"{source['paper']}, {source['location']}{page}" if source.get("location") else f"{source['paper']}{page}"


def _rank_row(cell: dict, digits: int) -> list:
    def named(entry):
        return f"{entry['model']} {entry['score']:.{digits}f}" if entry else "-"

    return [cell["column"], f"{cell['run']:.{digits}f}", f"{cell['rank']}/{cell['of']}", named(cell["above"]),
            named(cell["below"]), ", ".join(cell["tied"]) or "-"]


def _percent(value: float) -> str:
    return f"{100 * value:.1f}"


def _interval(cell: dict) -> str:
    ci = cell.get("ci95") or []
    return f"[{_percent(ci[0])}, {_percent(ci[1])}]" if ci else "-"


def _uncertain_row(key: str, cell: dict) -> list:
    """key, answered/n, score %, standard error, bootstrap interval."""
    return [key, f"{cell.get('answered', cell['n'])}/{cell['n']}", _percent(cell["score"]),
            _percent(cell.get("stderr", 0.0)), _interval(cell)]


def headline_table(configs: dict) -> str:
    """One row per config: answered of total, the headline score with its standard error and
    bootstrap interval, and the mean over the answered examples only."""
    return format_table(["config", "answered", "score %", "stderr", "95% CI", "answered-only %"],
                        [[c, f"{r['answered']}/{r['total']}", _percent(r["score"]), _percent(r["stderr"]),
                          _interval(r), _percent(r["score_answered"])] for c, r in configs.items()])


def headline_note(configs: dict) -> str:
    """What the score column averages (it differs under --parity official)."""
    if all(r["missing_counted_as_wrong"] for r in configs.values()):
        return ("score %: over every example of the config, an example without a prediction counted as "
                "wrong; answered-only %: over the answered examples only")
    return ("score %: over the answered examples only, as the official code scores (MMLongBench's eval.py skips "
            "an example without output); answered-only % is the same figure")


def write_json(report: dict, path: str | Path) -> None:
    Path(path).write_text(json.dumps(report, indent=2, ensure_ascii=False, sort_keys=False), encoding="utf-8")


def plot(report: dict, path: str | Path) -> Path | None:
    """Score vs context length, one line per category (all configs pooled); None (no file) when
    no category has a score."""
    matplotlib = require("matplotlib", "eval", "the score plot (scores.png)")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series: dict[str, dict[str, list]] = {}
    for res in report["configs"].values():
        for key, cell in res["by_category_length"].items():
            category, length = key.split("|", 1)
            acc = series.setdefault(category, {}).setdefault(length, [0.0, 0])
            acc[0] += cell["score"] * cell["n"]
            acc[1] += cell["n"]
    if not series:
        return None  # nothing to draw (an empty plot would only warn)
    lengths = sorted({l for s in series.values() for l in s}, key=_length_key)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for category, points in sorted(series.items()):
        xs = [lengths.index(l) for l in lengths if l in points]
        ys = [100 * points[l][0] / points[l][1] for l in lengths if l in points]
        ax.plot(xs, ys, marker="o", label=category)
    ax.set_xticks(range(len(lengths)), lengths)
    ax.set_xlabel("context length")
    ax.set_ylabel("score (%)")
    ax.set_ylim(0, 100)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return Path(path)


def delta(report: dict, baseline: dict) -> dict:
    """This run minus a baseline run (e.g. ReadBench image minus text), per config, category
    and length where both have scores."""
    out = {}
    for config, res in report["configs"].items():
        base = baseline.get("configs", {}).get(config)
        if base is None:
            continue
        entry = {"score": res["score"] - base["score"]}
        for table in ("by_category", "by_length"):
            entry[table] = {k: v["score"] - base[table][k]["score"] for k, v in res[table].items() if k in base[table]}
        out[config] = entry
    mine, theirs = report.get("overall", {}), baseline.get("overall", {})
    if mine and theirs:
        shared = set(mine["by_dataset"]) & set(theirs["by_dataset"])
        out["overall"] = {
            "mean_over_datasets": mine["mean_over_datasets"] - theirs["mean_over_datasets"],
            "by_dataset": {k: mine["by_dataset"][k] - theirs["by_dataset"][k] for k in sorted(shared)}}
    return out


def _where(malformed: dict) -> str:
    """Where a bad prediction was: its line, or its key in a file that is one JSON object."""
    return f"line {malformed['line']}" if "line" in malformed else f"key {malformed.get('key')!r}"
