"""``mmlb list``: every config, one line each; ``--sources``: source keys and their layouts."""
from __future__ import annotations

import argparse
import fnmatch

from mmlbdata.dataset.registry import all_configs, sources_by_key


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("list", help="list buildable configs (or source keys with --sources)",
                            description="List every config one per line: name, family, metric, "
                                        "sources it needs.")
    parser.add_argument("pattern", nargs="?", default="*", help="shell-style filter, e.g. 'vh_*'")
    parser.add_argument("--sources", action="store_true",
                        help="list source keys and the release layout each expects")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.sources:
        print(f"{'source key':<18} (families) release layout it expects")
        for key, users in sources_by_key().items():
            layouts = sorted({layout for _, layout in users})
            families = ", ".join(sorted({family for family, _ in users}))
            print(f"{key:<18} ({families}) {' | '.join(layouts)}")
        return 0
    shown = 0
    for name, entry in all_configs().items():
        if fnmatch.fnmatch(name, args.pattern):
            if not shown:
                print(f"{'config':<40} {'family':<16} {'length':>7}  {'metric':<16} sources")
            length = entry.config.length or "-"
            print(f"{name:<40} {entry.family:<16} {str(length):>7}  {entry.config.metric:<16} "
                  f"sources: {','.join(entry.config.sources)}")
            shown += 1
    return 0 if shown else 1
