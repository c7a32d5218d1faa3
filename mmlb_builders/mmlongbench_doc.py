"""The original MMLongBench-Doc benchmark (Ma et al., 2024), plus standardized-length variants.

* ``mmlongbench_doc``: all 1,082 questions over the 135 PDFs, the first ``max_pages`` (120) pages
  rendered at 144 DPI, one image per page (the API-model setting);
* ``mmlongbench_doc_concat``: the same pages concatenated into at most ``concat_num`` grid images
  of ``columns`` (3) columns (the open-model setting of the original code);
* ``mmlongbench_doc_{8k..128k}``: every question fitted to a standard length with MMLongBench's
  DocVQA length control (even truncation keeping answer pages / padding with other documents;
  answer pages that alone exceed the length cut and listed in ``meta.answer_pages_cut``),
  which no other release provides.

Rows are never dropped for the release's known defects: ``meta.flags`` names them (non-integer
``Int`` answers, answerable questions without evidence pages, evidence pages past the end of the
PDF or past ``max_pages``), and ``meta.raw`` keeps the seven fields of ``samples.json`` verbatim
next to the parsed ones (typed answer, evidence pages, evidence sources). The gold answer is the
raw ``answer`` string, which the original scorer parses by ``answer_format``.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Iterator

from mmlbdata.core.schema import make_example
from mmlbdata.core.store import BadImageError
from mmlbdata.core.tokens import IMAGE_PLACEHOLDER
from mmlbdata.dataset.docpack import AnswerPagesCut, fit_example
from mmlbdata.media import page_grid
from mmlbdata.media.documents import DocCorpus, PdfDocument, max_pages_option
from mmlbdata.media.pdf import DEFAULT_DPI, PdfError, open_pdf, pdf_sha256
from mmlbdata.official.protocol import DEFAULT as DEFAULT_PROTOCOL  # the page items of the standardized configs
from mmlbdata.sources import mmlongbench_doc as mmld
from mmlbdata.sources.records import BadRecord

from .base import MMLBBuilder, MMLBConfig, standard_configs

ORIGINAL_MAX_PAGES = 120
DEFAULT_CONCAT_NUM = 5
GRID_COLUMNS = 3
METRIC = "mmlongbench_doc"
def original_prompt(num_images: int, question: str) -> str:
    """The original run's message: the question as its only text, then the page images with nothing
    between them (run_api.py ``process_sample_gpt``: one text item, then one image item per page;
    run_lvlm.py hands the question alone to the model with the grids)."""
    return question + IMAGE_PLACEHOLDER * num_images


def _original(name: str, mode: str, description: str) -> MMLBConfig:
    return MMLBConfig(name=name, dataset="mmlongbench_doc", length=None, metric=METRIC,
                      sources=("mmlongbench_doc",), description=description,
                      options={"page_mode": mode, "max_pages": ORIGINAL_MAX_PAGES,
                               "dpi": DEFAULT_DPI, "concat_num": DEFAULT_CONCAT_NUM,
                               "columns": GRID_COLUMNS})


@lru_cache(maxsize=512)
def pdf_facts(path: Path) -> tuple[int, bool] | None:
    """(page count, whether its PDF page labels differ from 1..n), or None when unusable."""
    try:
        with open_pdf(path) as doc:
            count = doc.page_count
            labels = [doc[i].get_label() for i in range(count)] if doc.get_page_labels() else []
    except PdfError:
        return None
    return count, any(label and label != str(i + 1) for i, label in enumerate(labels))


class MMLongBenchDoc(MMLBBuilder):
    """MMLongBench-Doc as released, in page-list and grid variants, and at standard lengths."""

    DESCRIPTION = "MMLongBench-Doc: 1,082 questions over 135 long PDFs (Ma et al., NeurIPS 2024 D&B)."
    HOMEPAGE = "https://github.com/mayubo2333/MMLongBench-Doc"
    LICENSE = "CC BY-NC 4.0 (questions); documents under their owners' terms"
    CITATION = ("@article{ma2024mmlongbenchdoc, title={MMLongBench-Doc: Benchmarking Long-context "
                "Document Understanding with Visualizations}, author={Ma, Yubo and others}, year={2024}}")
    LIMIT_COUNTS_ROWS = True  # --limit caps the rows built (the progress bar's total)
    SOURCES = {"mmlongbench_doc": "samples.json + documents/<doc_id> (PDFs), as in MMLongBench-Doc's data/"}
    BUILDER_CONFIGS = [
        _original("mmlongbench_doc", "pages", "all pages as separate images (API setting)"),
        _original("mmlongbench_doc_concat", "concat",
                  "pages concatenated into at most concat_num 3-column grids (open-model setting)"),
    ] + standard_configs("mmlongbench_doc", metric=METRIC, sources=("mmlongbench_doc",), protocol=DEFAULT_PROTOCOL,
                         page_mode="standardized", dpi=DEFAULT_DPI, max_pages=None,
                         description="MMLongBench-Doc at a standard length")

    def generate(self) -> Iterator[dict]:
        root = self.source("mmlongbench_doc")
        samples, folder = mmld.layout(root)
        dpi = int(self.option("dpi", DEFAULT_DPI))
        max_pages = max_pages_option(self)
        corpus = DocCorpus({name: PdfDocument(name, p, dpi, max_pages)
                            for name, p in mmld.pdf_documents(folder, self.report).items()}, self.report)
        built, cuts = 0, AnswerPagesCut()
        for row in mmld.read_samples(root):
            if self.limit is not None and built >= self.limit:
                break
            if isinstance(row, BadRecord):
                self.report.skip(row.file, row.record, row.reason)
                continue
            example = self.example(row, corpus, folder, max_pages, cuts)
            if example is not None:
                built += 1
                yield example
        cuts.note(self.report, self.config.name, built, self.length)

    def example(self, row: mmld.SampleRow, corpus: DocCorpus, folder: Path, max_pages,
                cuts: AnswerPagesCut | None = None) -> dict | None:
        document = corpus.documents.get(row.doc_id)  # never a path built from the row's doc_id
        flags = self.page_flags(row, document.path, max_pages) if document else []
        question = mmld.to_question(row, tuple(flags))
        extra = {"raw": row.raw, "answer_typed": row.answer, "doc_type": row.raw["doc_type"],
                 "evidence_pages": list(row.evidence_pages), "flags": list(question.flags)}
        if self.option("page_mode") == "standardized":
            return fit_example(self, question, corpus, folder.parent / mmld.SAMPLES_FILE,
                               answers=[row.raw["answer"]], extra_meta=extra, cuts=cuts)
        if not corpus.get(row.doc_id):
            reason = corpus.errors.get(row.doc_id, "document has no usable page")
            self.report.skip(folder.parent / mmld.SAMPLES_FILE, f"row {row.index}", reason)
            return None
        try:
            images, meta = self.original_images(row.doc_id, corpus)
        except (PdfError, BadImageError) as exc:
            self.report.skip(folder / row.doc_id, f"row {row.index}", str(exc))
            return None
        prompt = original_prompt(len(images), row.raw["question"])
        meta.update(extra, doc_id=row.doc_id, answer_format=row.answer_format,
                    evidence_sources=list(row.evidence_sources),
                    answer_pages=list(question.answer_pages), source_id=row.qid)
        return make_example(
            id=f"{self.config.name}_{row.qid}", dataset=self.config.dataset, length=0,
            num_tokens=self.counter.example(prompt, images), prompt=prompt, images=images,
            question=row.raw["question"], answers=[row.raw["answer"]], metric=METRIC, meta=meta)

    def page_flags(self, row: mmld.SampleRow, path: Path, max_pages) -> list[str]:
        """Flags that need the PDF (page count, page labels); none when the PDF is unusable."""
        facts = pdf_facts(path)
        return [] if facts is None else mmld.page_flags(row, facts[0], max_pages, facts[1])

    def original_images(self, doc_id: str, corpus: DocCorpus) -> tuple[list, dict]:
        """Every kept page as one image, or the pages in at most ``concat_num`` grids."""
        pages = [(doc_id, i) for i in range(corpus[doc_id])]
        refs = corpus.images(self.store, pages, self.num_proc)
        meta = {"pages": [[d, i] for d, i in pages], "page_mode": self.option("page_mode")}
        if self.option("page_mode") != "concat":
            return refs, meta
        columns = int(self.option("columns", GRID_COLUMNS))
        groups = page_grid.batches(len(refs), int(self.option("concat_num", DEFAULT_CONCAT_NUM)))
        document = corpus.documents[doc_id]
        sha = pdf_sha256(document.path)
        grids = []
        for group in groups:
            members = [refs[i].path for i in group]
            key = f"grid:{sha}:{document.dpi}dpi:p{group.start}-{group.stop - 1}:c{columns}:jpeg"
            grids.append(self.store.cached(key, lambda m=members: (page_grid.grid_jpeg(m, columns), "jpg")))
        meta["grids"] = [[g.start, g.stop - 1] for g in groups]
        return grids, meta
