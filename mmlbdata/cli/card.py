"""``mmlb card DIR``: write the dataset card (README.md + stats.png) of a built folder.

stats.png needs matplotlib (``pip install 'mmlbdata[eval]'``); without it the card is written
without the plot, and the command says so. ``--report OUT/report.json`` (from ``mmlb eval``) adds
the run's scores and their places among the papers' published models."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from mmlbdata.cli._common import absolute, built_folder_problem
from mmlbdata.core.extras import MissingExtraError
from mmlbdata.dataset.card import render_card
from mmlbdata.dataset.stats import DamagedShardError


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("card", help="write the dataset card of a built folder",
                            description="Render the benchmark's template from mmlbdata/dataset/cards/ with statistics "
                                        "recomputed from the parquet files: README.md (YAML front matter "
                                        "that load_dataset and the Hub read, then the card) and stats.png.")
    parser.add_argument("folder", help="a folder written by `mmlb build`")
    parser.add_argument("--benchmark", default=None,
                        help="template name in mmlbdata/dataset/cards/ (default: the one covering the folder's families)")
    parser.add_argument("--repo", default=None, help="Hub repo id shown in the loading examples")
    parser.add_argument("--templates", default=None, metavar="DIR", help="templates folder (default: mmlbdata/dataset/cards/, or $MMLB_CARDS_DIR)")
    parser.add_argument("--report", default=None, metavar="REPORT_JSON",
                        help="an `mmlb eval` report.json: the card gains a section with the run's scores beside "
                             "every model the papers report (its rank, the nearest models, what is not compared); "
                             "worked out here when the report was written without --compare-paper")
    parser.add_argument("--no-plot", action="store_true",
                        help="do not draw stats.png (drawn with matplotlib, from the `eval` extra; "
                             "without it the card is written without the plot)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    problem = built_folder_problem(args.folder, args.config if "config" in args else None)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 1
    note = None
    try:
        report = read_report(args.report) if args.report else None
    except (OSError, ValueError) as err:
        print(f"error: --report {args.report}: {err}", file=sys.stderr)
        return 1
    try:
        try:
            path = write(args, plot=not args.no_plot, report=report)
        except MissingExtraError as err:  # matplotlib lives in the `eval` extra: the card, without the plot
            path = write(args, plot=False, report=report)
            note = f"note: card written without stats.png: {err}"
    except (FileNotFoundError, LookupError, KeyError, DamagedShardError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(f"wrote {absolute(path)}")
    if note:
        print(note, file=sys.stderr)
    return 0


def read_report(path: str) -> dict:
    """report.json's content, with its comparison to the papers (worked out if it has none)."""
    report = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(report, dict) or not isinstance(report.get("configs"), dict):
        raise ValueError("not an `mmlb eval` report.json (no 'configs' object)")
    if "paper_comparison" not in report:
        from mmlbdata.evaluation.compare_paper import compare

        report["paper_comparison"] = compare(report)
    return report


def write(args: argparse.Namespace, plot: bool, report: dict | None = None) -> Path:
    return render_card(args.folder, benchmark=args.benchmark, repo_id=args.repo, plot=plot,
                       templates_dir=Path(args.templates) if args.templates else None, report=report)
