"""The card's "Scores of a run against the papers" section, from an ``mmlb eval`` report.

Why here: the card is the dataset layer's, which must not import ``evaluation``; ``mmlb card
--report`` hands it report.json's content, whose ``paper_comparison`` (written by
``mmlbdata.evaluation.compare_paper``) is plain JSON. This module only lays that JSON out as
Markdown table rows for ``cards/_base.md.jinja``.
"""
from __future__ import annotations

from typing import Any, Optional


def section(report: Optional[dict]) -> Optional[dict[str, Any]]:
    """What the template's evaluation section shows (None: no report, or nothing scored)."""
    if not report or not report.get("configs"):
        return None
    comparison = report.get("paper_comparison") or {}
    protocol = report.get("protocol") or {}
    return {
        "predictions": str(report.get("predictions", "")).rsplit("/", 1)[-1],
        "parity": report.get("parity", "default"),
        "protocol": protocol.get("name", ""),
        "configs": [{"name": name, "answered": f"{r.get('answered', 0)}/{r.get('total', 0)}",
                     "score": _percent(r.get("score"))} for name, r in report["configs"].items()],
        "benchmarks": [_benchmark(part) for part in (comparison.get("benchmarks") or {}).values()],
        "not_compared": comparison.get("not_compared") or [],
        "compared": bool(comparison),
    }


def _benchmark(part: dict) -> dict:
    overall = part.get("overall")
    return {
        "paper": part["paper"], "reference": part["reference"],
        "overall": (f"rank {overall['rank']} of {overall['of']} over the {overall['cells']} category x length "
                    "cells this run has (each model's mean over them)") if overall else "",
        "tables": [_table(t) for t in part["compared"]],
        "missing": part["missing"], "notes": part["notes"],
    }


def _table(table: dict) -> dict:
    digits = table["digits"]
    source = table["source"]
    where = ", ".join(x for x in (source.get("location"), f"page {source['page']}" if source.get("page") else "") if x)
    return {
        "title": table["table"], "where": where, "note": table.get("note", ""), "headline": table["headline"],
        "label": table["label"],
        "ranks": [[c["column"], f"{c['run']:.{digits}f}", f"{c['rank']} / {c['of']}", _named(c["above"], digits),
                   _named(c["below"], digits)] for c in table["cells"]],
        "closest": (f"{table['closest']['model']} (mean difference {table['closest']['mean_abs_diff']:.2f} over "
                    f"{table['closest']['columns']} columns)") if table.get("closest") else "",
        "columns": table["columns"],
        "rows": [[f"**{r['model']}**" if r["run"] else r["model"],
                  *[(f"**{c}**" if r["run"] and c else c) for c in r["cells"]]] for r in table["rows"]],
        "published": sum(1 for r in table["rows"] if not r["run"]),
    }


def _named(entry: Optional[dict], digits: int) -> str:
    return f"{entry['model']} ({entry['score']:.{digits}f})" if entry else "-"


def _percent(value) -> str:
    return "-" if value is None or value != value else f"{100 * value:.1f}"
