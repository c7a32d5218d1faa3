"""``mmlb fetch``: download source releases from their official places, and the PDFs they refer to.

Two forms:

``mmlb fetch KEY... --dest DIR`` / ``mmlb fetch --benchmark NAME --dest DIR`` / ``--config NAME``
    every part a source key (or a benchmark's / a config's families) needs, from the registry
    ``mmlbdata/sources/registry.yaml`` (Hub repos at a pinned revision with only the needed files,
    official archive URLs with sizes and checksums): DIR/KEY gets the layout the reader expects, so
    ``mmlb build --sources-dir DIR`` finds it. ``KEY:PART`` names one part (``coco:train2017``).
    ``--list`` shows each key's origin, size and licence; ``--dry-run`` prints the plan. Gated or
    very large sources say what to do (accept terms and log in; ``--allow-large``). Finished parts are
    kept on a rerun; interrupted downloads resume. Exit 1 when a part failed.

``mmlb fetch KEY=PATH`` (govreport, multi_lexsum)
    the PDFs an existing GovReport / Multi-LexSum release refers to but does not ship, into
    ``PATH/.../pdfs/`` (``--release``: first the Multi-LexSum release files from the Hub).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from mmlbdata.cli._common import absolute, key_value

FETCHABLE = ("govreport", "multi_lexsum")


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("fetch", help="download source releases (registry) or a release's PDFs",
                            description=__doc__.split("\n\n", 1)[1],
                            formatter_class=argparse.RawDescriptionHelpFormatter,
                            epilog="examples: mmlb fetch --benchmark mmneedle --dest /data/sources\n"
                                   "          mmlb fetch coco vhs coco:train2017 --dest /data/sources --dry-run\n"
                                   "          mmlb fetch govreport=/data/sources/govreport")
    parser.add_argument("targets", nargs="*", metavar="KEY[:PART] | KEY=PATH",
                        help="source keys (see --list), or one KEY=PATH for a release's PDFs")
    parser.add_argument("--dest", default=None,
                        help="sources folder, one sub-folder per key (with KEY=PATH: the PDF folder, "
                             "default PATH's pdfs/)")
    parser.add_argument("--benchmark", default=None,
                        help="every source of a benchmark: mmlongbench, mmneedle, mmlongbench_doc, readbench, "
                             "lvb (= longvideobench)")
    parser.add_argument("--config", action="append", default=[], metavar="NAME",
                        help="only what this config needs (repeatable)")
    parser.add_argument("--list", action="store_true", help="each source key's origin, size and licence")
    parser.add_argument("--dry-run", action="store_true", help="print the plan; download nothing")
    parser.add_argument("--allow-large", action="store_true",
                        help="also fetch sources marked large (KILT 35 GB, iNat 51 GB, LongVideoBench videos)")
    parser.add_argument("--token", default=None, help="Hub token (default: HF_TOKEN or `hf auth login`)")
    parser.add_argument("--mirror", default=None, metavar="URL",
                        help="fetch URL files from URL/<host>/<path> (a local mirror of the official hosts)")
    parser.add_argument("--delete-archives", action="store_true",
                        help="remove downloaded archives once extracted (a rerun then keeps the placed files)")
    parser.add_argument("--split", default="test", help="KEY=PATH: which split's documents (default test)")
    parser.add_argument("--url-template", default=None,
                        help="KEY=PATH, GovReport: URL with {doc_id} (default: GAO's assets URL)")
    parser.add_argument("--urls", default=None, help="KEY=PATH: JSON file doc_id -> URL overriding the defaults")
    parser.add_argument("--checksums", default=None, help="KEY=PATH: JSON file doc_id -> sha256 to verify")
    parser.add_argument("--release", action="store_true",
                        help="KEY=PATH, Multi-LexSum: first fetch the release files themselves from the Hub")
    parser.add_argument("--version", default=None, help="Multi-LexSum release version (default: newest)")
    parser.add_argument("--endpoint", default=None,
                        help="Hub endpoint (a mirror); default $HF_ENDPOINT, else huggingface.co")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--retries", type=int, default=4)
    parser.add_argument("--no-progress", action="store_true")
    parser.set_defaults(func=run)


def _json_map(path: str | None) -> dict[str, str]:
    return json.loads(Path(path).read_text()) if path else {}


def specs_for(key: str, root: Path, args: argparse.Namespace) -> list:
    from mmlbdata.sources.fetch import release_pdf_specs

    return release_pdf_specs(key, root, split=args.split, dest=args.dest, urls=_json_map(args.urls),
                             checksums=_json_map(args.checksums), url_template=args.url_template,
                             version=args.version)


def run(args: argparse.Namespace) -> int:
    legacy = [t for t in args.targets if "=" in t]
    if legacy:
        if len(args.targets) != 1:
            print("error: KEY=PATH (a release's PDFs) is given alone", file=sys.stderr)
            return 2
        args.source = key_value(legacy[0])
        return run_pdfs(args)
    return run_registry(args)


def run_pdfs(args: argparse.Namespace) -> int:
    """``mmlb fetch KEY=PATH``: the PDFs of a GovReport / Multi-LexSum release."""
    from mmlbdata.sources.download import download_all

    key, root = args.source
    if key not in FETCHABLE:
        print(f"error: KEY=PATH fetches the PDFs of {' or '.join(FETCHABLE)}, not {key!r}", file=sys.stderr)
        return 2
    options = {"num_workers": args.workers, "progress": not args.no_progress, "retries": args.retries}
    if args.release and key == "multi_lexsum":
        from mmlbdata.sources.multi_lexsum import DEFAULT_VERSION, release_specs

        report = download_all(release_specs(Path(root), args.version or DEFAULT_VERSION, endpoint=args.endpoint),
                              desc="Multi-LexSum release", **options)
        print(report.summary())
        if not report.ok:
            return 1
    try:
        specs = specs_for(key, Path(root), args)
    except (FileNotFoundError, ValueError) as err:  # a missing or malformed release: one line, no traceback
        print(f"error: {err}", file=sys.stderr)
        return 1
    report = download_all(specs, desc=f"{key} PDFs", **options)
    print(report.summary())
    return 0 if report.ok else 1


def fetch_options(args: argparse.Namespace):
    from mmlbdata.sources.fetch import FetchOptions

    return FetchOptions(token=args.token, endpoint=args.endpoint,  # unset: fetch() reads the environment
                        mirror=args.mirror, allow_large=args.allow_large, delete_archives=args.delete_archives,
                        progress=not args.no_progress, retries=args.retries, workers=args.workers)


def selected_parts(registry, args: argparse.Namespace) -> list:
    """The parts named by keys, --benchmark and --config (KeyError for an unknown name)."""
    from mmlbdata.dataset.build import benchmark_configs
    from mmlbdata.dataset.registry import families_for_configs
    from mmlbdata.sources.fetch import select_parts

    configs = list(args.config)
    if args.benchmark:
        configs += benchmark_configs(args.benchmark)
    return select_parts(registry, args.targets, families_for_configs(configs) if configs else None)


def run_registry(args: argparse.Namespace) -> int:
    from mmlbdata.dataset.registry import UnknownConfigError
    from mmlbdata.sources.fetch import describe_plan, describe_registry, fetch, load_registry

    registry = load_registry()
    if args.list:
        print(describe_registry(registry))
        return 0
    if not (args.targets or args.benchmark or args.config):
        print("error: name source keys, --benchmark or --config (see `mmlb fetch --list`)", file=sys.stderr)
        return 2
    if not args.dest:
        print("error: --dest DIR is required (the sources folder, one sub-folder per key)", file=sys.stderr)
        return 2
    try:
        parts = selected_parts(registry, args)
    except (KeyError, UnknownConfigError) as err:
        print(f"error: {err.args[0] if err.args else err}", file=sys.stderr)
        return 2
    options = fetch_options(args)
    dest = absolute(args.dest)  # the plan and the `build with:` line are pasted from anywhere
    if args.dry_run:
        print(describe_plan(registry, parts, dest, options))
        return 0
    report = fetch(registry, parts, dest, options)
    print(report.summary())
    print(f"build with: mmlb build CONFIG... --sources-dir {dest}")
    return 0 if report.ok else 1
