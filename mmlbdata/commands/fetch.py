"""``mmlb fetch KEY=PATH``: download the PDFs a source release refers to but does not ship.

GovReport's GAO records and Multi-LexSum's cases come without their PDFs; the summarization
configs render those. This puts them where the builders look (``<release>/pdfs/<doc_id>.pdf``)
with the project's downloader (retries, resume, checksums, atomic placement) and prints a report
of what failed; run it again to resume. Files already present (and matching a given checksum)
are not fetched again.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from ._common import key_value

FETCHABLE = ("govreport", "multi_lexsum")


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("fetch", help="download the PDFs of a GovReport / Multi-LexSum release",
                            description=__doc__.split("\n\n", 1)[1])
    parser.add_argument("source", type=key_value, metavar="KEY=PATH",
                        help=f"the release folder, KEY one of {', '.join(FETCHABLE)}")
    parser.add_argument("--split", default="test", help="which split's documents (default test)")
    parser.add_argument("--dest", default=None, help="PDF folder (default: PATH's pdfs/ folder)")
    parser.add_argument("--url-template", default=None,
                        help="GovReport: URL with {doc_id} (default: GAO's assets URL)")
    parser.add_argument("--urls", default=None, help="JSON file doc_id -> URL overriding the defaults")
    parser.add_argument("--checksums", default=None, help="JSON file doc_id -> sha256 to verify")
    parser.add_argument("--release", action="store_true",
                        help="Multi-LexSum: first fetch the release files themselves from the Hub")
    parser.add_argument("--version", default=None, help="Multi-LexSum release version (default: newest)")
    parser.add_argument("--endpoint", default=None, help="Hub endpoint (a mirror); default huggingface.co")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--retries", type=int, default=4)
    parser.add_argument("--no-progress", action="store_true")
    parser.set_defaults(func=run)


def _json_map(path: str | None) -> dict[str, str]:
    return json.loads(Path(path).read_text()) if path else {}


def specs_for(key: str, root: Path, args: argparse.Namespace) -> list:
    urls, checksums = _json_map(args.urls), _json_map(args.checksums)
    if key == "govreport":
        from ..sources import govreport

        records = list(govreport.iter_records(root, split=args.split))
        dest = Path(args.dest or govreport.release_root(root) / "pdfs")
        kwargs = {"url_template": args.url_template} if args.url_template else {}
        return govreport.pdf_specs(records, dest, urls=urls, checksums=checksums, **kwargs)
    from ..sources import multi_lexsum

    cases = list(multi_lexsum.iter_cases(root, split=args.split, version=args.version))
    return multi_lexsum.pdf_specs(cases, Path(args.dest or root / "pdfs"), urls=urls, checksums=checksums)


def run(args: argparse.Namespace) -> int:
    from ..download import download_all

    key, root = args.source
    if key not in FETCHABLE:
        print(f"mmlb fetch: unknown source key {key!r}; one of {', '.join(FETCHABLE)}")
        return 2
    options = {"num_workers": args.workers, "progress": not args.no_progress, "retries": args.retries}
    if args.release and key == "multi_lexsum":
        from ..sources.multi_lexsum import DEFAULT_VERSION, release_specs

        report = download_all(release_specs(Path(root), args.version or DEFAULT_VERSION, endpoint=args.endpoint),
                              desc="Multi-LexSum release", **options)
        print(report.summary())
        if not report.ok:
            return 1
    report = download_all(specs_for(key, Path(root), args), desc=f"{key} PDFs", **options)
    print(report.summary())
    return 0 if report.ok else 1
