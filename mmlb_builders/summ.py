"""Summarization over rendered PDF pages: GovReport (GAO) and Multi-LexSum, as in MMLongBench.

Procedure (MMLongBench, "Summarization" category):

* **gov_report** - GAO reports of GovReport's test split. The reference is GAO's structured
  summary ("Why GAO Did This Study" / "What GAO Found" / "What GAO Recommends"), joined as
  MMLongBench joins it. The report PDF's front *Highlights* page(s) print that summary, so they
  are found with PyMuPDF text search and removed. The remaining pages are truncated from the end
  to fit the length.
* **multi_lexsum** - every source document of a case, each rendered as PDF pages; the
  reference is the short (one-paragraph) summary. Documents are truncated *evenly from their
  ends*: every document keeps its first ``k`` pages (``k`` as large as fits), and the budget left
  is filled with page ``k + 1`` of the documents in order.
* Examples whose full document(s) exceed 128K tokens by more than 24K are dropped, at every
  length, so the five lengths share one set of examples. A document that fits a length whole is
  kept whole (``meta.next_num_tokens`` is then null); ``skip_short=True`` drops those instead.
* Every page is introduced as ``Document {doc_id:.15} (page {n}): <image>`` (``n`` its 0-based
  page index in the PDF, as the paper's GovReport example prints ``(page 0)``), pages joined by
  blank lines; templates are MMLongBench's (``mmlbdata.official.mmlongbench_prompts``, the same ones its release reader
  uses), whose ``data.py`` also appends ``Summary:`` as the answer prefix (kept in
  ``meta.answer_prefix``, not in the prompt, like the other families' ``Answer:``).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Sequence

from mmlbdata.core.lengths import LENGTHS, Packed, fill, truncate_end
from mmlbdata.core.schema import make_example
from mmlbdata.media import pdf
from mmlbdata.official import mmlongbench_prompts as prompts
from mmlbdata.sources import govreport, multi_lexsum

from .base import MMLONGBENCH_LENGTH_KEYS, MMLBBuilder, standard_configs

GOV_REPORT_TEMPLATE = prompts.TEMPLATES["gov"]  # data.py load_gov_report, via mmlbdata.official.mmlongbench_prompts
MULTI_LEXSUM_TEMPLATE = prompts.TEMPLATES["lexsum"]  # data.py load_multi_lexsum
ANSWER_PREFIX = prompts.answer_prefix("gov")
METRIC = "summ_judge"
# "Drop examples whose full documents exceed 128K by more than 24K tokens."
MAX_OVERFLOW_TOKENS = 24 * 1024

GOV_LAYOUT = ("GovReport release: gov-report/{gao,split_ids}/ (gao/GAO_GAO-12-604.json, "
              "split_ids/gao_test.ids) + gov-report/pdfs/<gao-12-604>.pdf (see `mmlbdata.sources.govreport`)")
LEXSUM_LAYOUT = ("Multi-LexSum release: releases/<version>/{test.json,sources.json} + "
                 "pdfs/<doc_id>.pdf (see `mmlbdata.sources.multi_lexsum`)")


@dataclass(frozen=True)
class Page:
    """One PDF page as a unit of the packers: which document, which page, its rendered size."""

    doc_id: str
    index: int  # 0-based in the PDF
    width: int
    height: int
    path: Path

    @property
    def intro(self) -> str:
        return prompts.page_item(self.doc_id, self.index)


def build_prompt(template: str, pages: Sequence[Page]) -> str:
    return template.format(context="\n\n".join(p.intro for p in pages))


def pdf_pages(doc_id: str, path: Path, dpi: int, skip: Sequence[int] = (),
              max_pages: int | None = None) -> list[Page]:
    """The first ``max_pages`` pages (all when None) of a PDF except ``skip``, sized at ``dpi``
    without rendering (PdfError if the file or a page is broken)."""
    dropped = set(skip)
    sizes = pdf.page_pixel_sizes(path, dpi, max_pages)
    return [Page(doc_id, i, width, height, path) for i, (width, height) in enumerate(sizes) if i not in dropped]


def even_end_order(documents: Sequence[Sequence[Page]]) -> list[Page]:
    """Pages in the order even end-truncation gives them up last-to-first.

    Round ``r`` holds page ``r`` of every document that has one, documents in order; any prefix
    of this order is "each document keeps its first k pages, and the first few documents k + 1".
    """
    order, depth = [], max((len(d) for d in documents), default=0)
    for r in range(depth):
        order.extend(d[r] for d in documents if r < len(d))
    return order


def document_order(selection: Sequence[Page], documents: Sequence[Sequence[Page]]) -> list[Page]:
    """A selection of pages put back in reading order: document by document, page by page."""
    rank = {d[0].path: j for j, d in enumerate(documents) if d}
    return sorted(selection, key=lambda p: (rank[p.path], p.index))


class Summarization(MMLBBuilder):
    """gov_report_* and multi_lexsum_*: summarize rendered PDF pages at the five lengths."""

    DESCRIPTION = ("Summarization of long PDF documents given as page images: GAO reports (GovReport) "
                   "and civil-rights case documents (Multi-LexSum), as in MMLongBench.")
    HOMEPAGE = "https://github.com/EdinburghNLP/MMLongBench"
    LICENSE = "GovReport: GAO reports are US public domain; Multi-LexSum: ODC-By (summaries CC BY-NC)"
    CITATION = ("@article{wang2025mmlongbench, title={MMLongBench: Benchmarking Long-Context "
                "Vision-Language Models Effectively and Thoroughly}, author={Wang, Zhaowei and others}, "
                "year={2025}, journal={arXiv preprint arXiv:2505.10610}}")
    LIMIT_COUNTS_ROWS = True  # --limit caps the rows built (the progress bar's total)
    SOURCES = {"govreport": GOV_LAYOUT, "multi_lexsum": LEXSUM_LAYOUT}
    BUILDER_CONFIGS = (
        standard_configs("gov_report", lengths=MMLONGBENCH_LENGTH_KEYS, metric=METRIC, sources=("govreport",), split="test",
                         description="GovReport GAO reports, highlights pages removed")
        + standard_configs("multi_lexsum", lengths=MMLONGBENCH_LENGTH_KEYS, metric=METRIC, sources=("multi_lexsum",), split="test",
                           description="Multi-LexSum cases, short summary")
    )

    # -- shared ------------------------------------------------------------------------------
    @property
    def dpi(self) -> int:
        return int(self.option("dpi", pdf.DEFAULT_DPI))

    @property
    def max_pages(self) -> int | None:
        """Only the first ``max_pages`` pages of each PDF are used (option; default all)."""
        value = self.option("max_pages")
        return None if value in (None, "", 0) else int(value)

    def measure_fn(self, template: str, order: Callable[[list[Page]], list[Page]] = list):
        def measure(selection: list[Page]) -> int:
            pages = order(selection)
            return self.counter.example(build_prompt(template, pages), [(p.width, p.height) for p in pages])
        return measure

    def estimate(self, page: Page) -> int:
        return self.counter.image(page.width, page.height) + 16  # + its introduction, roughly

    def too_long(self, file, record: str, full_tokens: int) -> bool:
        """The 128K + 24K rule (the same verdict at every length up to 128K); reported when it drops.
        The extended lengths (256K, 512K) lift the cap to their own length + 24K, so the longer
        documents they need are not dropped."""
        cap = max(LENGTHS["128k"], self.length or 0)
        limit = cap + int(self.option("max_overflow_tokens", MAX_OVERFLOW_TOKENS))
        if full_tokens > limit:
            self.report.skip(file, record, f"full document(s) take {full_tokens} tokens, more than "
                                           f"{cap // 1024}K + {limit - cap} = {limit}")
            return True
        return False

    def keep_packed(self, file, record: str, packed: Packed) -> bool:
        if not packed.items:
            self.report.skip(file, record, f"{self.config.name}: not even one page fits {self.length} tokens")
            return False
        if packed.exhausted and self.option("skip_short", False):
            self.report.skip(file, record, f"{self.config.name}: the whole document takes only "
                                           f"{packed.num_tokens} of {self.length} tokens (skip_short)")
            return False
        if packed.exhausted and self.length > LENGTHS["128k"]:  # the extended lengths: say it per question
            self.report.note(f"{self.config.name}: {record}: the source ran out of pages: the whole document "
                             f"takes only {packed.num_tokens} of {self.length} tokens (row kept)")
        return True

    def render(self, pages: Sequence[Page]) -> list:
        """ImageRefs of ``pages`` in order, rendered once per (file, page, dpi) via the store."""
        return pdf.render_page_refs(self.store, [(p.path, p.index) for p in pages], self.dpi, self.num_proc)

    def emit(self, *, example_id: str, template: str, pages: list[Page], packed: Packed,
             reference: str, meta: dict) -> dict:
        return make_example(
            id=example_id, dataset=self.config.dataset, length=self.length, num_tokens=packed.num_tokens,
            prompt=build_prompt(template, pages), images=self.render(pages), question="",
            answers=[reference], metric=self.config.metric,
            meta={"pages": [[p.doc_id, p.index] for p in pages], "next_num_tokens": packed.next_num_tokens,
                  "answer_prefix": ANSWER_PREFIX, "dpi": self.dpi, **meta},
        )

    def generate(self) -> Iterator[dict]:
        rows = self.gov_report_rows() if self.config.dataset == "gov_report" else self.multi_lexsum_rows()
        for count, row in enumerate(rows, 1):
            yield row
            if self.limit is not None and count >= self.limit:
                return

    # -- GovReport ---------------------------------------------------------------------------
    def gov_pages(self, record: govreport.GaoRecord, path: Path) -> tuple[list[Page], list[int], int]:
        """Kept pages, removed highlights page indices, total page count of one GAO PDF."""
        with pdf.open_pdf(path) as doc:
            highlights = govreport.find_highlights_pages(doc, int(self.option("highlights_front_pages", 8)),
                                                         summary=record.summary_paragraphs)
            total = doc.page_count
        pages = pdf_pages(record.doc_id, path, self.dpi, skip=highlights, max_pages=self.max_pages)
        return pages, highlights, total

    def gov_report_rows(self) -> Iterator[dict]:
        root = self.source("govreport")
        pdf_dir = Path(self.option("pdf_dir") or govreport.release_root(root) / "pdfs")
        measure = self.measure_fn(GOV_REPORT_TEMPLATE)
        for record in govreport.iter_records(root, split=self.option("split", "test"), on_skip=self.report.skip):
            path = govreport.pdf_path(root, record, pdf_dir)
            if not path.is_file():
                self.report.skip(path, record.id, "report PDF not found (fetch it with "
                                                  "mmlbdata.sources.govreport.pdf_specs + download_all)")
                continue
            try:
                pages, highlights, total = self.gov_pages(record, path)
            except pdf.PdfError as err:
                self.report.skip(path, record.id, str(err))
                continue
            if not highlights and self.option("require_highlights", False):
                self.report.skip(path, record.id, "no GAO highlights page found (require_highlights)")
                continue
            if not pages:
                self.report.skip(path, record.id, f"every page ({total}) is a highlights page: no report body")
                continue
            full = measure(pages)
            if self.too_long(path, record.id, full):
                continue
            packed = truncate_end(pages, self.length, measure, estimate=self.estimate)
            if not self.keep_packed(path, record.id, packed):
                continue
            try:
                yield self.emit(
                    example_id=f"gov_report_{record.doc_id}", template=GOV_REPORT_TEMPLATE,
                    pages=packed.items, packed=packed, reference=record.reference,
                    meta={"doc_id": record.doc_id, "record_id": record.id, "title": record.title,
                          "highlights_pages": highlights, "num_pdf_pages": total,
                          "full_num_tokens": full, "summary_sections": record.section_titles})
            except pdf.PdfError as err:
                self.report.skip(path, record.id, str(err))

    # -- Multi-LexSum ------------------------------------------------------------------------
    def multi_lexsum_rows(self) -> Iterator[dict]:
        root = self.source("multi_lexsum")
        pdf_dir = Path(self.option("pdf_dir") or Path(root) / "pdfs")
        cases = multi_lexsum.iter_cases(root, split=self.option("split", "test"),
                                        version=self.option("version"), on_skip=self.report.skip)
        for case in cases:
            documents = self.case_documents(case, pdf_dir)
            if documents is None:
                continue
            order = self.even_order_fn(documents)
            measure = self.measure_fn(MULTI_LEXSUM_TEMPLATE, order)
            units = even_end_order(documents)
            full = measure(units)
            if self.too_long(case.source_file, case.case_id, full):
                continue
            packed = fill(units, self.length, measure, estimate=self.estimate)
            if not self.keep_packed(case.source_file, case.case_id, packed):
                continue
            pages = order(packed.items)
            kept = {d.doc_id: 0 for d in case.documents}
            for p in pages:
                kept[p.doc_id] += 1
            docs_meta = [{"doc_id": d.doc_id, "title": d.title, "doc_type": d.doc_type,
                          "pages_available": len(pages_of), "pages_kept": kept[d.doc_id]}
                         for d, pages_of in zip(case.documents, documents)]
            try:
                yield self.emit(
                    example_id=f"multi_lexsum_{case.case_id}", template=MULTI_LEXSUM_TEMPLATE,
                    pages=pages, packed=packed, reference=case.reference,
                    meta={"case_id": case.case_id, "documents": docs_meta, "full_num_tokens": full})
            except pdf.PdfError as err:
                self.report.skip(err.path, case.case_id, str(err))

    @staticmethod
    def even_order_fn(documents: list[list[Page]]) -> Callable[[list[Page]], list[Page]]:
        return lambda selection: document_order(selection, documents)

    def case_documents(self, case: multi_lexsum.LexSumCase, pdf_dir: Path) -> list[list[Page]] | None:
        """Pages of every document of a case; None (reported) if any PDF is missing or broken."""
        documents = []
        for doc in case.documents:
            path = multi_lexsum.pdf_path(pdf_dir, doc)
            if not path.is_file():
                self.report.skip(path, case.case_id, f"source document {doc.doc_id} PDF not found "
                                                     "(fetch it with multi_lexsum.pdf_specs + download_all)")
                return None
            try:
                documents.append(pdf_pages(doc.doc_id, path, self.dpi, max_pages=self.max_pages))
            except pdf.PdfError as err:
                self.report.skip(path, case.case_id, str(err))
                return None
        return documents
