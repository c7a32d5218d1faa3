"""The plain record every document-QA source reader yields, and answer parsing shared by them.

Why: MMLongBench-Doc, LongDocURL and SlideVQA store the same thing (a question on a document with
answer pages) in three layouts; the DocVQA recipe should see one shape. Page indices here are
always 0-based positions in the document's page list, whatever the release used.
"""
from __future__ import annotations

import ast
import math
from dataclasses import dataclass, field
from typing import Any

ANSWER_FORMATS = ("Str", "Int", "Float", "List", "None")
NOT_ANSWERABLE = "Not answerable"


@dataclass(frozen=True)
class DocQuestion:
    """One question on one document, normalised across releases.

    ``answer`` is typed (str, int, float or list of str); ``answer_pages`` are 0-based indices in
    the document; ``raw`` keeps the release's own fields untouched; ``flags`` names known defects.
    """

    qid: str
    source: str
    doc_id: str
    question: str
    answer: Any
    answer_format: str
    answer_pages: tuple[int, ...]
    evidence_sources: tuple[str, ...] = ()
    raw: dict = field(default_factory=dict, compare=False)
    flags: tuple[str, ...] = ()

    def answers(self) -> list[str]:
        """The gold answers column: one string; a list answer as its Python list literal.

        A list is one answer (scored item by item), not alternatives, so it stays one string in
        the same notation as ``samples.json``.
        """
        if isinstance(self.answer, list):
            return [repr([str(item) for item in self.answer])]
        return [format_scalar(self.answer)]


def format_scalar(value: Any) -> str:
    """String form of a typed answer (floats without a spurious trailing ``.0``)."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return str(int(value))
    return str(value)


def literal(text: Any) -> tuple[bool, Any]:
    """``ast.literal_eval`` that never raises: (ok, value). Never ``eval``: the data is untrusted."""
    if not isinstance(text, str):
        return True, text
    try:
        return True, ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False, None


def parse_int_list(text: Any) -> tuple[bool, list[int]]:
    """A list of page numbers from ``"[3, 5]"`` or an actual list; (ok, pages)."""
    ok, value = literal(text)
    if ok and isinstance(value, int) and not isinstance(value, bool):
        value = [value]
    if not ok or not isinstance(value, (list, tuple)):
        return False, []
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return False, []
    return True, list(value)


def parse_str_list(text: Any) -> tuple[bool, list[str]]:
    """A list of strings from ``"['Chart', 'Table']"`` or an actual list; (ok, items)."""
    ok, value = literal(text)
    if ok and isinstance(value, str):
        value = [value]
    if not ok or not isinstance(value, (list, tuple)):
        return False, []
    return True, [str(v) for v in value]


MAX_STR_ANSWER_WORDS = 5  # MMLongBench keeps only short string answers in its DocVQA configs


def long_answer_problem(answer_format: str, answer: Any) -> str:
    """Why MMLongBench would drop this answer ("" when kept): a string over five words."""
    if answer_format == "Str" and len(str(answer).split()) > MAX_STR_ANSWER_WORDS:
        return f"string answer longer than {MAX_STR_ANSWER_WORDS} words"
    return ""




def record_problem(record: dict, required) -> str:
    """Why a jsonl QA record is unusable ("" when fine): missing fields, or evidence pages that
    are not a list of page numbers."""
    missing = [key for key in required if key not in record]
    if missing:
        return f"missing fields {missing}"
    pages = record.get("evidence_pages")
    if not isinstance(pages, list) or not all(isinstance(p, int) and not isinstance(p, bool)
                                              for p in pages):
        return f"evidence_pages {pages!r} is not a list of page numbers"
    return ""
