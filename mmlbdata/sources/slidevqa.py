"""SlideVQA in its release layout: ``annotations/qa/<split>.jsonl`` + ``images/<split>/<deck>/``.

Each QA line has ``deck_name``, ``deck_url``, ``image_urls`` (the deck's slides in page order),
``qa_id``, ``question``, ``answer`` (a string), ``arithmetic_expression`` (``"None"`` unless the
answer is computed), ``evidence_pages`` (1-based, 1..20), ``reasoning_type`` and ``answer_type``.
The release's download script saves slide ``k`` as ``images/<split>/<deck>/<basename of its
URL>`` (e.g. ``<slug>-1-1024.jpg``); that is how pages are found here, with the page number in the
file name as a fallback when a URL carries a query string. A ``deck_name`` leaving the images
folder, or a slide that is a symlink leading out, makes the deck unusable (reported).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Iterator
from urllib.parse import urlparse

from mmlbdata.core.paths import UnsafePathError, is_inside, resolve_inside
from mmlbdata.sources.docqa import DocQuestion, literal, record_problem
from mmlbdata.sources.records import BadRecord, read_jsonl

SPLITS = ("train", "dev", "test")
REQUIRED = ("deck_name", "image_urls", "qa_id", "question", "answer", "evidence_pages")
_SLIDE_NAME = re.compile(r"-(?P<page>\d+)-(?P<width>\d+)\.(?:jpe?g|png|webp)$", re.IGNORECASE)


def qa_file(root: str | Path, split: str) -> Path:
    path = Path(root) / "annotations" / "qa" / f"{split}.jsonl"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: SlideVQA QA file not found (expected "
                                f"annotations/qa/<split>.jsonl + images/<split>/<deck>/)")
    return path


def deck_pages(root: str | Path, split: str, deck_name: str, image_urls: list[str]) -> list[Path]:
    """The deck's slide images in page order; raises ValueError naming what is missing."""
    try:
        resolve_inside(Path(root) / "images" / split, deck_name, what="deck_name")
    except UnsafePathError as err:
        raise ValueError(str(err)) from None
    folder = Path(root) / "images" / split / deck_name
    if not folder.is_dir():
        raise ValueError(f"{folder}: slide images of deck {deck_name!r} not found")
    by_page = {}
    for path in sorted(folder.iterdir()):
        match = _SLIDE_NAME.search(path.name)
        if match:
            by_page[int(match["page"])] = path
    pages = []
    for number, url in enumerate(image_urls, 1):
        path = folder / Path(urlparse(url).path).name
        if not path.is_file():
            path = by_page.get(number)
        if path is None:
            raise ValueError(f"{folder}: slide {number} of deck {deck_name!r} missing "
                             f"({Path(urlparse(url).path).name})")
        if not is_inside(folder, path.name):
            raise ValueError(f"{path}: slide {number} of deck {deck_name!r} leads outside {folder}")
        pages.append(path)
    return pages


def answer_format(answer: str) -> tuple[object, str]:
    """SlideVQA answers are strings; numeric ones are typed Int / Float."""
    text = answer.strip().replace(",", "")
    ok, value = literal(text)
    if ok and isinstance(value, int) and not isinstance(value, bool):
        return value, "Int"
    if ok and isinstance(value, float):
        return value, "Float"
    return answer.strip(), "Str"


def read_questions(root: str | Path, split: str = "test") -> Iterator[DocQuestion | BadRecord]:
    """Every QA line of a split in file order; unusable lines come back as BadRecord."""
    path = qa_file(root, split)
    for line_no, record in read_jsonl(path):
        if isinstance(record, BadRecord):
            yield record
            continue
        reason = _problem(record)
        if reason:
            yield BadRecord(str(path), f"line {line_no} (qa_id {record.get('qa_id')})", reason)
        else:
            yield _question(record, split)


def _problem(record: dict) -> str:
    problem = record_problem(record, REQUIRED)
    if problem:
        return problem
    pages = record["evidence_pages"]
    if any(not 1 <= p <= len(record["image_urls"]) for p in pages):
        return f"evidence_pages {pages} outside the deck's {len(record['image_urls'])} slides"
    return ""


def _question(record: dict, split: str) -> DocQuestion:
    answer, fmt = answer_format(str(record["answer"]))
    raw = {k: v for k, v in record.items() if k != "image_urls"}
    raw["split"] = split
    return DocQuestion(
        qid=f"{split}-{record['qa_id']}", source="slidevqa", doc_id=record["deck_name"],
        question=record["question"], answer=answer, answer_format=fmt,
        answer_pages=tuple(p - 1 for p in record["evidence_pages"]),
        evidence_sources=(), raw=raw)


def read_decks(root: str | Path, split: str = "test") -> dict[str, list[str]]:
    """deck_name -> image_urls for every deck of a split (QA lines repeat them per question)."""
    decks: dict[str, list[str]] = {}
    for _, record in read_jsonl(qa_file(root, split)):
        if isinstance(record, dict) and "deck_name" in record and "image_urls" in record:
            decks.setdefault(record["deck_name"], record["image_urls"])
    return dict(sorted(decks.items()))
