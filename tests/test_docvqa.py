"""DocVQA builders on the real samples: budget invariant, answer pages kept, padding with other
documents only, meta page indices pointing at the very images in the row; broken PDFs reported."""
from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest
from PIL import Image, ImageChops, ImageStat

from mmlb_builders.docvqa import DocVQA
from mmlb_builders.mmlongbench_doc import MMLongBenchDoc
from mmlbdata.core.lengths import LENGTHS
from mmlbdata.media import pdf
from mmlbdata.core.report import BuildReport
from mmlbdata.core.store import ImageStore
from tests.test_docqa_sources import write_slidevqa


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return ImageStore(tmp_path_factory.mktemp("store"))


def build(cls, config, sources, counter, store, **kwargs):
    report = BuildReport()
    builder = cls(config, sources=sources, counter=counter, store=store, report=report, **kwargs)
    return list(builder.generate()), report


def check_rows(rows, counter, length):
    """The properties every length-controlled DocVQA row must have."""
    assert rows
    for row in rows:
        meta = json.loads(row["meta"])
        pages = [tuple(p) for p in meta["pages"]]
        assert len(pages) == len(row["images"]) == row["prompt"].count("<image>")
        assert row["num_tokens"] == counter.example(row["prompt"], row["images"])
        assert row["num_tokens"] <= length < meta["next_num_tokens"]
        own = [i for d, i in pages if d == meta["doc_id"]]
        cut = set(meta["answer_pages_cut"])
        assert set(meta["answer_pages"]) - cut <= set(own), "an answer page was dropped unflagged"
        assert not cut & set(own) and cut <= set(meta["answer_pages"])
        assert own == list(range(own[0], own[-1] + 1)), "own pages must stay one window"
        assert meta["doc_id"] not in meta["padding_docs"]
        assert {d for d, _ in pages} == {meta["doc_id"], *meta["padding_docs"]}
        if meta["padding_docs"]:
            assert not meta["truncated"] and own[0] == 0  # padded documents are whole
        # data.py load_doc_qa @22b9f27 (protocol v1.1, the default; item_template L436, doc_id from the
        # page file's folder L449): every page named with its document's first 15 characters, in order
        items = row["prompt"].split("Answer: [answer]\n\n", 1)[1].split("\n\nQuestion: ")[0].split("\n\n")
        assert items == [f"Document {doc_id[:15]}: <image>" for doc_id, _index in pages]
        assert row["question"].startswith(f"Based on Document {meta['doc_id']:.15}, answer")
    return [json.loads(r["meta"]) for r in rows]


def assert_pdf_pages_match(row, folder: Path, sample: int = 3):
    """Re-render pages named by meta and compare with the row's image bytes."""
    meta = json.loads(row["meta"])
    picks = sorted({0, len(meta["pages"]) - 1, *[k for k, (d, i) in enumerate(meta["pages"])
                                                  if d == meta["doc_id"] and i in meta["answer_pages"]]})
    for k in picks[:sample]:
        doc_id, index = meta["pages"][k]
        assert Path(row["images"][k].path).read_bytes() == pdf.render_page_png(folder / doc_id, index)


# ------------------------------------------------------------------ LongDocURL (page PNGs)


@pytest.mark.parametrize("length", list(LENGTHS))
def test_longdocurl_all_lengths(real_data, counter, store, length):
    """The sample's 72-DPI PNGs (612x792 letter, 596x842 A4, two A3) become pages twice their size, 144
    DPI as MMLongBench's screenshots (appendix B.4/B.5): 2,508 tokens a letter page."""
    root = real_data / "longdocurl_sample"
    rows, report = build(DocVQA, f"longdocurl_{length}", {"longdocurl": root}, counter, store)
    metas = check_rows(rows, counter, LENGTHS[length])
    # the third question's list answer has items of 11-12 words: discarded (appendix B.5)
    assert [m["source_id"] for m in metas] == ["free_gemini15_pro_4055915_42_71_8",
                                               "summary2title_4127644_8_37_8"]
    assert [s.record for s in report.skipped] == ["extract_fig2tab_4151603_24_53_2"]
    for row, meta in zip(rows, metas):
        for ref, (doc_id, index) in zip(row["images"], meta["pages"]):
            png = next((root / "pdf_pngs").rglob(f"{doc_id}_{index}.png"))
            with Image.open(png) as small, Image.open(ref.path) as image:
                assert (ref.width, ref.height) == image.size == (2 * small.width, 2 * small.height)
        assert meta["answer_format"] in ("Int", "Str", "List")
        assert meta["answer_pages_cut"] == []  # the sample's answer pages fit every length
    pages_per_row = sum(len(r["images"]) for r in rows) / len(rows)
    letter_pages = LENGTHS[length] / 2508  # the paper: 3.6 / 7.2 / 14.2 / 28.6 / 55.3
    assert 0.85 * letter_pages - 1 < pages_per_row <= letter_pages
    if LENGTHS[length] >= 64 * 1024:  # 84-98 page documents (~210k tokens): truncated everywhere
        assert all(m["truncated"] for m in metas)


def test_longdocurl_upscaled_page_matches_the_png(real_data, counter, store):
    """The upscaled page is the release PNG resized 2x (same picture, not a blank page)."""
    root = real_data / "longdocurl_sample"
    rows, _ = build(DocVQA, "longdocurl_8k", {"longdocurl": root}, counter, store, limit=1)
    doc_id, index = json.loads(rows[0]["meta"])["pages"][0]
    source = next((root / "pdf_pngs").rglob(f"{doc_id}_{index}.png"))
    with Image.open(source) as small, Image.open(rows[0]["images"][0].path) as big:
        shrunk = big.convert("RGB").resize(small.size)
        difference = ImageChops.difference(shrunk, small.convert("RGB"))
    assert sum(ImageStat.Stat(difference).mean) / 3 < 8


def test_longdocurl_renders_release_pdfs_at_144_dpi(tmp_path, real_data, counter, store):
    """Where ``ccpdf_zip/`` holds the document's PDF, pages are rendered from it at 144 DPI."""
    sample = real_data / "longdocurl_sample"
    (tmp_path / "LongDocURL.jsonl").write_text((sample / "LongDocURL.jsonl").read_text())
    shutil.copytree(sample / "pdf_pngs", tmp_path / "pdf_pngs")  # symlinks out of a source are refused
    a_pdf = sorted((real_data / "mmlongbench_doc" / "documents").glob("*.pdf"))[0]
    folder = tmp_path / "ccpdf_zip" / "4000-4999"
    folder.mkdir(parents=True)
    shutil.copyfile(a_pdf, folder / "4055915.pdf")
    rows, _ = build(DocVQA, "longdocurl_8k", {"longdocurl": tmp_path}, counter, store)
    meta = json.loads(rows[0]["meta"])
    assert meta["doc_id"] == "4055915"
    k, index = next((k, i) for k, (d, i) in enumerate(meta["pages"]) if d == "4055915")
    assert Path(rows[0]["images"][k].path).read_bytes() == pdf.render_page_png(a_pdf, index, 144)


# ------------------------------------------------------------------ MMLongBench-Doc (real PDFs)


@pytest.fixture
def unrendered(monkeypatch):
    """Page images as sized references only (no rendering): counts and selections stay exact."""
    from mmlbdata.media.documents import DocCorpus
    from mmlbdata.core.store import ImageRef

    def sized_refs(self, store, pages, num_proc=1):
        return [ImageRef(f"{d}#{i}", *self.size(d, i)) for d, i in pages]

    monkeypatch.setattr(DocCorpus, "images", sized_refs)


def answer_windows(root: Path, counter) -> dict[str, int]:
    """Row id -> tokens of the question's answer pages with those between them (its smallest
    example), for every question on the sample's PDFs that the selection keeps."""
    from mmlbdata.dataset.docpack import answer_window_tokens
    from mmlbdata.official.mmlongbench_prompts import doc_question
    from mmlbdata.media.documents import DocCorpus, PdfDocument
    from mmlbdata.sources import mmlongbench_doc as mmld

    _, folder = mmld.layout(root)
    report = BuildReport()
    corpus = DocCorpus({n: PdfDocument(n, p, 144, None)
                        for n, p in mmld.pdf_documents(folder, report).items()}, report)
    windows = {}
    for row in mmld.read_samples(root):
        question, _ = mmld.clean_for_docvqa(row)
        if question is not None and corpus.get(question.doc_id):
            text = doc_question(question.doc_id, question.question)
            windows[f"mmlongdoc_{question.qid}"] = answer_window_tokens(
                text, question.doc_id, question.answer_pages, corpus, counter)
    return windows


def test_mmlongdoc_one_question_set_for_all_lengths(real_data, counter, unrendered):
    """Every kept question on the 8 real PDFs (58) at every length, as the release keeps its 965 in
    every documentQA/mmlongdoc_K*.jsonl (rows 111 and 114 are lines 190 and 192 of both the 8K and
    the 64K file). Where the answer pages alone exceed the length (14 questions at 8K, from 10K to
    119K tokens) the window keeping the most answer pages is built and the rest are flagged; where
    they fit, none is cut. Pages are not rendered here."""
    root = real_data / "mmlongbench_doc"
    windows = answer_windows(root, counter)
    assert len(windows) == 58
    ids = {}
    for length, budget in LENGTHS.items():
        rows, report = build(DocVQA, f"mmlongdoc_{length}", {"mmlongbench_doc": root}, counter,
                             store=None)
        metas = check_rows(rows, counter, budget)  # num_tokens <= length < next_num_tokens
        ids[length] = [row["id"] for row in rows]
        over = {row["id"] for row in rows if windows[row["id"]] > budget}
        flagged = {row["id"] for row, meta in zip(rows, metas) if meta["answer_pages_cut"]}
        assert flagged == over  # cut exactly where the answer pages alone do not fit
        for row, meta in zip(rows, metas):
            if row["id"] in over:  # one window of the document, at least one answer page in it
                assert meta["truncated"] and not meta["padding_docs"]
                assert set(meta["answer_pages"]) - set(meta["answer_pages_cut"])
        # answer windows over the length (10K-119K tokens: 10.2, 10.3, 10.3, 20.4, 20.4, 22.8, 33.1,
        # 50.8, 55.8, 58.5, 66.0, 79.7, 114.4, 119.2K)
        expected = {"8k": 14, "16k": 11, "32k": 8, "64k": 4, "128k": 0}[length]
        assert len(over) == expected
        notes = [n for n in report.notes if "answer pages cut" in n]
        assert notes == ([f"mmlongdoc_{length}: {expected} of 58 questions have answer pages cut "
                          f"(their answer pages alone exceed {budget} tokens; "
                          f"meta.answer_pages_cut lists them)"] if expected else [])
        if length == "8k":
            # row 111: answer pages 26 and 38 (0-based), letter pages of ~2,660 tokens: 3 fit;
            # 26-28 and 36-38 each keep one, equally far from the middle (32): the first wins
            meta = metas[ids["8k"].index("mmlongdoc_0111")]
            assert [i for _, i in meta["pages"]] == [26, 27, 28]
            assert meta["answer_pages_cut"] == [38]
    assert len(ids["8k"]) == 58 and all(found == ids["8k"] for found in ids.values())


@pytest.mark.parametrize("length", ["8k", "128k"])
def test_mmlongdoc_fit8k_keeps_the_questions_whose_answer_pages_fit_8k(real_data, counter,
                                                                       unrendered, length):
    """``--option question_set=fit8k``: the previous rule, 44 of the 58 at every length, no cut."""
    root = real_data / "mmlongbench_doc"
    rows, report = build(DocVQA, f"mmlongdoc_{length}", {"mmlongbench_doc": root}, counter,
                         store=None, options={"question_set": "fit8k"})
    metas = check_rows(rows, counter, LENGTHS[length])
    assert len(rows) == 44 and not any(m["answer_pages_cut"] for m in metas)
    over = [s for s in report.skipped if "over the smallest length 8192" in s.reason]
    assert len(over) == 14
    with pytest.raises(ValueError, match="question_set must be one of"):
        build(DocVQA, "mmlongdoc_8k", {"mmlongbench_doc": root}, counter, store=None,
              options={"question_set": "some"})


def test_mmlongbench_doc_standard_lengths_keep_every_question(real_data, counter, unrendered):
    """``mmlongbench_doc_{8k..128k}`` (every question on the 8 real PDFs, no selection: 63) share the
    rule: the 15 whose answer pages alone exceed 8K (row 49, unselected for mmlongdoc, too) are
    cut at 8K instead of skipped, and none at 128K."""
    root = {"mmlongbench_doc": real_data / "mmlongbench_doc"}
    ids = {}
    for length in ("8k", "128k"):
        rows, report = build(MMLongBenchDoc, f"mmlongbench_doc_{length}", root, counter, store=None)
        metas = [json.loads(row["meta"]) for row in rows]
        ids[length] = [row["id"] for row in rows]
        cut = [m["source_id"] for m in metas if m["answer_pages_cut"]]
        assert len(cut) == (15 if length == "8k" else 0)
        notes = [n for n in report.notes if "answer pages cut" in n]  # counted where fit_example cuts
        assert notes == ([f"mmlongbench_doc_8k: 15 of 63 questions have answer pages cut (their answer pages "
                          f"alone exceed 8192 tokens; meta.answer_pages_cut lists them)"] if cut else [])
        assert all(row["num_tokens"] <= LENGTHS[length] < m["next_num_tokens"]
                   for row, m in zip(rows, metas))
    assert len(ids["8k"]) == 63 and ids["8k"] == ids["128k"]


def test_mmlongdoc_8k_rerenders_match(real_data, counter, store):
    root = real_data / "mmlongbench_doc"
    rows, report = build(DocVQA, "mmlongdoc_8k", {"mmlongbench_doc": root}, counter, store, limit=3)
    metas = check_rows(rows, counter, 8192)
    assert len(rows) == 3
    deck = root / "documents" / metas[0]["doc_id"]
    assert deck.name.startswith("ddoseattle") and not pdf.open_pdf(deck)[0].get_text().strip()
    for row in rows:  # an image-only slide deck: pages are pictures, no text layer
        assert_pdf_pages_match(row, root / "documents")
    assert metas[0]["answer_format"] == "List" and rows[0]["answers"][0].startswith('["OPTIMISATION", ')
    # questions on the 127 PDFs absent from the sample are reported, not crashed on
    assert any("not found" in s.reason for s in report.skipped)


@pytest.mark.slow
@pytest.mark.parametrize("length", list(LENGTHS))
def test_mmlongdoc_every_real_pdf_every_length(real_data, counter, store, length):
    root = real_data / "mmlongbench_doc"
    rows, _ = build(DocVQA, f"mmlongdoc_{length}", {"mmlongbench_doc": root}, counter, store)
    metas = check_rows(rows, counter, LENGTHS[length])
    docs = {p.name for p in (root / "documents").glob("*.pdf")}
    assert {m["doc_id"] for m in metas} == docs  # all 8 real PDFs build
    for row in rows[::10]:
        assert_pdf_pages_match(row, root / "documents", sample=2)


# ------------------------------------------------------------------ SlideVQA (release schema)


@pytest.fixture
def slidevqa_root(tmp_path):
    decks = {"deck-a": (5, (1024, 768)), "deck-b": (5, (720, 720)), "deck-c": (5, (1024, 768)),
             "deck-long": (20, (1024, 768))}
    write_slidevqa(tmp_path, decks, [
        {"deck_name": "deck-a", "question": "How many?", "answer": "12", "evidence_pages": [2]},
        {"deck_name": "deck-b", "question": "Who?", "answer": "Alice", "evidence_pages": [1, 5]},
        {"deck_name": "deck-long", "question": "Where?", "answer": "Kyoto", "evidence_pages": [17]},
        {"deck_name": "deck-c", "question": "Why?", "answer": "because it was raining all day",
         "evidence_pages": [3], "qa_id": 77},
    ])
    return tmp_path


def test_slidevqa_builds_with_square_slides(slidevqa_root, counter, store):
    rows, report = build(DocVQA, "slidevqa_8k", {"slidevqa": slidevqa_root}, counter, store)
    metas = check_rows(rows, counter, 8192)
    assert [m["doc_id"] for m in metas] == ["deck-a", "deck-b", "deck-long"]
    assert [(s.record, s.reason) for s in report.skipped] == [
        ("test-77", "string answer of 5 words or more")]  # MMLongBench drops long answers
    assert metas[0]["padding_docs"] and metas[2]["truncated"] and 16 in metas[2]["answer_pages"]
    assert rows[0]["answers"] == ["12"] and metas[0]["answer_format"] == "Int"
    square = [r for r, (d, _) in zip(rows[1]["images"], metas[1]["pages"]) if d == "deck-b"]
    assert {(r.width, r.height) for r in square} == {(720, 720)}
    for row, meta in zip(rows, metas):
        for ref, (deck, index) in zip(row["images"], meta["pages"]):
            assert Path(ref.path) == slidevqa_root / "images" / "test" / deck / f"{deck}-{index + 1}-1024.jpg"


def test_slidevqa_answer_pages_over_8k_are_cut_not_dropped(tmp_path, counter, store):
    """A question whose evidence slides (1 and 20 of a 20-slide deck: the whole deck, ~20K tokens)
    exceed 8K is built at 8K from the window keeping one of them (first wins the tie) and flagged;
    at 32K the whole deck fits and nothing is cut; ``question_set=fit8k`` leaves it out."""
    write_slidevqa(tmp_path, {"deck-long": (20, (1024, 768)), "deck-pad": (20, (1024, 768))}, [
        {"deck_name": "deck-long", "question": "Where?", "answer": "Kyoto", "evidence_pages": [1, 20]},
        {"deck_name": "deck-pad", "question": "Who?", "answer": "Alice", "evidence_pages": [2]},
    ])
    source = {"slidevqa": tmp_path}
    rows, report = build(DocVQA, "slidevqa_8k", source, counter, store)
    long, pad = check_rows(rows, counter, 8192)
    kept = [i for d, i in long["pages"] if d == "deck-long"]
    assert long["answer_pages"] == [0, 19] and long["answer_pages_cut"] == [19]
    assert kept[0] == 0 and kept == list(range(len(kept))) and len(kept) < 20
    assert pad["answer_pages_cut"] == []
    assert report.notes == ["slidevqa_8k: 1 of 2 questions have answer pages cut (their answer "
                            "pages alone exceed 8192 tokens; meta.answer_pages_cut lists them)"]
    rows, report = build(DocVQA, "slidevqa_32k", source, counter, store)
    assert [m["answer_pages_cut"] for m in check_rows(rows, counter, 32768)] == [[], []]
    assert not report.notes
    rows, report = build(DocVQA, "slidevqa_8k", source, counter, store,
                         options={"question_set": "fit8k"})
    assert [json.loads(r["meta"])["doc_id"] for r in rows] == ["deck-pad"]
    assert "over the smallest length 8192" in report.skipped[-1].reason


# ------------------------------------------------------------------ broken PDFs in a build


def make_pdf(path: Path, pages: int, size=(300, 400)) -> Path:
    import pymupdf

    doc = pymupdf.open()
    for i in range(pages):
        page = doc.new_page(width=size[0], height=size[1])
        page.insert_text((20, 40), f"{path.stem} page {i + 1}", fontsize=14)
    doc.save(path)
    return path


@pytest.fixture
def broken_release(tmp_path):
    """A miniature MMLongBench-Doc release with good, encrypted, truncated and zero-page PDFs."""
    import pymupdf

    docs = tmp_path / "documents"
    docs.mkdir()
    for name in ("good1", "good2", "good3"):
        make_pdf(docs / f"{name}.pdf", 12)
    pymupdf.open(make_pdf(tmp_path / "plain.pdf", 3)).save(
        docs / "locked.pdf", encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="u", owner_pw="o")
    data = make_pdf(tmp_path / "whole.pdf", 12).read_bytes()
    (docs / "cut.pdf").write_bytes(data[: len(data) * 2 // 3])
    from tests.test_pdf import _raw_pdf

    (docs / "empty.pdf").write_bytes(_raw_pdf(["<< /Type /Catalog /Pages 2 0 R >>",
                                               "<< /Type /Pages /Kids [] /Count 0 >>"]))
    rows = []
    for doc in ("good1", "locked", "cut", "empty", "good2"):
        rows.append({"doc_id": f"{doc}.pdf", "doc_type": "Test", "question": f"What is on {doc}?",
                     "answer": "A page", "evidence_pages": "[2]", "evidence_sources": "['Pure-text (Plain-text)']",
                     "answer_format": "Str"})
    (tmp_path / "samples.json").write_text(json.dumps(rows))
    return tmp_path


@pytest.mark.parametrize("config", ["mmlongdoc_8k", "mmlongbench_doc", "mmlongbench_doc_concat"])
def test_broken_pdfs_are_skipped_and_reported(broken_release, counter, store, config):
    cls = DocVQA if config.startswith("mmlongdoc_") else MMLongBenchDoc
    rows, report = build(cls, config, {"mmlongbench_doc": broken_release}, counter, store)
    assert [json.loads(r["meta"])["doc_id"] for r in rows] == ["good1.pdf", "good2.pdf"]
    messages = "\n".join(str(s) for s in report.skipped)
    for name, why in (("locked", "encrypted"), ("cut", "truncated"), ("empty", "zero pages")):
        assert f"{name}.pdf" in messages and why in messages
    if config == "mmlongdoc_8k":
        check_rows(rows, counter, 8192)
        # broken documents are never drawn as padding either
        assert all(not set(json.loads(r["meta"])["padding_docs"]) & {"locked.pdf", "cut.pdf", "empty.pdf"}
                   for r in rows)


# ------------------------------------------------------------------ the original benchmark


def test_original_page_list_and_grid_variants(broken_release, counter, store):
    source = {"mmlongbench_doc": broken_release}
    pages, _ = build(MMLongBenchDoc, "mmlongbench_doc", source, counter, store,
                     options={"max_pages": "10"})  # as `mmlb build --option max_pages=10` passes it
    grids, _ = build(MMLongBenchDoc, "mmlongbench_doc_concat", source, counter, store,
                     options={"max_pages": 10, "concat_num": 3})
    row, grid_row = pages[0], grids[0]
    meta = json.loads(row["meta"])
    assert len(row["images"]) == 10 and row["length"] == 0  # first max_pages pages only
    assert (row["images"][0].width, row["images"][0].height) == (600, 800)  # 144 DPI
    assert row["answers"] == ["A page"] and meta["raw"]["evidence_pages"] == "[2]"
    assert meta["evidence_pages"] == [2] and meta["answer_pages"] == [1]
    assert row["num_tokens"] == counter.example(row["prompt"], row["images"])
    grid_meta = json.loads(grid_row["meta"])
    assert grid_meta["grids"] == [[0, 3], [4, 7], [8, 9]]  # ceil(10 / 3) = 4 pages per grid
    sizes = [(g.width, g.height) for g in grid_row["images"]]
    assert sizes == [(1800, 1600), (1800, 1600), (1800, 800)]  # always 3 cells wide
    # MMLongBench-Doc run_lvlm.py load_questions -> get_response_concat(model, sample["question"], grids):
    # the question is the only text; run_api.py process_sample_gpt: a text item, then the images
    assert grid_row["prompt"] == "What is on good1?<image><image><image>"
    assert row["prompt"] == "What is on good1?" + "<image>" * 10
    first = Image.open(grid_row["images"][0].path).convert("RGB")
    assert first.format is None and Image.open(grid_row["images"][0].path).format == "JPEG"

    def strong_diffs(page_index):  # channel values of cell (row 1, col 0) far from the page's
        page = Image.open(io.BytesIO(pdf.render_page_png(broken_release / "documents" / "good1.pdf",
                                                         page_index))).convert("RGB")
        cell = first.crop((0, 800, 600, 1600))
        return sum(abs(a - b) > 96 for a, b in zip(cell.tobytes(), page.tobytes()))

    assert strong_diffs(3) == 0 < strong_diffs(4)  # cell 4 holds page 4 (up to JPEG noise)


@pytest.mark.slow
def test_original_on_real_sample_flags_and_keeps_rows(real_data, counter, store):
    rows, report = build(MMLongBenchDoc, "mmlongbench_doc", {"mmlongbench_doc": real_data / "mmlongbench_doc"},
                         counter, store)
    assert len(rows) == 63  # every question on the 8 real PDFs
    for row in rows:
        meta = json.loads(row["meta"])
        assert len(row["images"]) == min(120, pdf.page_count(real_data / "mmlongbench_doc" / "documents" / meta["doc_id"]))
        assert set(meta["raw"]) == {"doc_id", "doc_type", "question", "answer", "evidence_pages",
                                    "evidence_sources", "answer_format"}
    activision = [json.loads(r["meta"]) for r in rows if r["id"].endswith(("_0999", "_1002"))]
    assert activision and all(len(m["pages"]) == 120 for m in activision)
    assert report.num_skipped == 1082 - 63


def test_parallel_rendering_builds_identical_rows(broken_release, counter, tmp_path):
    """num_proc changes how pages are rendered, never what is built (deterministic output)."""
    def run(num_proc):
        rows, _ = build(DocVQA, "mmlongdoc_8k", {"mmlongbench_doc": broken_release}, counter,
                        ImageStore(tmp_path / f"store{num_proc}"), num_proc=num_proc)
        return [(r["id"], r["num_tokens"], r["meta"], [Path(i.path).name for i in r["images"]])
                for r in rows]

    assert run(2) == run(1)


def test_longdocurl_corrupt_page_image_skips_its_document(tmp_path, counter, store):
    """A truncated page PNG makes its document unusable: reported by file, never used as padding."""
    lines = []
    for doc_no in ("4000001", "4000002", "4000003"):
        folder = tmp_path / "pdf_pngs" / "4000-4999" / "4000"
        folder.mkdir(parents=True, exist_ok=True)
        for page in range(8):  # ~616 tokens a page: two documents exceed 8k
            Image.new("RGB", (612, 792), (page * 30, 90, 200)).save(folder / f"{doc_no}_{page}.png")
        lines.append(json.dumps({"question_id": f"q_{doc_no}", "doc_no": doc_no, "total_pages": 8,
                                 "question": "Which?", "answer": "Blue", "evidence_pages": [3],
                                 "answer_format": "String", "evidence_sources": ["Text"]}))
    (tmp_path / "LongDocURL.jsonl").write_text("\n".join(lines) + "\n")
    bad = tmp_path / "pdf_pngs" / "4000-4999" / "4000" / "4000002_4.png"
    bad.write_bytes(bad.read_bytes()[:200])
    rows, report = build(DocVQA, "longdocurl_8k", {"longdocurl": tmp_path}, counter, store)
    metas = check_rows(rows, counter, 8192)
    assert [m["doc_id"] for m in metas] == ["4000001", "4000003"]
    assert all("4000002" not in m["padding_docs"] for m in metas)
    messages = [str(s) for s in report.skipped]
    assert any("4000002_4.png" in m and "truncated" in m for m in messages)
    assert any("q_4000002" in m for m in messages)
