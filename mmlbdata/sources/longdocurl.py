"""LongDocURL in its release layout: ``LongDocURL.jsonl`` + ``pdf_pngs/<range>/<prefix>/<doc>_<page>.png``.

Each jsonl line is one question with typed fields (``answer`` is already an int, float, string or
list), ``evidence_pages`` are 1-based page numbers, and the page images are named with the 0-based
page index (page 54 is ``<doc>_53.png``), grouped by thousands (``4000-4999``) and by the first four
digits of the document number. The ``images`` / ``pdf_path`` fields hold the authors' machine paths
and are not used to find files; a page image that is a symlink leading out of the root makes its
document unusable (reported).

The Hugging Face release also ships the PDFs (``pdf_path`` names ``ccpdf_zip/<range>/<doc>.pdf``);
where they are unpacked there, MMLongBench's 144-DPI screenshots are rendered from them
(:func:`pdf_file`). The page PNGs are PyMuPDF's default 72-DPI renders (a letter page is
612x792, :data:`PNG_DPI`), so without the PDFs they are scaled by 144/72 instead.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from mmlbdata.core.paths import is_inside
from mmlbdata.sources.docqa import SHORT_FORMAT, DocQuestion, record_problem
from mmlbdata.sources.records import BadRecord, read_jsonl

QA_FILE = "LongDocURL.jsonl"
PAGES_DIR = "pdf_pngs"
PDFS_DIR = "ccpdf_zip"
PNG_DPI = 72  # the release's page PNGs: one pixel per PDF point (letter page 612x792)
REQUIRED = ("question_id", "doc_no", "total_pages", "question", "answer", "evidence_pages",
            "answer_format")
_PAGE_NAME = re.compile(r"^(?P<doc>\d+)_(?P<page>\d+)\.png$")


def qa_file(root: str | Path) -> Path:
    root = Path(root)
    for candidate in (root / QA_FILE, root / "data" / QA_FILE):
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(f"{root}: no {QA_FILE} (expected LongDocURL's jsonl + {PAGES_DIR}/)")


def doc_dir(root: str | Path, doc_no: str) -> Path:
    """``pdf_pngs/4000-4999/4055`` for document ``4055915``."""
    prefix = doc_no[:4]
    low = int(prefix) // 1000 * 1000
    return Path(root) / PAGES_DIR / f"{low}-{low + 999}" / prefix


def pdf_file(root: str | Path, doc_no: str) -> Path | None:
    """``ccpdf_zip/4000-4999/4055915.pdf`` (also under ``data/``) when the release's PDF is there."""
    low = int(doc_no[:4]) // 1000 * 1000
    for base in (Path(root), Path(root) / "data"):
        candidate = base / PDFS_DIR / f"{low}-{low + 999}" / f"{doc_no}.pdf"
        if candidate.is_file():
            if not is_inside(root, candidate.relative_to(root)):  # doc_no comes from the data
                raise ValueError(f"{candidate}: PDF of document {doc_no!r} leads outside {root}")
            return candidate
    return None


def page_images(root: str | Path, doc_no: str) -> list[Path]:
    """The document's page images in page order; raises ValueError when pages are missing."""
    folder = doc_dir(root, doc_no)
    if not folder.is_dir():
        raise ValueError(f"{folder}: page image folder of document {doc_no} not found")
    pages: dict[int, Path] = {}
    for path in sorted(folder.iterdir()):
        match = _PAGE_NAME.match(path.name)
        if match and match["doc"] == doc_no:
            if not is_inside(root, path.relative_to(root)):
                raise ValueError(f"{path}: page image of document {doc_no} leads outside {root}")
            pages[int(match["page"])] = path
    if not pages:
        raise ValueError(f"{folder}: no page images {doc_no}_<page>.png")
    missing = sorted(set(range(max(pages) + 1)) - set(pages))
    if missing:
        raise ValueError(f"{folder}: document {doc_no} lacks page images {missing[:10]}")
    return [pages[i] for i in range(len(pages))]


@dataclass(frozen=True)
class _Fields:
    """Checked subset of one jsonl record."""

    doc_no: str
    total_pages: int
    evidence_pages: tuple[int, ...]
    answer_format: str


def _check(record: dict) -> _Fields | str:
    problem = record_problem(record, REQUIRED)
    if problem:
        return problem
    pages = record["evidence_pages"]
    fmt = SHORT_FORMAT.get(str(record["answer_format"]))
    if fmt is None:
        return f"unknown answer_format {record['answer_format']!r}"
    if not isinstance(record["total_pages"], int) or record["total_pages"] < 1:
        return f"bad total_pages {record['total_pages']!r}"
    return _Fields(str(record["doc_no"]), record["total_pages"], tuple(pages), fmt)


def read_questions(root: str | Path) -> Iterator[DocQuestion | BadRecord]:
    """Every question of the jsonl in file order; unusable lines come back as BadRecord."""
    path = qa_file(root)
    for line_no, record in read_jsonl(path):
        if isinstance(record, BadRecord):
            yield record
            continue
        fields = _check(record)
        if isinstance(fields, str):
            yield BadRecord(str(path), f"line {line_no} ({record.get('question_id')})", fields)
        else:
            yield _question(record, fields)


def _question(record: dict, fields: _Fields) -> DocQuestion:
    answer = record["answer"]
    if isinstance(answer, list):
        answer = [str(item) for item in answer]
    raw = {k: v for k, v in record.items() if k not in ("images", "pdf_path")}
    bad = [p for p in fields.evidence_pages if not 1 <= p <= fields.total_pages]
    return DocQuestion(
        qid=str(record["question_id"]), source="longdocurl", doc_id=fields.doc_no,
        question=record["question"], answer=answer, answer_format=fields.answer_format,
        answer_pages=tuple(p - 1 for p in fields.evidence_pages if p >= 1),
        evidence_sources=tuple(str(s) for s in record.get("evidence_sources") or ()),
        raw=raw, flags=("evidence_page_out_of_range",) if bad else ())


def window(question: DocQuestion) -> range | None:
    """0-based page range the release showed with the question (``start_end_idx``, 1-based)."""
    span = question.raw.get("start_end_idx")
    if not (isinstance(span, list) and len(span) == 2):
        return None
    return range(span[0] - 1, span[1])
