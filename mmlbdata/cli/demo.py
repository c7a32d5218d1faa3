"""``mmlb demo --out DIR``: a few configs built from generated demo sources, no download."""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from mmlbdata.cli._common import tokenizer_or_message
from mmlbdata.cli.build import check_folder_loads, print_summary
from mmlbdata.dataset.build import build_configs
from mmlbdata.dataset.demo import DEMO_NOTE, DEMO_PROVENANCE, make_demo_coco

DEMO_CONFIGS = ["vh_single_8k", "vh_single_32k", "vh_multi_8k", "vh_multi_32k"]


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("demo", help="build demo configs from generated sample sources (no download)",
                            description=f"Build {', '.join(DEMO_CONFIGS)} from synthetic shape images the "
                                        f"library draws itself. {DEMO_NOTE} Needs the Llama-2 tokenizer "
                                        "($MMLB_TOKENIZER or --tokenizer) to count text tokens.")
    parser.add_argument("--out", required=True, help="output dataset folder")
    parser.add_argument("--questions", type=int, default=4, help="source questions per config (default 4)")
    parser.add_argument("--tokenizer", default=None, metavar="PATH",
                        help="Llama-2 tokenizer.model (default: $MMLB_TOKENIZER or the HF cache)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    out = Path(args.out).expanduser().absolute()
    problem = real_configs_problem(out)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    if tokenizer_or_message(args.tokenizer, getattr(args, "argv", None)):
        return 2
    with tempfile.TemporaryDirectory(prefix="mmlb-demo-") as tmp:
        coco = make_demo_coco(Path(tmp) / "coco")
        results = build_configs(DEMO_CONFIGS, {"coco": coco}, out, limit=args.questions,
                                store_root=Path(tmp) / "store", tokenizer=args.tokenizer,
                                progress=not args.no_progress, provenance=DEMO_PROVENANCE)
    print(f"\n{DEMO_NOTE}")
    return max(print_summary(results, str(out)), check_folder_loads(str(out)))


def real_configs_problem(out: Path) -> str | None:
    """Refuse a folder holding configs built from real sources: the demo's synthetic rows would
    replace those of the same names (and `mmlb gc` would then offer to delete their images), and
    beside the others they would make one folder of real and synthetic data."""
    from mmlbdata.dataset.demo import demo_configs
    from mmlbdata.dataset.stats import configs_in

    built = configs_in(out) if out.is_dir() else []
    real = sorted(set(built) - set(demo_configs(out, built)))
    if not real:
        return None
    replaced = [name for name in DEMO_CONFIGS if name in real]
    shown = ", ".join(real[:4]) + (" ..." if len(real) > 4 else "")
    return (f"{out} holds {len(real)} config(s) built from real sources ({shown}); `mmlb demo` writes synthetic "
            "configs" + (f" and would replace {', '.join(replaced)}" if replaced else "") +
            ": give it a folder of its own (e.g. --out demo_mmlb)")
