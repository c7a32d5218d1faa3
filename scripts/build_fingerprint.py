#!/usr/bin/env python
"""Fingerprint the bytes a build writes, to prove a refactor changes none of them.

Why: moving modules around (the layer-subpackage refactor) must not change a built benchmark.
tests/test_build_identity.py pins the rows' *content*; this script goes further and hashes every
file a build writes (parquet, manifests, README, images) so a before/after diff shows any byte
that moved. It builds the configs of tests/identity_sources.CASES (one or more per builder
family, from its recipe, on the real shared samples in MMLB_TEST_DATA, with the same sources
and limits as the test), then writes JSON {relative path: SHA-256 of the file's bytes}, sorted.

Paths are part of the bytes (a files-layout row names its images by absolute path, a manifest
names its sources), so compare two runs with the SAME --out (and --work):

    python scripts/build_fingerprint.py --out /tmp/x --json /tmp/before.json
    # ... refactor ...
    python scripts/build_fingerprint.py --out /tmp/x --json /tmp/after.json
    diff /tmp/before.json /tmp/after.json

The imports of project code are the few lines under "project imports" below: rewrite them when
modules move.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]  # the project, and the tests' source helpers
for _key, _value in (("HF_HUB_OFFLINE", "1"), ("HF_DATASETS_OFFLINE", "1"), ("TOKENIZERS_PARALLELISM", "false")):
    os.environ.setdefault(_key, _value)  # as tests/conftest.py: never the network

# -- project imports (rename here when modules move) ------------------------------------------
from mmlbdata.dataset.build import build_configs  # noqa: E402
import identity_sources  # noqa: E402  (tests/: the cases and the sources they read)

MARKER = ".build_fingerprint"  # only folders this script made are ever deleted by it


def fingerprint(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` (relative POSIX path) -> SHA-256 of its bytes, sorted by path."""
    digests = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        rel = path.relative_to(folder).as_posix()
        if rel != MARKER:
            digests[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return dict(sorted(digests.items()))


def fresh(folder: Path) -> None:
    """Empty ``folder`` for a clean build; refuse to delete a non-empty folder this script did not make."""
    if folder.exists():
        if any(folder.iterdir()) and not (folder / MARKER).exists():
            sys.exit(f"{folder} exists, is not empty and was not made by this script: give another path")
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    (folder / MARKER).write_text("made by scripts/build_fingerprint.py; deleted on its next run\n")


def main(argv: list[str] | None = None) -> int:
    cases = {case.config: case for case in identity_sources.CASES}
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0] + " Builds the given configs (default: all the cases of "
        "tests/identity_sources.py, as tests/test_build_identity.py builds them) into --out and prints "
        "JSON mapping every output file's relative path to the SHA-256 of its bytes. Run it before and "
        "after a refactor with the same --out and diff the two JSON files.",
        epilog="cases (config, family, limit, data):\n" + identity_sources.describe(),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("configs", nargs="*", metavar="CONFIG",
                        help="configs to build, among the cases listed below (default: all of them)")
    parser.add_argument("--out", type=Path, required=True,
                        help="output folder of the build (emptied first; use the same one before and after)")
    parser.add_argument("--work", type=Path, default=None,
                        help="folder for the laid-out sources, image store and caches "
                             "(default: OUT.work next to --out; emptied first)")
    parser.add_argument("--json", type=Path, default=None, help="also write the JSON to this file")
    parser.add_argument("--data", type=Path, default=os.environ.get("MMLB_TEST_DATA"),
                        help="the real shared samples (default: $MMLB_TEST_DATA)")
    parser.add_argument("--layout", choices=["files", "embedded"], default="files",
                        help="writer layout (default: files, as the test's recipe cases)")
    args = parser.parse_args(argv)

    unknown = [name for name in args.configs if name not in cases]
    if unknown:
        parser.error(f"not a fingerprint case: {', '.join(unknown)} (see --help for the list)")
    if args.data is None or not (args.data / "llama2" / "tokenizer.model").is_file():
        parser.error("real sample data not found: give --data or set MMLB_TEST_DATA to the shared/data folder")
    data = args.data.expanduser().resolve()
    out = args.out.expanduser().resolve()
    work = (args.work or out.with_name(out.name + ".work")).expanduser().resolve()

    fresh(out)
    fresh(work)
    sources = identity_sources.lay_out_sources(work / "sources", data)
    for name in args.configs or list(cases):
        case = cases[name]
        results = build_configs([case.config], {k: sources[k] for k in case.sources}, out, limit=case.limit,
                                options=identity_sources.case_options(case, work / "sources") or None,
                                tokenizer=data / "llama2" / "tokenizer.model", store_root=work / "store",
                                progress=False, layout=args.layout)
        failed = [r for r in results if not r.ok]
        if failed:
            sys.exit(f"{case.config}: build failed: {failed[0].error}")

    text = json.dumps(fingerprint(out), indent=1, sort_keys=True) + "\n"
    if args.json:
        args.json.write_text(text)
    print(text, end="")
    print(f"{len(json.loads(text))} files fingerprinted under {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
