"""MMLongBench-Doc in its release layout: ``samples.json`` + ``documents/*.pdf``.

``samples.json`` is one JSON array of rows with seven string fields (``doc_id``, ``doc_type``,
``question``, ``answer``, ``evidence_pages``, ``evidence_sources``, ``answer_format``); lists and
numbers are stored as Python repr strings, parsed here with ``ast.literal_eval`` (never ``eval``).

The release has known defects (4 ``Int`` answers that are not integers, answerable questions with
no evidence page, scalars stored as ``List`` and lists stored as ``Str``). Rows are never dropped
here: each gets flags, and :func:`clean_for_docvqa` applies the MMLongBench preprocessing (correct
what can be corrected, drop what cannot) for the standardized-length configs.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Iterator

from mmlbdata.core.paths import is_inside
from mmlbdata.sources.docqa import NOT_ANSWERABLE, DocQuestion, correct_answer, literal, parse_int_list, parse_str_list
from mmlbdata.sources.records import BadRecord

SAMPLES_FILE = "samples.json"
DOCUMENTS_DIR = "documents"
FIELDS = ("doc_id", "doc_type", "question", "answer", "evidence_pages", "evidence_sources",
          "answer_format")

# Flag names (also written into the built rows' meta).
INT_NOT_INTEGER = "int_answer_not_integer"
NO_EVIDENCE_PAGES = "answerable_without_evidence_pages"
LIST_STORED_AS_STR = "list_stored_as_str"
SCALAR_STORED_AS_LIST = "scalar_stored_as_list"
BAD_EVIDENCE_PAGES = "unparsable_evidence_pages"
BAD_EVIDENCE_SOURCES = "unparsable_evidence_sources"
EVIDENCE_OUT_OF_RANGE = "evidence_page_out_of_range"
EVIDENCE_BEYOND_MAX_PAGES = "evidence_page_beyond_max_pages"
PAGE_LABELS_DIFFER = "pdf_page_labels_differ_from_numbers"


@dataclass(frozen=True)
class SampleRow:
    """One row of ``samples.json``: raw strings, parsed values, and defect flags."""

    index: int
    raw: dict
    answer: Any
    evidence_pages: tuple[int, ...]  # 1-based, as released
    evidence_sources: tuple[str, ...]
    flags: tuple[str, ...]

    @property
    def doc_id(self) -> str:
        return self.raw["doc_id"]

    @property
    def answer_format(self) -> str:
        return self.raw["answer_format"]

    @property
    def qid(self) -> str:
        return f"{self.index:04d}"


def layout(root: str | Path) -> tuple[Path, Path]:
    """(samples.json, documents/) under ``root`` or under ``root/data`` (the repo's layout)."""
    root = Path(root)
    for base in (root, root / "data"):
        if (base / SAMPLES_FILE).is_file():
            return base / SAMPLES_FILE, base / DOCUMENTS_DIR
    raise FileNotFoundError(f"{root}: no {SAMPLES_FILE} (expected MMLongBench-Doc's "
                            f"samples.json + documents/*.pdf)")


def pdf_documents(folder: Path, report) -> dict[str, Path]:
    """doc_id -> path of every ``documents/*.pdf``, sorted; a PDF that is a symlink leading out of
    the folder is reported (``report.skip``) and left out, so it is never rendered."""
    found = {}
    for path in sorted(Path(folder).glob("*.pdf")):
        if is_inside(folder, path.name):
            found[path.name] = path
        else:
            report.skip(path, path.name, f"document leads outside {folder} (a symlink out); skipped")
    return found


def parse_answer(answer: str, answer_format: str) -> tuple[Any, list[str]]:
    """Typed answer for a row and the defect flags its format implies."""
    ok, value = literal(answer)
    if answer_format == "Int":
        if ok and isinstance(value, int) and not isinstance(value, bool):
            return value, []
        return answer, [INT_NOT_INTEGER]
    if answer_format == "Float":
        if ok and isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value), []
        return answer.strip(), []  # "18.29%", "$49.99": the original scorer parses these
    if answer_format == "List":
        if ok and isinstance(value, list):
            return [str(v) for v in value], []
        return answer, [SCALAR_STORED_AS_LIST]
    if answer_format == "Str" and ok and isinstance(value, list):
        return answer, [LIST_STORED_AS_STR]
    return answer, []


def parse_row(index: int, raw: dict) -> SampleRow:
    """Parse one row; never raises on bad values, flags them instead."""
    answer, flags = parse_answer(raw["answer"], raw["answer_format"])
    ok_pages, pages = parse_int_list(raw["evidence_pages"])
    if not ok_pages:
        flags.append(BAD_EVIDENCE_PAGES)
    ok_sources, sources = parse_str_list(raw["evidence_sources"])
    if not ok_sources:
        flags.append(BAD_EVIDENCE_SOURCES)
    if ok_pages and not pages and raw["answer"] != NOT_ANSWERABLE:
        flags.append(NO_EVIDENCE_PAGES)
    return SampleRow(index, dict(raw), answer, tuple(pages), tuple(sources), tuple(flags))


def read_samples(root: str | Path) -> Iterator[SampleRow | BadRecord]:
    """Every row of ``samples.json`` in file order; malformed rows come back as BadRecord."""
    samples, _ = layout(root)
    try:
        with open(samples, encoding="utf-8") as handle:
            rows = json.load(handle)
    except json.JSONDecodeError as err:
        raise ValueError(f"{samples}: invalid JSON ({err.msg} at line {err.lineno}, column {err.colno})") from None
    except UnicodeDecodeError as err:
        raise ValueError(f"{samples}: not UTF-8 text ({err.reason} at byte {err.start})") from None
    if not isinstance(rows, list):
        raise ValueError(f"{samples}: expected a JSON array of rows")
    for index, raw in enumerate(rows):
        missing = [key for key in FIELDS if not isinstance(raw, dict) or key not in raw]
        if missing:
            yield BadRecord(str(samples), f"row {index}", f"missing fields {missing}")
            continue
        if not all(isinstance(raw[key], str) for key in FIELDS):
            yield BadRecord(str(samples), f"row {index}", "fields must be strings")
            continue
        yield parse_row(index, raw)


def page_flags(row: SampleRow, num_pages: int, max_pages: int | None = None,
               labels_differ: bool = False) -> list[str]:
    """Flags that need the PDF: evidence pages past its end or past the page limit."""
    flags = []
    if any(p < 1 or p > num_pages for p in row.evidence_pages):
        flags.append(EVIDENCE_OUT_OF_RANGE)
    if max_pages is not None and any(max_pages < p <= num_pages for p in row.evidence_pages):
        flags.append(EVIDENCE_BEYOND_MAX_PAGES)
    if labels_differ and row.evidence_pages:
        flags.append(PAGE_LABELS_DIFFER)
    return flags


def to_question(row: SampleRow, extra_flags: tuple[str, ...] = ()) -> DocQuestion:
    """The row as released (typed, flagged), pages made 0-based."""
    return DocQuestion(
        qid=row.qid, source="mmlongbench_doc", doc_id=row.doc_id, question=row.raw["question"],
        answer=row.answer, answer_format=row.answer_format,
        answer_pages=tuple(p - 1 for p in row.evidence_pages if p >= 1),
        evidence_sources=row.evidence_sources, raw=row.raw, flags=row.flags + tuple(extra_flags))


def clean_for_docvqa(row: SampleRow) -> tuple[DocQuestion | None, str]:
    """MMLongBench preprocessing of one row: (question, "") or (None, why it is dropped).

    The answer format is corrected from the value (:func:`docqa.correct_answer`: lists stored as
    ``Str``, scalars stored as ``List``, whole numbers labelled ``Float``, percentages labelled
    ``Int`` ...); rows whose format cannot be recovered, whose evidence pages do not parse, or
    whose string answer is outside the short-answer bounds are dropped.
    """
    if BAD_EVIDENCE_PAGES in row.flags:
        return None, f"evidence_pages {row.raw['evidence_pages']!r} unparsable"
    corrected = correct_answer(row.answer_format, row.raw["answer"], row.raw["question"])
    if isinstance(corrected, str):
        return None, corrected
    fmt, answer = corrected
    return replace(to_question(row), answer=answer, answer_format=fmt), ""
