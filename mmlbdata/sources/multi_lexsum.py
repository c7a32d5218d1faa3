"""Multi-LexSum (Shen et al., NeurIPS 2022): civil-rights cases, their court documents, summaries.

Original release layout (``releases/<version>/`` of allenai/multi_lexsum, e.g. ``v20230518``)::

    train.json  dev.json  test.json   JSON lines, one case each:
        {"case_id": "EE-AL-0045", "case_documents": ["EE-AL-0045-0001", ...],
         "summary/long": str, "summary/short": str | null, "summary/tiny": str | null, ...}
    sources.json                      ONE object {doc_id: {"doc_text": str, "doc_type": str,
                                      "doc_title": str, "parser": str, "url": str, ...}} (2.2 GB)

``sources.json`` is streamed (:mod:`mmlbdata.sources.jsonstream`) and only the metadata of the
documents the chosen cases need is kept (never ``doc_text``). MMLongBench renders each source
document's PDF; they live next to the release as ``pdfs/<doc_id>.pdf``, and :func:`pdf_specs`
builds their downloads from the ``url`` the release records for each document.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Mapping, Sequence

from mmlbdata.core.paths import UnsafePathError
from mmlbdata.sources.download import FileSpec, hub_spec
from mmlbdata.sources.jsonstream import iter_object_items
from mmlbdata.sources.records import BadRecord, read_jsonl

log = logging.getLogger(__name__)

HUB_REPO = "allenai/multi_lexsum"  # the release files are hosted on the Hub, under releases/<version>/
DEFAULT_VERSION = "v20230518"
RELEASE_FILES = ("train.json", "dev.json", "test.json", "sources.json")
SPLIT_FILES = {"train": "train.json", "dev": "dev.json", "validation": "dev.json", "test": "test.json"}
SkipFn = Callable[[str, str, str], None]


def _log_skip(file: str, record: str, reason: str) -> None:
    log.warning("skipped %s record %s: %s", file, record, reason)


@dataclass(frozen=True)
class SourceDoc:
    doc_id: str
    title: str = ""
    doc_type: str = ""
    url: str | None = None


@dataclass(frozen=True)
class LexSumCase:
    case_id: str
    documents: tuple[SourceDoc, ...]
    summary_short: str
    summary_long: str | None = None
    summary_tiny: str | None = None
    source_file: str = field(default="", compare=False)

    @property
    def reference(self) -> str:
        """MMLongBench's reference: the one-paragraph short summary."""
        return self.summary_short


def release_root(root: Path, version: str | None = None) -> Path:
    """The folder holding ``test.json``/``sources.json``: ``root``, or ``root/releases/<version>``."""
    root = Path(root)
    if (root / "sources.json").is_file():
        return root
    releases = root / "releases"
    if releases.is_dir():
        versions = sorted(p for p in releases.iterdir() if (p / "sources.json").is_file())
        if version:
            versions = [p for p in versions if p.name == version]
        if versions:
            return versions[-1]  # the newest release unless one is named
    raise FileNotFoundError(f"{root}: no sources.json (Multi-LexSum release layout expected)")


def _iter_split(path: Path, on_skip: SkipFn) -> Iterator[dict]:
    for line_no, case in read_jsonl(path):
        if isinstance(case, BadRecord):
            on_skip(case.file, case.record, f"bad case: {case.reason}")
        elif not isinstance(case.get("case_id"), str) or not isinstance(case.get("case_documents"), list):
            on_skip(str(path), f"line {line_no}", "bad case: missing case_id or case_documents")
        else:
            yield case


def _documents_metadata(sources: Path, wanted: set[str]) -> dict[str, SourceDoc]:
    docs = {}
    for doc_id, entry in iter_object_items(sources):
        if doc_id in wanted and isinstance(entry, dict):
            docs[doc_id] = SourceDoc(doc_id, str(entry.get("doc_title") or ""),
                                     str(entry.get("doc_type") or ""), entry.get("url"))
            if len(docs) == len(wanted):
                break
    return docs


def iter_cases(root: Path, split: str = "test", version: str | None = None,
               on_skip: SkipFn = _log_skip) -> Iterator[LexSumCase]:
    """Cases of a split, in file order, with their documents' metadata; cases without a short
    summary (the reference) or with a document missing from ``sources.json`` are skipped."""
    base = release_root(root, version)
    split_path = base / SPLIT_FILES[split]
    cases = list(_iter_split(split_path, on_skip))  # small (a few MB); sources.json is not
    wanted = {d for c in cases for d in c["case_documents"]}
    meta = _documents_metadata(base / "sources.json", wanted)
    for case in cases:
        case_id = case["case_id"]
        short = case.get("summary/short")
        if not isinstance(short, str) or not short.strip():
            on_skip(str(split_path), case_id, "no short summary (the reference)")
            continue
        unsafe = [d for d in case["case_documents"] if not _plain_doc_id(d)]
        if unsafe:  # the id names a file (pdfs/<doc_id>.pdf): never one outside that folder
            on_skip(str(split_path), case_id, f"document ids that are not plain file names: {unsafe}")
            continue
        missing = [d for d in case["case_documents"] if d not in meta]
        if missing or not case["case_documents"]:
            on_skip(str(split_path), case_id, f"documents missing from sources.json: {missing or 'none listed'}")
            continue
        yield LexSumCase(case_id, tuple(meta[d] for d in case["case_documents"]), short.strip(),
                         case.get("summary/long"), case.get("summary/tiny"), str(split_path))


def _plain_doc_id(doc_id: object) -> bool:
    return isinstance(doc_id, str) and bool(doc_id) and not any(c in doc_id for c in "/\\\0")


def pdf_path(pdf_dir: Path, doc: SourceDoc) -> Path:
    """``pdf_dir/<doc_id>.pdf``; an id naming another folder raises UnsafePathError (the
    reader skips such cases first; a PDF the user symlinked into ``pdf_dir`` is theirs to choose)."""
    if not _plain_doc_id(doc.doc_id):
        raise UnsafePathError(f"Multi-LexSum document id {doc.doc_id!r} is not a plain file name (in {pdf_dir})")
    return Path(pdf_dir) / f"{doc.doc_id}.pdf"


def pdf_specs(cases, dest_dir: Path, urls: Mapping[str, str] | None = None,
              checksums: Mapping[str, str] | None = None) -> list[FileSpec]:
    """Downloads for every source document of ``cases`` (``urls`` overrides the release's url);
    a document without any URL is left out and logged."""
    specs, seen = [], set()
    for case in cases:
        for doc in case.documents:
            if doc.doc_id in seen:
                continue
            seen.add(doc.doc_id)
            url = (urls or {}).get(doc.doc_id) or doc.url
            if not url:
                log.warning("no URL for Multi-LexSum document %s (case %s)", doc.doc_id, case.case_id)
                continue
            specs.append(FileSpec(url, pdf_path(dest_dir, doc), sha256=(checksums or {}).get(doc.doc_id)))
    return specs


def release_specs(dest_root: Path, version: str = DEFAULT_VERSION, files: Sequence[str] = RELEASE_FILES,
                  revision: str | None = None, endpoint: str | None = None) -> list[FileSpec]:
    """Downloads of the release files from the Hub into ``dest_root/releases/<version>/``
    (``sources.json`` is 2.2 GB: the downloader resumes it after an interruption)."""
    return [hub_spec(HUB_REPO, f"releases/{version}/{name}", Path(dest_root) / "releases" / version / name,
                     revision=revision, endpoint=endpoint) for name in files]
