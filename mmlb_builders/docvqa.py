"""MMLongBench's long-document VQA configs: ``mmlongdoc_*``, ``longdocurl_*``, ``slidevqa_*``.

Procedure (MMLongBench, Wang et al. 2025, DocVQA category):

* questions from MMLongBench-Doc (``samples.json``) and LongDocURL (jsonl) with answer formats
  corrected from their values, unrecoverable formats and string answers (or list items) outside
  the released files' bounds dropped (``sources.docqa.correct_answer``), and SlideVQA (QA jsonl);
* ONE set of questions for all five lengths, as the release keeps them (965 MMLongBench-Doc
  questions in every ``mmlongdoc_K*`` file): a question whose answer pages alone exceed a length
  is cut there to the contiguous window keeping the most answer pages, and its dropped answer
  pages are listed in ``meta.answer_pages_cut`` (counted per config in the build report);
  ``--option question_set=fit8k`` keeps instead only the questions whose answer pages fit 8K, so
  no answer page is ever cut (a smaller set, the same at every length);
* the question's document is fitted to the length: truncated evenly from both ends keeping every
  answer page, or padded alternately left and right with other documents of the same source
  (seeded draw per question, the same at every length), the last padding document cut page by
  page (``mmlbdata.dataset.docpack``);
* each page is ``Document {doc_id:.15}: <image>`` (MMLongBench v1.1, the default) or, with
  ``--protocol v1.0``, ``Document {doc_id:.15} (page {n}): <image>`` (0-based page index); the question is
  prefixed ``Based on Document {doc_id:.15}, answer the following question.``, in the benchmark's
  template (``mmlbdata.official.mmlongbench_prompts``: the official ``data.py`` text, shared with the release reader).

PDF pages are rendered at 144 DPI once per (document, page) through the image store. LongDocURL
pages come from the release's PDFs at 144 DPI where ``ccpdf_zip/`` is unpacked, else its 72-DPI
page PNGs are upscaled to the 144-DPI page size (``--option page_dpi=`` the PNGs' DPI; 1224x1584,
2,508 tokens for a letter page, as the paper's screenshots). SlideVQA slide images are used as
released. Questions whose document is missing or broken are skipped and reported.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Iterator

from mmlbdata.core.lengths import LENGTHS
from mmlbdata.dataset.docpack import AnswerPagesCut, fit_example
from mmlbdata.media.documents import DocCorpus, ImageDocument, PdfDocument, ScaledImageDocument, max_pages_option
from mmlbdata.media.pdf import DEFAULT_DPI
from mmlbdata.official.protocol import DEFAULT as DEFAULT_PROTOCOL  # in the config options: a protocol change rebuilds
from mmlbdata.sources import longdocurl, mmlongbench_doc, slidevqa
from mmlbdata.sources.docqa import DocQuestion, correct_answer, long_answer_problem
from mmlbdata.sources.records import BadRecord

from .base import MMLONGBENCH_LENGTH_KEYS, MMLBBuilder, standard_configs

LAYOUTS = {
    "mmlongbench_doc": "samples.json + documents/<doc_id> (PDFs), as in MMLongBench-Doc's data/",
    "longdocurl": ("LongDocURL.jsonl + pdf_pngs/<range>/<prefix>/<doc_no>_<page>.png (0-based "
                   "pages); ccpdf_zip/<range>/<doc_no>.pdf when unpacked (rendered at 144 DPI)"),
    "slidevqa": "annotations/qa/<split>.jsonl + images/<split>/<deck_name>/<slide image files>",
}
DATASET_SOURCE = {"mmlongdoc": "mmlongbench_doc", "longdocurl": "longdocurl", "slidevqa": "slidevqa"}
# all: every question at every length, answer pages cut where they alone exceed it (the release);
# fit8k: only questions whose answer pages fit the smallest length (no page ever cut)
QUESTION_SETS = ("all", "fit8k")


class DocVQA(MMLBBuilder):
    """Long-document VQA at the five standard lengths from three document-QA releases."""

    DESCRIPTION = ("Long-document VQA (MMLongBench): answer a question about one document whose "
                   "pages are truncated or padded with other documents to the length.")
    HOMEPAGE = "https://github.com/EdinburghNLP/MMLongBench"
    LICENSE = "MMLongBench-Doc CC BY-NC 4.0; LongDocURL and SlideVQA under their own terms"
    CITATION = ("@article{wang2025mmlongbench, title={MMLongBench: Benchmarking Long-Context "
                "Vision-Language Models Effectively and Thoroughly}, author={Wang, Zhaowei and "
                "others}, year={2025}}")
    LIMIT_COUNTS_ROWS = True  # --limit caps the rows built (the progress bar's total)
    SOURCES = dict(LAYOUTS)
    BUILDER_CONFIGS = (
        standard_configs("mmlongdoc", metric="docqa", sources=("mmlongbench_doc",), protocol=DEFAULT_PROTOCOL,
                         dpi=DEFAULT_DPI, max_pages=None, question_set="all", lengths=MMLONGBENCH_LENGTH_KEYS,
                         description="MMLongBench-Doc questions, PDF pages at 144 DPI")
        + standard_configs("longdocurl", metric="docqa", sources=("longdocurl",), protocol=DEFAULT_PROTOCOL,
                           dpi=DEFAULT_DPI, page_dpi=longdocurl.PNG_DPI, question_set="all",
                           lengths=MMLONGBENCH_LENGTH_KEYS,
                           description="LongDocURL questions, pages at 144 DPI (PDFs, else "
                                       "the 72-DPI page PNGs upscaled)")
        + standard_configs("slidevqa", metric="docqa", sources=("slidevqa",), split="test", protocol=DEFAULT_PROTOCOL,
                           question_set="all", lengths=MMLONGBENCH_LENGTH_KEYS,
                           description="SlideVQA questions, slide images")
    )

    # -- sources -------------------------------------------------------------------------------
    def source_key(self) -> str:
        return DATASET_SOURCE[self.config.dataset]

    def load(self) -> tuple[list[DocQuestion], DocCorpus]:
        """The dataset's usable questions and its documents (bad records reported)."""
        key = self.source_key()
        root = self.source(key)
        if key == "mmlongbench_doc":
            return self._load_mmlongbench_doc(root)
        if key == "longdocurl":
            return self._load_longdocurl(root)
        return self._load_slidevqa(root)

    def _keep(self, item, file) -> bool:
        """Report unusable records and MMLongBench's dropped (long string) answers (SlideVQA)."""
        if self._bad(item):
            return False
        problem = long_answer_problem(item.answer_format, item.answer)
        if problem:
            self.report.skip(file, item.qid, problem)
        return not problem

    def _bad(self, item) -> bool:
        """Report an unusable record (True) or let it through (False)."""
        if isinstance(item, BadRecord):
            self.report.skip(item.file, item.record, item.reason)
            return True
        return False

    def _corrected(self, question: DocQuestion, file) -> DocQuestion | None:
        """The question with MMLongBench's answer-format correction, or None (reported)."""
        corrected = correct_answer(question.answer_format, question.answer, question.question)
        if isinstance(corrected, str):
            self.report.skip(file, question.qid, corrected)
            return None
        fmt, answer = corrected
        return replace(question, answer_format=fmt, answer=answer)

    def _load_mmlongbench_doc(self, root: Path):
        samples, folder = mmlongbench_doc.layout(root)
        questions = []
        for row in mmlongbench_doc.read_samples(root):
            if self._bad(row):
                continue
            question, why = mmlongbench_doc.clean_for_docvqa(row)
            if question is None:
                self.report.skip(samples, f"row {row.index}", why)
            else:
                questions.append(question)
        dpi, max_pages = int(self.option("dpi", DEFAULT_DPI)), max_pages_option(self)
        documents = {name: PdfDocument(name, p, dpi, max_pages)
                     for name, p in mmlongbench_doc.pdf_documents(folder, self.report).items()}
        return questions, DocCorpus(documents, self.report)

    def _load_longdocurl(self, root: Path):
        path = longdocurl.qa_file(root)
        questions = [self._corrected(q, path) for q in longdocurl.read_questions(root)
                     if not self._bad(q)]
        questions = [q for q in questions if q is not None]
        documents = {}
        for doc_no in sorted({q.doc_id for q in questions}):
            try:
                documents[doc_no] = self._longdocurl_document(root, doc_no)
            except ValueError as exc:
                self.report.skip(longdocurl.doc_dir(root, doc_no), doc_no, str(exc))
        return questions, DocCorpus(documents, self.report)

    def _longdocurl_document(self, root: Path, doc_no: str):
        """The PDF at ``dpi`` when the release's PDF is there, else the page PNGs scaled to it."""
        dpi = int(self.option("dpi", DEFAULT_DPI))
        pdf_path = longdocurl.pdf_file(root, doc_no)
        if pdf_path is not None:
            return PdfDocument(doc_no, pdf_path, dpi, max_pages_option(self))
        pages = tuple(longdocurl.page_images(root, doc_no))
        scale = dpi / float(self.option("page_dpi", longdocurl.PNG_DPI))
        return ScaledImageDocument(doc_no, pages, scale) if scale != 1 else ImageDocument(doc_no, pages)

    def _load_slidevqa(self, root: Path):
        split = str(self.option("split", "test"))
        path = slidevqa.qa_file(root, split)
        questions = [q for q in slidevqa.read_questions(root, split) if self._keep(q, path)]
        documents = {}
        for deck, urls in slidevqa.read_decks(root, split).items():
            try:
                documents[deck] = ImageDocument(deck, tuple(slidevqa.deck_pages(root, split, deck, urls)))
            except ValueError as exc:
                self.report.skip(Path(root) / "images" / split / deck, deck, str(exc))
        return questions, DocCorpus(documents, self.report)

    # -- the recipe ----------------------------------------------------------------------------
    def generate(self) -> Iterator[dict]:
        selection_budget = self.selection_budget()
        questions, corpus = self.load()
        built, cuts = 0, AnswerPagesCut()
        for question in questions:
            if self.limit is not None and built >= self.limit:
                break
            example = self.example(question, corpus, selection_budget, cuts)
            if example is not None:
                built += 1
                yield example
        cuts.note(self.report, self.config.name, built, self.length)

    def selection_budget(self) -> int | None:
        """The smallest length under ``question_set=fit8k`` (answer pages must fit it), else None."""
        choice = str(self.option("question_set", "all"))
        if choice not in QUESTION_SETS:
            raise ValueError(f"{self.config.name}: option question_set must be one of "
                             f"{QUESTION_SETS}, not {choice!r}")
        return min(LENGTHS.values()) if choice == "fit8k" else None

    def example(self, question: DocQuestion, corpus: DocCorpus,
                selection_budget: int | None = None, cuts: AnswerPagesCut | None = None) -> dict | None:
        return fit_example(self, question, corpus, self.source(self.source_key()),
                           selection_budget=selection_budget, cuts=cuts)
