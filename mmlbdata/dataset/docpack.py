"""Length control for document QA: page lists truncated or padded to a token budget.

MMLongBench's procedure for its DocVQA configs (MMLongBench-Doc, LongDocURL, SlideVQA):

* a document longer than the budget is **truncated evenly from both ends**, keeping every answer
  page (``lengths.truncate_even`` with the answer pages required);
* when the answer pages alone (with the pages between them) exceed the budget, the question is
  still built, as MMLongBench's release keeps one question set at every length: the document is
  cut to the **contiguous window that keeps the most answer pages** (ties: nearest the middle of
  the answer pages, then the first), and the dropped answer pages are recorded
  (``PageSelection.answer_pages_cut``, ``meta.answer_pages_cut``);
* a shorter one is **padded alternately on the left and on the right** with whole other documents
  (drawn in a seeded random order, never the question's own), and the pages of the last padding
  document are truncated from its end (``lengths.fill``) so that the next page would exceed the
  budget.

Every page is introduced as ``Document {doc_id:.15}: <image>`` (MMLongBench v1.1, the default) or,
under ``--protocol v1.0``, ``Document {doc_id:.15} (page {n}): <image>`` (``n`` the 0-based page
index, as the paper's ``data.py`` reads it from the page file name and its LongDocURL example
prints it); pages are joined by blank lines; the templates are ``mmlbdata.official.mmlongbench_prompts``'.
Everything here works on ``(doc_id, page_index)`` pairs and an exact ``measure`` callback, so it
knows nothing of files, renderers or benchmarks.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

from mmlbdata.core.lengths import BudgetError, fill, truncate_even
from mmlbdata.official import mmlongbench_prompts as prompts
from mmlbdata.official.protocol import get as get_protocol

DOCQA_TEMPLATE = prompts.TEMPLATES["docqa"]  # data.py load_doc_qa

Page = tuple[str, int]  # (doc_id, 0-based page index in that document)


def docqa_prompt(pages: Sequence[Page], question: str, protocol=None) -> str:
    """The full prompt: template, one introduced ``<image>`` per page (with its page index under
    MMLongBench protocol v1.0 only, ``mmlbdata.official.protocol``), the (prefixed) question."""
    context = "\n\n".join(prompts.doc_page_item(doc_id, index, protocol) for doc_id, index in pages)
    return prompts.render("docqa", context, question)


def page_measure(sizes, counter, question: str, protocol=None) -> Callable[[list[Page]], int]:
    """Exact token count of the example built from a page list.

    ``sizes`` answers ``size(doc_id, page_index) -> (w, h)`` (a ``DocCorpus``); the text of the
    whole prompt is counted each time, because tokenization is not additive across joins.
    """

    def measure(pages: list[Page]) -> int:
        text = counter.text(docqa_prompt(pages, question, protocol))
        return text + sum(counter.image(*sizes.size(doc_id, i)) for doc_id, i in pages)

    return measure


@dataclass(frozen=True)
class PageSelection:
    """The pages of one example and both numbers of the budget invariant."""

    pages: list[Page]
    num_tokens: int
    next_num_tokens: int | None
    padding_docs: list[str]  # in the order they were drawn
    truncated: bool  # True when the question's own document was cut
    answer_pages_cut: tuple[int, ...] = ()  # answer pages left out: they alone exceed the budget

    @property
    def exhausted(self) -> bool:
        return self.next_num_tokens is None


def select_pages(
    doc_id: str,
    num_pages: Mapping[str, int],
    answer_pages: Sequence[int],
    budget: int,
    measure: Callable[[list[Page]], int],
    padding_order: Sequence[str],
) -> PageSelection:
    """Pages of ``doc_id`` fitted to ``budget``: truncated evenly, or padded with other documents.

    ``num_pages`` gives every usable document's page count; ``padding_order`` is the seeded draw
    order of the other documents; ``measure`` counts a whole example built from a page list.
    When the answer pages alone do not fit, the window that keeps the most of them is taken
    (:func:`cut_answer_window`); :class:`BudgetError` only when not even one page fits.
    """
    own = [(doc_id, i) for i in range(num_pages[doc_id])]
    required = sorted({p for p in answer_pages if 0 <= p < len(own)})
    total = measure(own)
    if total > budget:
        # Without answer pages (unanswerable questions) the cut is still even: about the middle.
        anchor = required or [len(own) // 2]
        try:
            packed = truncate_even(own, budget, measure, required=anchor)
        except BudgetError:
            if not required:
                raise
            return cut_answer_window(own, required, budget, measure)
        return PageSelection(packed.items, packed.num_tokens, packed.next_num_tokens, [], True)
    return _pad(doc_id, own, total, num_pages, budget, measure, padding_order)


def cut_answer_window(own: list[Page], required: Sequence[int], budget: int,
                      measure: Callable[[list[Page]], int]) -> PageSelection:
    """The contiguous pages of one document that fit ``budget`` and keep the most answer pages.

    Used when the answer pages with those between them exceed the budget. The release keeps such
    questions at 8K with some answer page missing, and never two distant answer pages without
    the pages between them (an evaluation report that skips every row missing a target page
    skips all of them at 8K, even those whose two answer pages alone would fit), so the window
    stays contiguous. Among the widest windows (one per first page), the one with the most answer
    pages wins; ties go to the window whose middle is nearest the middle of the answer pages
    (the even cut of the paper), then to the first. It is then widened to the left while that
    fits, so neither neighbour fits: ``num_tokens <= budget < next_num_tokens``.
    """
    start, end = _best_window(_widest_windows(own, budget, measure), required)
    while start > 0 and measure(own[start - 1:end]) <= budget:
        start -= 1
    pages = own[start:end]
    neighbours = [measure(own[start - 1:end])] if start > 0 else []
    neighbours += [measure(own[start:end + 1])] if end < len(own) else []
    cut = tuple(p for p in required if not start <= p < end)
    return PageSelection(pages, measure(pages), min(neighbours), [], True, cut)


def _widest_windows(own: list[Page], budget: int, measure) -> list[tuple[int, int]]:
    """``(start, end)`` of the widest fitting window starting at each page (two pointers, so
    about two exact counts per page); BudgetError when no single page fits."""
    windows, end = [], 0
    for start in range(len(own)):
        end = max(end, start)
        while end < len(own) and measure(own[start:end + 1]) <= budget:
            end += 1
        if end > start:
            windows.append((start, end))
    if not windows:
        raise BudgetError(f"no single page of the document fits {budget} tokens")
    return windows


def _best_window(windows: list[tuple[int, int]], required: Sequence[int]) -> tuple[int, int]:
    """Most answer pages, then the middle nearest the answer pages' middle, then the first."""
    middle = required[0] + required[-1]  # twice the middle, to stay in integers

    def rank(window: tuple[int, int]) -> tuple[int, int, int]:
        start, end = window
        kept = sum(1 for p in required if start <= p < end)
        return -kept, abs(start + end - 1 - middle), start

    return min(windows, key=rank)


def _pad(doc_id, own, total, num_pages, budget, measure, padding_order) -> PageSelection:
    left: list[list[Page]] = []  # nearest the question's document first
    right: list[list[Page]] = []
    drawn: list[str] = []

    def assemble(extra: list[Page] | None = None, on_left: bool = True) -> list[Page]:
        lefts = left + ([extra] if extra is not None and on_left else [])
        rights = right + ([extra] if extra is not None and not on_left else [])
        return [p for doc in reversed(lefts) for p in doc] + own + [p for doc in rights for p in doc]

    for other in padding_order:
        if other == doc_id or not num_pages.get(other):
            continue
        on_left = len(left) <= len(right)
        pages = [(other, i) for i in range(num_pages[other])]
        whole = measure(assemble(pages, on_left))
        if whole <= budget:
            (left if on_left else right).append(pages)
            drawn.append(other)
            total = whole
            continue
        packed = fill(pages, budget, lambda sel: measure(assemble(sel, on_left)))
        if packed.items:
            (left if on_left else right).append(packed.items)
            drawn.append(other)
        return PageSelection(assemble(), packed.num_tokens, packed.next_num_tokens, drawn, False)
    return PageSelection(assemble(), total, None, drawn, False)


def answer_window_tokens(question_text: str, doc_id: str, answer_pages, corpus, counter, protocol=None) -> int:
    """Tokens of the smallest example of the question: its answer pages and those between them.

    Even truncation keeps one window of the document around the answer pages, so a length below
    this cuts answer pages (``cut_answer_window``) and ``question_set=fit8k`` drops the question
    (the window is one middle page for unanswerable questions).
    """
    total = corpus[doc_id]
    required = sorted({p for p in answer_pages if 0 <= p < total}) or [total // 2]
    pages = [(doc_id, i) for i in range(required[0], required[-1] + 1)]
    return page_measure(corpus, counter, question_text, protocol)(pages)


class AnswerPagesCut:
    """How many of a config's questions lost answer pages, counted by :func:`fit_example` where
    it decides the cut (the builder need not read it back out of the serialised meta)."""

    def __init__(self) -> None:
        self.questions = 0

    def note(self, report, config_name: str, built: int, length: int) -> None:
        """One line per config in the build report: how many questions lost answer pages."""
        if self.questions:
            report.note(f"{config_name}: {self.questions} of {built} questions have answer pages cut (their "
                        f"answer pages alone exceed {length} tokens; meta.answer_pages_cut lists them)")


def fit_example(builder, question, corpus, where, *, answers=None, extra_meta=None,
                selection_budget: int | None = None, cuts: AnswerPagesCut | None = None) -> dict | None:
    """One length-controlled example of ``question`` for ``builder``, or None (skip reported).

    By default every question is built at every length, its answer pages cut when they alone
    exceed the length (``meta.answer_pages_cut``), as MMLongBench's release keeps them. With
    ``selection_budget`` (``question_set=fit8k``: the smallest length) a question is built only
    when its answer pages fit that budget, so every length has the same, smaller, question set
    and no answer page is ever cut.

    ``builder`` supplies ``config`` (dataset, metric, name), ``length``, ``seed``, ``counter``,
    ``store``, ``report`` and ``num_proc``; ``corpus`` is the source's ``DocCorpus``; ``where``
    names the source in skip messages. Padding documents are drawn with a seed that does not
    depend on the length, so every length of a question pads from the same order. ``cuts``
    counts the built questions whose answer pages were cut.
    """
    from mmlbdata.core.schema import make_example
    from mmlbdata.core.seeding import rng
    from mmlbdata.core.store import BadImageError
    from mmlbdata.media.pdf import PdfError

    name = builder.config.name
    if not corpus.get(question.doc_id):
        reason = corpus.errors.get(question.doc_id, "document has no usable page")
        builder.report.skip(where, question.qid, f"{name}: {reason}")
        return None
    text = prompts.doc_question(question.doc_id, question.question)  # names the document it is about
    protocol = builder.option("protocol")  # MMLongBench's page items (mmlbdata.official.protocol)
    builder.manifest_extra["protocol"] = get_protocol(protocol).name
    if selection_budget is not None:
        needed = answer_window_tokens(text, question.doc_id, question.answer_pages, corpus,
                                      builder.counter, protocol)
        if needed > selection_budget:
            builder.report.skip(where, question.qid, f"{name}: answer pages need {needed} tokens, "
                                f"over the smallest length {selection_budget} (one question set "
                                f"for all lengths)")
            return None
    order = corpus.ids()
    rng(builder.seed, builder.config.dataset, question.qid, "padding").shuffle(order)
    try:
        selection = select_pages(question.doc_id, corpus, question.answer_pages, builder.length,
                                 page_measure(corpus, builder.counter, text, protocol), order)
    except BudgetError as exc:
        builder.report.skip(where, question.qid, f"{name}: the document does not fit: {exc}")
        return None
    if selection.exhausted:
        builder.report.skip(where, question.qid, f"{name}: all {len(order)} documents fill only "
                            f"{selection.num_tokens} of {builder.length} tokens")
        return None
    try:
        images = corpus.images(builder.store, selection.pages, builder.num_proc)
    except (PdfError, BadImageError) as exc:
        builder.report.skip(where, question.qid, f"{name}: {exc}")
        return None
    example = make_example(
        id=f"{builder.config.dataset}_{question.qid}", dataset=builder.config.dataset,
        length=builder.length, num_tokens=selection.num_tokens,
        prompt=docqa_prompt(selection.pages, text, protocol), images=images, question=text,
        answers=answers if answers is not None else question.answers(),
        metric=builder.config.metric, meta={**docqa_meta(question, selection), **(extra_meta or {})})
    if cuts is not None and selection.answer_pages_cut:
        cuts.questions += 1
    return example


def docqa_meta(question, selection: PageSelection) -> dict:
    """What the scorer and the tests need to know about one example."""
    extra_keys = ("doc_type", "question_type", "task_tag", "reasoning_type", "answer_type",
                  "arithmetic_expression", "split")
    return {
        "source": question.source, "source_id": question.qid, "doc_id": question.doc_id,
        "pages": [[doc_id, index] for doc_id, index in selection.pages],
        "answer_pages": list(question.answer_pages), "padding_docs": list(selection.padding_docs),
        "answer_format": question.answer_format,
        "evidence_sources": list(question.evidence_sources), "truncated": selection.truncated,
        "answer_pages_cut": list(selection.answer_pages_cut),
        "next_num_tokens": selection.next_num_tokens, "flags": list(question.flags),
        **{key: question.raw[key] for key in extra_keys if key in question.raw},
    }


__all__ = ["AnswerPagesCut", "BudgetError", "DOCQA_TEMPLATE", "Page", "PageSelection", "answer_window_tokens",
           "cut_answer_window", "docqa_prompt", "fit_example", "page_measure", "select_pages"]
