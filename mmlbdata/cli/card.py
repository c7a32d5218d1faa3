"""``mmlb card DIR``: write the dataset card (README.md + stats.png) of a built folder.

stats.png needs matplotlib (``pip install 'mmlbdata[eval]'``); without it the card is written
without the plot, and the command says so."""
from __future__ import annotations

import argparse
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
        try:
            path = write(args, plot=not args.no_plot)
        except MissingExtraError as err:  # matplotlib lives in the `eval` extra: the card, without the plot
            path = write(args, plot=False)
            note = f"note: card written without stats.png: {err}"
    except (FileNotFoundError, LookupError, KeyError, DamagedShardError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(f"wrote {absolute(path)}")
    if note:
        print(note, file=sys.stderr)
    return 0


def write(args: argparse.Namespace, plot: bool) -> Path:
    return render_card(args.folder, benchmark=args.benchmark, repo_id=args.repo, plot=plot,
                       templates_dir=Path(args.templates) if args.templates else None)
