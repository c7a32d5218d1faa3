"""``mmlb build CONFIG... --source KEY=PATH --out DIR`` and ``mmlb build --all``."""
from __future__ import annotations

import argparse
import signal
import sys
import time
from pathlib import Path

from mmlbdata.cli._common import absolute, key_value, parse_option_value, positive_int, tokenizer_or_message
from mmlbdata.core.suggest import did_you_mean
from mmlbdata.dataset.build import (
    build_all,
    build_configs,
    run_locally,
    select_configs,
    sources_from_dir,
    summary_table,
    write_failure_manifest,
)
from mmlbdata.dataset.registry import UnknownConfigError, sources_by_key
from mmlbdata.official.protocol import PROTOCOLS

EXAMPLES_SHOWN = 2  # the skipped records printed per reason (the manifest keeps more)


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "build", help="build configs into a dataset folder",
        description="Build one or more configs from local copies of the original releases into a "
                    "folder that datasets.load_dataset(folder, config) reads. Building into an existing "
                    "folder adds or replaces those configs and keeps the others.",
        epilog="examples: mmlb build vh_single_8k vh_multi_32k --source coco=/data/coco2017 --out mmlb\n"
               "          mmlb build --all --benchmark mmlongbench --sources-dir /data/sources --out mmlb "
               "--num-proc 4\n"
               "          mmlb build vh_single_128k --source mmlb_release=/data/MMLongBench --option subset=paper "
               "--out mmlb   (the official released examples; subset=paper: the sample the paper scored)",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("configs", nargs="*", metavar="CONFIG",
                        help="config names (see `mmlb list`); with --all, optional shell patterns that "
                             "filter the selection (e.g. 'vh_*')")
    parser.add_argument("--all", action="store_true",
                        help="build every config (of --benchmark / --family) whose sources are given; "
                             "resumable: complete configs built with the same parameters are kept")
    parser.add_argument("--benchmark", default=None,
                        help="with --all: a benchmark of mmlbdata/dataset/cards/ (mmlongbench, mmneedle, mmlongbench_doc, "
                             "readbench, longvideobench)")
    parser.add_argument("--family", action="append", default=None,
                        help="with --all: only these families (repeatable; with --benchmark, its configs of "
                             "these families)")
    parser.add_argument("--sources-dir", default=None, metavar="DIR",
                        help="a folder with one subfolder per source key (DIR/coco, DIR/mmlongbench_doc ...)")
    parser.add_argument("--fetch", action="store_true",
                        help="first download what the selected configs need into --sources-dir "
                             "(as `mmlb fetch --config ...`; parts already there are kept)")
    parser.add_argument("--force", action="store_true", help="with --all: rebuild configs already complete")
    parser.add_argument("--shard-size", default=None, metavar="SIZE",
                        help="with --layout embedded: start a new parquet shard after SIZE bytes "
                             "(e.g. 500MB; default 1GB)")
    parser.add_argument("--layout", choices=["files", "embedded"], default="files",
                        help="files (default): <config>.metadata.parquet + one copy of each image under "
                             "images/<family>/<configs using it>/, so each config downloads its own images; embedded: images inside the "
                             "parquet rows (small self-contained configs)")
    parser.add_argument("--source", action="append", type=key_value, default=[], metavar="KEY=PATH",
                        help="a source release folder, e.g. coco=/data/coco2017 (repeatable; "
                             "`mmlb list --sources` shows the keys)")
    parser.add_argument("--out", required=True, help="output dataset folder")
    parser.add_argument("--limit", type=positive_int, default=None, metavar="N",
                        help="cap the number of source questions per config (N >= 1)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--num-proc", type=int, default=1, metavar="P",
                        help="build up to P configs in parallel processes (capped at the CPUs available); "
                             "with --executor ray: each config's units of work (videos, grids, pages) "
                             "in flight as Ray tasks, about 2 x P")
    parser.add_argument("--option", action="append", type=key_value, default=[], metavar="KEY=VALUE",
                        help="recipe option, e.g. num_questions=50 (repeatable)")
    parser.add_argument("--protocol", choices=sorted(PROTOCOLS, reverse=True), default=None,
                        help="MMLongBench's prompts: v1.1 (default, the current official data.py: document-QA "
                             "pages without page ids, ViQuAE release rows with a '\"' in an image path dropped) "
                             "or v1.0 (the paper's); recorded in each manifest and the card")
    parser.add_argument("--tokenizer", default=None, metavar="PATH",
                        help="Llama-2 tokenizer.model (default: $MMLB_TOKENIZER or the HF cache)")
    parser.add_argument("--cache-dir", default=None, metavar="DIR",
                        help="image store for rendered/generated images (default: ~/.cache/mmlbdata)")
    parser.add_argument("--executor", choices=["local", "ray"], default="local",
                        help="ray: each config a Ray task on the cluster, and its videos, MMNeedle grids and PDF "
                             "pages Ray tasks too (pip install 'mmlbdata[ray]'); "
                             "sources, --out and --cache-dir must be paths every node sees")
    parser.add_argument("--ray-address", default=None, metavar="ADDRESS",
                        help="with --executor ray: the cluster (auto, ray://head:10001); default "
                             "$RAY_ADDRESS or a new local Ray")
    parser.add_argument("--no-progress", action="store_true", help="hide progress bars")
    parser.set_defaults(func=run, on_interrupt=interrupted)


def interrupted(args: argparse.Namespace) -> str:
    """What Ctrl-C leaves in --out: the asked configs that are complete there (each is written
    whole, then listed), the others, and the command that builds only those."""
    import shlex

    from mmlbdata.dataset.stats import configs_in

    out = Path(args.out)
    asked = getattr(args, "selected", None) or args.configs or []
    there = set(configs_in(out)) if out.is_dir() else set()
    done, rest = [n for n in asked if n in there], [n for n in asked if n not in there]
    lines = [f"interrupted: the config being built was dropped (no partial file is left; a previous build of it, "
             f"if any, is kept). {absolute(out)} holds {len(done)} of the {len(asked)} asked config(s) complete"
             + (f": {', '.join(done[:8])}{' ...' if len(done) > 8 else ''}" if done else "")]
    if sorted(out.glob(".mmlb-relayout-*.pending")):
        lines.append("  images were being moved between partitions: every config loads as before, and the next "
                     "build into the folder finishes the move")
    if rest:
        argv = [a for a in getattr(args, "argv", None) or [] if a not in done]
        again = "mmlb " + " ".join(shlex.quote(a) for a in argv) if argv else "the same command"
        lines.append(f"  not built: {', '.join(rest[:8])}{' ...' if len(rest) > 8 else ''}; to build them: {again}"
                     + (" (complete configs are kept)" if args.all else ""))
    return "\n".join(lines)


def _exit_on_sigterm() -> None:
    """``kill`` / ``timeout`` end a build like Ctrl-C does: the partial config and its lock go."""
    def stop(signum, frame):
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop)


def _executor(args: argparse.Namespace):
    """The build's executor: local processes, or Ray's (imported only when asked for)."""
    if args.executor != "ray":
        return run_locally
    from mmlbdata.dataset.ray_build import RayExecutor

    return RayExecutor(args.ray_address)


def run(args: argparse.Namespace) -> int:
    _exit_on_sigterm()
    if not args.all and not args.configs:
        print("error: name configs to build, or use --all (see `mmlb list`)", file=sys.stderr)
        return 2
    # the selection and every path given, then the tokenizer: checked before any download, cluster or build
    try:
        args.selected = (select_configs(benchmark=args.benchmark, families=args.family, patterns=args.configs or None)
                         if args.all else None)
    except UnknownConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if args.all and not args.selected:
        print("error: no config matches the selection (see `mmlb list`)", file=sys.stderr)
        return 2
    problem = sources_problem(args.source, None if args.fetch else args.sources_dir)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    if tokenizer_or_message(args.tokenizer, getattr(args, "argv", None)):
        return 2
    if args.fetch and fetch_first(args):
        return 2
    options = {k: parse_option_value(v) for k, v in args.option}
    if args.protocol:  # the builders read it as the `protocol` option (mmlbdata.official.protocol)
        options["protocol"] = args.protocol
    store_root = f"{args.cache_dir}/store" if args.cache_dir else None
    common = dict(seed=args.seed, limit=args.limit, options=options, store_root=store_root,
                  tokenizer=args.tokenizer, progress=not args.no_progress, num_proc=args.num_proc,
                  shard_bytes=parse_size(args.shard_size) if args.shard_size else None, layout=args.layout,
                  executor=_executor(args))
    try:
        if args.all:
            return run_all(args, common)
        results = build_configs(args.configs, sources_from_dir(args.sources_dir, dict(args.source)),
                                args.out, **common)
    except UnknownConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return max(print_summary(results, args.out), check_folder_loads(args.out))


def check_folder_loads(out: str) -> int:
    """The build's last check: every config the folder's README lists loads with the installed
    ``datasets`` (dataset/loadcheck.py), so a layout that a ``datasets`` release stops reading is
    caught here, not by the folder's users. 1 when some config does not."""
    import datasets

    from mmlbdata.dataset.loadcheck import load_problems, readme_configs

    names = readme_configs(Path(out))
    if not names:
        return 0
    problems = load_problems(out, names)
    if not problems:
        print(f"checked: the {len(names)} config(s) of {absolute(out)} load with datasets {datasets.__version__}",
              file=sys.stderr)
        return 0
    print(f"error: {len(problems)} of the {len(names)} config(s) of {absolute(out)} do not load with datasets "
          f"{datasets.__version__} (their files are complete; datasets reads the folder otherwise than "
          "mmlbdata wrote it for):", file=sys.stderr)
    for name, why in sorted(problems.items()):
        print(f"  {name}: {why}", file=sys.stderr)
    print("  install a datasets version this mmlbdata is tested with (4.0 to 5.2: pip install 'datasets>=4.0,<5.3') and "
          "report the problem", file=sys.stderr)
    return 1


def sources_problem(given: list[tuple[str, str]], sources_dir: str | None) -> str | None:
    """Before any work: every --source key is one a recipe reads (a close one proposed) and every
    path given exists (a mistyped key would otherwise be ignored without a word)."""
    known = sources_by_key()
    if sources_dir is not None and not Path(sources_dir).expanduser().is_dir():
        return f"--sources-dir {sources_dir}: no such folder: {Path(sources_dir).expanduser().absolute()}"
    for key, path in given:
        if key not in known:
            return (f"--source {key}={path}: no recipe reads a source {key!r}{did_you_mean(key, known)}; "
                    "`mmlb list --sources` shows the keys")
        if not Path(path).expanduser().exists():
            return f"--source {key}={path}: no such file or folder: {Path(path).expanduser().absolute()}"
    return None


def fetch_first(args: argparse.Namespace) -> int:
    """``--fetch``: download the selected configs' sources; ready keys become ``--source`` paths."""
    from mmlbdata.dataset.registry import families_for_configs
    from mmlbdata.sources.fetch import FetchOptions, fetch_needed

    if not args.sources_dir:
        print("error: --fetch needs --sources-dir DIR (where the sources are downloaded)", file=sys.stderr)
        return 2
    try:
        names = args.selected if args.all else args.configs
        report, paths = fetch_needed(families_for_configs(names), args.sources_dir,
                                     FetchOptions(progress=not args.no_progress))
    except UnknownConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(report.summary(), file=sys.stderr)
    args.source = [(k, str(v)) for k, v in paths.items()] + list(args.source)
    return 0


def run_all(args: argparse.Namespace, common: dict) -> int:
    started = time.perf_counter()
    sources = sources_from_dir(args.sources_dir, dict(args.source))
    results = build_all(args.selected, sources, args.out, force=args.force, **common)
    print(summary_table(results, time.perf_counter() - started))
    failed = [r for r in results if r.status == "failed"]
    for r in results:
        print_skipped(r, args.out)
    unsourced = sum(r.status == "missing sources" for r in results)
    if unsourced:  # one way forward, said once rather than per config
        print(f"note: {unsourced} config(s) not built for lack of sources: give each key a folder under "
              "--sources-dir (or --source KEY=PATH; keys and layouts: `mmlb list --sources`), or add "
              "--fetch to download them first", file=sys.stderr)
    return max(1 if failed or not any(r.ok for r in results) else 0, check_folder_loads(args.out))


def parse_size(text: str) -> int:
    """``500MB``, ``1GB``, ``1048576`` -> bytes (decimal units, as the Hub's max_shard_size)."""
    units = {"KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12, "B": 1}
    upper = text.strip().upper()
    for unit, factor in units.items():
        if upper.endswith(unit):
            return int(float(upper[: -len(unit)]) * factor)
    return int(upper)


def print_skipped(result, out: str) -> None:
    """The config's skipped records counted by reason, a few examples of each, and its notes; a
    failed config's also go to ``manifests/<config>.failed.json`` (said here)."""
    report = result.report
    reasons = report.get("by_reason", [])
    if reasons:
        print(f"{result.config}: {report.get('num_skipped', 0)} record(s) skipped, by reason:", file=sys.stderr)
        for entry in reasons:
            print(f"  {entry['count']:>6}  {entry['reason']}", file=sys.stderr)
            for example in entry["examples"][:EXAMPLES_SHOWN]:
                print(f"            e.g. {example}", file=sys.stderr)
    for note in report.get("notes", []):
        print(f"    note: {note}", file=sys.stderr)
    if result.status == "failed" and reasons:  # (a failure with nothing skipped leaves no folder behind)
        try:
            kept = f"why, and every skipped record: {absolute(write_failure_manifest(out, result))}"
        except OSError as err:  # a full disk, say
            kept = f"no failure manifest: {err}"
        print(f"{result.config} failed: {result.error}\n    ({kept})", file=sys.stderr)
    elif reasons and result.ok:
        print(f"    (every skipped record: {absolute(Path(out) / 'manifests' / (result.config + '.json'))})",
              file=sys.stderr)


def print_summary(results, out: str) -> int:
    built = [r for r in results if r.ok]
    print(f"\n{'config':<36} {'rows':>6} {'images':>7} {'tokens(mean)':>12} {'fill':>6} {'skipped':>7}")
    for r in results:
        skipped = r.report.get("num_skipped", 0)
        if r.ok:
            s = r.stats
            print(f"{r.config:<36} {s.num_rows:>6} {s.num_images:>7} {s.tokens_mean:>12.0f} "
                  f"{'-' if s.fill_ratio is None else f'{s.fill_ratio:.3f}':>6} {skipped:>7}")
        else:
            print(f"{r.config:<36} FAILED: {r.error}")
    for r in results:
        print_skipped(r, out)
    if built:
        print(f"\nload with: datasets.load_dataset({absolute(out)!r}, {built[0].config!r}, split='test')")
    failed = [r.config for r in results if not r.ok]
    if failed:
        print(f"error: {len(failed)} of {len(results)} config(s) failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0
