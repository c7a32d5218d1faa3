"""``mmlb stats DIR``: rows, images, token lengths and fill ratio per config, from the parquet."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mmlbdata.cli._common import absolute, built_folder_problem
from mmlbdata.core.extras import MissingExtraError
from mmlbdata.dataset.card import entries_without_hint
from mmlbdata.dataset.demo import DEMO_NOTE, demo_configs
from mmlbdata.dataset.stats import DamagedShardError, configs_in, folder_distributions, plot_distributions


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("stats", help="token-length statistics of a built folder",
                            description="Read each config's parquet files (not the images) and print rows, "
                                        "images per row, token length min/mean/max and the fill ratio "
                                        "num_tokens/length.")
    parser.add_argument("folder", help="a folder written by `mmlb build`")
    parser.add_argument("--config", action="append", default=None, help="only these configs")
    parser.add_argument("--compare-paper", action="store_true",
                        help="also print, for every config a paper describes, the paper's images per "
                             "example and number of examples beside the built ones and the difference "
                             "(numbers from mmlbdata/dataset/paper_stats.yaml, each naming its table)")
    parser.add_argument("--plot", nargs="?", const="", default=None, metavar="PNG",
                        help="also draw token lengths per length and images per example per dataset "
                             "(default file: DIR/stats.png; needs matplotlib, the `eval` extra)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    problem = built_folder_problem(args.folder, args.config if "config" in args else None)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 1
    folder = Path(args.folder)
    names = args.config or configs_in(folder)
    try:
        dists = folder_distributions(folder, names)
    except (DamagedShardError, FileNotFoundError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(f"{'config':<36} {'rows':>6} {'img/row':>8} {'min':>7} {'mean':>8} {'max':>7} {'fill':>6}")
    for dist in dists:
        s = dist.summary()
        fill = f"{s['fill_ratio']:.3f}" if s["rows_with_length"] else "-"
        print(f"{s['config']:<36} {s['rows']:>6} {s['images_per_row']:>8.1f} {s['tokens_min']:>7} "
              f"{s['tokens_mean']:>8.0f} {s['tokens_max']:>7} {fill:>6}")
    stale = entries_without_hint(folder)
    if stale:
        print(f"note: the README of {folder} was written by an earlier mmlbdata ({len(stale)} entries without "
              "imagefolder-hint/): datasets may read the whole folder as plain parquet; `mmlb card` on it, or any "
              "`mmlb build` into it, rewrites the entries", file=sys.stderr)
    demo = demo_configs(folder, names)
    if demo:
        print(f"\n{DEMO_NOTE}\n  demo configs: {', '.join(demo)}")
    if args.compare_paper:
        _print_paper_comparison(dists)
    if args.plot is not None:
        target = Path(args.plot) if args.plot else folder / "stats.png"
        try:
            print(f"plot: {absolute(plot_distributions(dists, target, title=folder.name))}")
        except MissingExtraError as err:  # matplotlib lives in the `eval` extra
            print(f"mmlb stats: {err}", file=sys.stderr)
            return 1
    return 0


def _print_paper_comparison(dists) -> None:
    from mmlbdata.dataset.paper_stats import compare, format_text

    comparisons = compare(dists)
    print()
    if comparisons:
        print(format_text(comparisons))
    else:
        print("no built config is described by a paper's statistics (mmlbdata/dataset/paper_stats.yaml)")
