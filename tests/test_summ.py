"""gov_report_* / multi_lexsum_*: properties of the built rows on release-format fixtures."""
from __future__ import annotations

import hashlib
import json

import pymupdf
import pytest

from mmlb_builders.summ import (GOV_REPORT_TEMPLATE, MULTI_LEXSUM_TEMPLATE, Summarization,
                           even_end_order, Page)
from loopback_http import LoopbackServer
from mmlbdata.sources.download import download_all
from mmlbdata.media import pdf
from mmlbdata.core.report import BuildReport
from mmlbdata.sources import govreport
from mmlbdata.core.store import ImageStore
from summ_fixtures import (FOUND, RECOMMENDS, WHY, gao_record, make_gao_pdf, make_govreport_release,
                           make_lexsum_release, make_plain_pdf)

SMALL = (200, 260)  # 400x520 px at 144 dpi: 266 image tokens, so 8k holds ~28 pages


def build(config, source_key, root, tmp_path, counter, **kwargs):
    report = BuildReport()
    builder = Summarization(config, sources={source_key: root}, store=ImageStore(tmp_path / "store"),
                            counter=counter, report=report, **kwargs)
    return list(builder.generate()), report


def check_invariant(row, counter):
    meta = json.loads(row["meta"])
    assert row["num_tokens"] <= row["length"]
    assert meta["next_num_tokens"] is None or meta["next_num_tokens"] > row["length"]
    sizes = [(ref.width, ref.height) for ref in row["images"]]
    assert counter.example(row["prompt"], sizes) == row["num_tokens"]  # exact recount
    assert row["prompt"].count("<image>") == len(row["images"]) == len(meta["pages"])
    return meta


@pytest.fixture(scope="module")
def gov_release(tmp_path_factory):
    root = tmp_path_factory.mktemp("gov")
    make_govreport_release(root, ["GAO-12-604", "GAO-13-871T"], body_pages=40, highlights_pages=2, size=SMALL)
    return root


def test_gov_report_rows(gov_release, tmp_path, counter):
    rows, report = build("gov_report_8k", "govreport", gov_release, tmp_path, counter)
    assert [r["id"] for r in rows] == ["gov_report_gao-12-604", "gov_report_gao-13-871t"]
    assert report.num_skipped == 0
    for row in rows:
        meta = check_invariant(row, counter)
        assert meta["next_num_tokens"] is not None  # 40 body pages > 8k: truncated
        assert meta["highlights_pages"] == [1, 2]
        # truncated from the end: cover, then the body pages in order, highlights never
        assert [i for _, i in meta["pages"]] == [0] + list(range(3, 2 + len(meta["pages"])))
        assert row["metric"] == "summ_judge" and row["question"] == ""
        assert row["prompt"].startswith(GOV_REPORT_TEMPLATE.split("{context}")[0])
        assert row["prompt"].endswith("\n\nNow please summarize the report.")
        # MMLongBench data.py load_gov_report: item_template (L360) per page, joined by blank lines
        # (L375); 0-based page index, as the paper's Figure 31 prints "Document gao-12-156 (page 0)"
        pages = "\n\n".join(f"Document {d[:15]} (page {i}): <image>" for d, i in meta["pages"])
        assert row["prompt"] == (
            "You are given a government report from U.S. Government Accountability Office (GAO), and you are "
            "tasked to summarize the report. Write a concise summary (around 550 words) organized in multiple "
            "paragraphs. Where applicable, the summary should contain a short description of why GAO did this "
            "study, what GAO found, and what GAO recommends.\n\nGovernment Report:\n" + pages
            + "\n\nNow please summarize the report.")
        assert meta["answer_prefix"] == "Summary:"  # system_template, L361
        assert f"Document {meta['doc_id']} (page 0): <image>\n\nDocument {meta['doc_id']} (page 3): <image>" \
            in row["prompt"]


def test_gov_report_reference_is_structured_summary_and_never_on_a_page(gov_release, tmp_path, counter):
    rows, _ = build("gov_report_8k", "govreport", gov_release, tmp_path, counter)
    row = rows[0]
    ref = row["answers"][0]
    assert ref == govreport.parse_record(gao_record("GAO-12-604")).reference
    assert [line for line in ref.split("\n") if line.endswith(":")] == [f"{WHY}:", f"{FOUND}:", f"{RECOMMENDS}:"]
    meta = json.loads(row["meta"])
    path = gov_release / "gov-report" / "pdfs" / "gao-12-604.pdf"
    with pymupdf.open(path) as doc:
        for _, index in meta["pages"]:
            text = doc[index].get_text()
            assert WHY not in text and RECOMMENDS not in text and "Highlights of" not in text
    # the images are the renderings of the pages meta names (re-render and compare)
    for ref_img, (_, index) in list(zip(row["images"], meta["pages"]))[:3]:
        assert ref_img.read_bytes() == pdf.render_page_png(path, index)


def test_gov_report_all_lengths_share_examples(gov_release, tmp_path, counter):
    ids = {}
    for length in ("8k", "16k", "32k", "64k", "128k"):
        rows, _ = build(f"gov_report_{length}", "govreport", gov_release, tmp_path, counter)
        ids[length] = [r["id"] for r in rows]
        for row in rows:
            meta = check_invariant(row, counter)
            if meta["next_num_tokens"] is None:  # short document: kept whole
                assert len(meta["pages"]) == meta["num_pdf_pages"] - len(meta["highlights_pages"])
    assert len({tuple(v) for v in ids.values()}) == 1


def test_gov_report_drops_overlong_reports_and_bad_pdfs(tmp_path, counter):
    root = tmp_path / "rel"
    base = make_govreport_release(root, ["GAO-10-1", "GAO-10-2", "GAO-10-3", "GAO-10-4"], body_pages=4, size=SMALL)
    # 10 huge pages of 16,384 tokens each: more than 128K + 24K (never rendered to find out)
    make_gao_pdf(base / "pdfs" / "gao-10-2.pdf", "GAO-10-2", body_pages=10, size=(2000, 2000))
    data = (base / "pdfs" / "gao-10-3.pdf").read_bytes()
    (base / "pdfs" / "gao-10-3.pdf").write_bytes(data[: len(data) // 2])  # truncated file
    (base / "pdfs" / "gao-10-4.pdf").unlink()
    rows, report = build("gov_report_8k", "govreport", root, tmp_path, counter)
    assert [r["id"] for r in rows] == ["gov_report_gao-10-1"]
    reasons = {s.record: s.reason for s in report.skipped}
    assert "more than 128K + 24576" in reasons["GAO_GAO-10-2"]
    assert "truncated" in reasons["GAO_GAO-10-3"] and "gao-10-3.pdf" in report.skipped[1].file
    assert "PDF not found" in reasons["GAO_GAO-10-4"]


def gao_release_without_pdfs(tmp_path, prefix: str, body_pages: int):
    """A GovReport release lacking its PDFs, and the PDFs as a server would serve them."""
    numbers = ["GAO-12-604", "GAO-14-1"]
    root = tmp_path / "rel"
    make_govreport_release(root, numbers, with_pdfs=False)
    files = {f"{prefix}/{n.lower()}.pdf": make_gao_pdf(tmp_path / "src" / f"{n}.pdf", n, body_pages=body_pages,
                                                       size=SMALL).read_bytes() for n in numbers}
    return root, files


def test_gov_report_download_then_build(tmp_path, counter):
    """End to end: PDFs fetched by id from a loopback server, then built."""
    root, files = gao_release_without_pdfs(tmp_path, "/assets", body_pages=3)
    records = list(govreport.iter_records(root))
    with LoopbackServer(files) as srv:
        specs = govreport.pdf_specs(records, root / "gov-report" / "pdfs", url_template=srv.url("/assets/{doc_id}.pdf"),
                                    checksums={r.doc_id: hashlib.sha256(files[f"/assets/{r.doc_id}.pdf"]).hexdigest()
                                               for r in records})
        assert download_all(specs, progress=False).ok
    rows, report = build("gov_report_8k", "govreport", root, tmp_path, counter)
    assert len(rows) == 2 and report.num_skipped == 0
    assert all(json.loads(r["meta"])["next_num_tokens"] is None for r in rows)  # 5 small pages: whole


def test_skip_short_option(tmp_path, counter):
    root = tmp_path / "rel"
    make_govreport_release(root, ["GAO-12-604"], body_pages=2, size=SMALL)
    rows, report = build("gov_report_8k", "govreport", root, tmp_path, counter, options={"skip_short": True})
    assert rows == [] and "skip_short" in report.skipped[0].reason


# --- Multi-LexSum ------------------------------------------------------------------------------

def test_even_end_order():
    docs = [[Page(d, i, 1, 1, d) for i in range(n)] for d, n in (("a", 3), ("b", 1), ("c", 2))]
    assert [(p.doc_id, p.index) for p in even_end_order(docs)] == [
        ("a", 0), ("b", 0), ("c", 0), ("a", 1), ("c", 1), ("a", 2)]


@pytest.fixture(scope="module")
def lexsum_release(tmp_path_factory):
    root = tmp_path_factory.mktemp("lexsum")
    cases = {"EE-AL-0045": ["EE-AL-0045-0001", "EE-AL-0045-0002", "EE-AL-0045-0003"],
             "PC-CA-0001": ["PC-CA-0001-0001"]}
    pages = {"EE-AL-0045-0001": 30, "EE-AL-0045-0002": 4, "EE-AL-0045-0003": 25, "PC-CA-0001-0001": 6}
    make_lexsum_release(root, cases, pages={})
    for doc_id, n in pages.items():
        make_plain_pdf(root / "pdfs" / f"{doc_id}.pdf", n, doc_id, size=SMALL)
    return root


def test_multi_lexsum_rows(lexsum_release, tmp_path, counter):
    rows, report = build("multi_lexsum_8k", "multi_lexsum", lexsum_release, tmp_path, counter)
    assert [r["id"] for r in rows] == ["multi_lexsum_EE-AL-0045", "multi_lexsum_PC-CA-0001"]
    assert report.num_skipped == 0
    row = rows[0]
    meta = check_invariant(row, counter)
    assert row["answers"][0].startswith("On March 8, 2014") and row["metric"] == "summ_judge"
    assert row["prompt"].startswith(MULTI_LEXSUM_TEMPLATE.split("{context}")[0])
    assert row["prompt"].endswith("\n\nNow please summarize the case.")
    kept = {d["doc_id"]: d["pages_kept"] for d in meta["documents"]}
    # even truncation from the ends: the short document whole, the long ones within one page
    assert kept["EE-AL-0045-0002"] == 4
    assert abs(kept["EE-AL-0045-0001"] - kept["EE-AL-0045-0003"]) <= 1
    assert kept["EE-AL-0045-0001"] >= kept["EE-AL-0045-0003"]  # the extra page goes to the first
    assert 4 < kept["EE-AL-0045-0003"] < 25
    # reading order: document by document, each a prefix of its pages
    expected = [[d, i] for d in ("EE-AL-0045-0001", "EE-AL-0045-0002", "EE-AL-0045-0003") for i in range(kept[d])]
    assert meta["pages"] == expected
    assert "Document EE-AL-0045-0002 (page 3): <image>\n\nDocument EE-AL-0045-0003 (page 0): <image>" in row["prompt"]
    assert json.loads(rows[1]["meta"])["next_num_tokens"] is None  # 6 pages: whole case


def test_multi_lexsum_missing_document_skips_case(tmp_path, counter):
    root = tmp_path / "rel"
    make_lexsum_release(root, {"A-1": ["A-1-0001", "A-1-0002"], "B-2": ["B-2-0001"]})
    (root / "pdfs" / "A-1-0002.pdf").unlink()
    rows, report = build("multi_lexsum_8k", "multi_lexsum", root, tmp_path, counter)
    assert [r["id"] for r in rows] == ["multi_lexsum_B-2"]
    assert report.skipped[0].record == "A-1" and "A-1-0002" in report.skipped[0].reason


def test_registered_entry_point():
    from mmlbdata.dataset.registry import resolve

    for name in ("gov_report_8k", "gov_report_128k", "multi_lexsum_32k"):
        entry = resolve(name)
        assert entry.builder is Summarization and entry.config.metric == "summ_judge"


# --- real PDFs as source documents -------------------------------------------------------------

REAL = ["2312.09390v1.pdf", "ddoseattle-150627210357-lva1-app6891_95.pdf", "Macbook_air.pdf"]


def _real_lexsum(root, real_data):
    """A Multi-LexSum case whose source documents are three real PDFs (paper, slides, manual)."""
    docs = ["RL-XX-0001-0001", "RL-XX-0001-0002", "RL-XX-0001-0003"]
    make_lexsum_release(root, {"RL-XX-0001": docs}, pages={})
    (root / "pdfs").mkdir(parents=True, exist_ok=True)
    for doc_id, name in zip(docs, REAL):
        (root / "pdfs" / f"{doc_id}.pdf").symlink_to(real_data / "mmlongbench_doc" / "documents" / name)
    return docs


@pytest.mark.parametrize("length", ["8k", pytest.param("32k", marks=pytest.mark.slow)])
def test_multi_lexsum_on_real_pdfs(tmp_path, real_data, counter, length):
    _real_lexsum(tmp_path / "rel", real_data)
    # the three real documents take 317K tokens: over 128K + 24K, so dropped by default
    rows, report = build(f"multi_lexsum_{length}", "multi_lexsum", tmp_path / "rel", tmp_path, counter)
    assert rows == [] and "more than 128K" in report.skipped[0].reason
    rows, report = build(f"multi_lexsum_{length}", "multi_lexsum", tmp_path / "rel", tmp_path, counter,
                         options={"max_overflow_tokens": 400_000})
    assert report.num_skipped == 0 and len(rows) == 1
    meta = check_invariant(rows[0], counter)
    assert meta["next_num_tokens"] is not None
    kept = [d["pages_kept"] for d in meta["documents"]]
    assert max(kept) - min(kept) <= 1 and kept == sorted(kept, reverse=True)
    # page images are the renderings of the pages meta names, sizes from the page rect
    for image, (doc_id, index) in list(zip(rows[0]["images"], meta["pages"]))[::4]:
        path = tmp_path / "rel" / "pdfs" / f"{doc_id}.pdf"
        assert (image.width, image.height) == pdf.page_pixel_sizes(path)[index]
        assert image.read_bytes() == pdf.render_page_png(path, index)


def test_gov_report_on_a_real_pdf_without_highlights(tmp_path, real_data, counter):
    root = tmp_path / "rel"
    base = make_govreport_release(root, ["GAO-12-604"], with_pdfs=False)
    (base / "pdfs").mkdir()
    (base / "pdfs" / "gao-12-604.pdf").symlink_to(real_data / "mmlongbench_doc" / "documents" / REAL[0])
    rows, report = build("gov_report_16k", "govreport", root, tmp_path, counter)
    meta = check_invariant(rows[0], counter)
    assert meta["highlights_pages"] == [] and [i for _, i in meta["pages"]] == list(range(len(meta["pages"])))
    rows, report = build("gov_report_8k", "govreport", root, tmp_path, counter, options={"require_highlights": True})
    assert rows == [] and "no GAO highlights page" in report.skipped[0].reason


def test_mmlb_fetch_command_downloads_and_resumes(tmp_path, capsys):
    from mmlbdata.cli import main

    root, files = gao_release_without_pdfs(tmp_path, "/a", body_pages=1)
    bad = dict(files)
    del bad["/a/gao-14-1.pdf"]
    argv = ["fetch", f"govreport={root}", "--no-progress", "--retries", "0"]
    with LoopbackServer(bad) as srv:
        assert main(argv + ["--url-template", srv.url("/a/{doc_id}.pdf")]) == 1
    assert "1 downloaded, 0 already present, 1 failed" in capsys.readouterr().out
    with LoopbackServer(files) as srv:
        assert main(argv + ["--url-template", srv.url("/a/{doc_id}.pdf")]) == 0
        assert srv.count("/a/gao-12-604.pdf") == 0  # already there
    assert "1 downloaded, 1 already present, 0 failed" in capsys.readouterr().out
    assert (root / "gov-report" / "pdfs" / "gao-14-1.pdf").read_bytes() == files["/a/gao-14-1.pdf"]


def test_mmlb_fetch_multi_lexsum_release_from_a_hub_endpoint_then_pdfs(tmp_path, capsys):
    """`--release` pulls the release files through the Hub's resolve URLs (loopback endpoint)."""
    from mmlbdata.cli import main

    src = tmp_path / "src"
    make_lexsum_release(src, {"A-1": ["A-1-0001", "A-1-0002"]})
    base = src / "releases" / "v20230518"
    files = {f"/datasets/allenai/multi_lexsum/resolve/main/releases/v20230518/{n}": (base / n).read_bytes()
             for n in ("test.json", "sources.json")}
    files.update({f"/doc/{d}": (src / "pdfs" / f"{d}.pdf").read_bytes() for d in ("A-1-0001", "A-1-0002")})
    root = tmp_path / "rel"
    with LoopbackServer(files) as srv:
        urls = tmp_path / "urls.json"
        urls.write_text(json.dumps({d: srv.url(f"/doc/{d}") for d in ("A-1-0001", "A-1-0002")}))
        code = main(["fetch", f"multi_lexsum={root}", "--release", "--endpoint", srv.url(""), "--no-progress",
                     "--retries", "0", "--urls", str(urls)])
    out = capsys.readouterr().out
    # train/dev are not served: reported, and the command stops before the PDFs
    assert code == 1 and "2 downloaded, 0 already present, 2 failed" in out and "train.json" in out
    # placed by hand, non-empty: an empty file is never taken as fetched (issue #27)
    (root / "releases" / "v20230518" / "train.json").write_text("{}\n")
    (root / "releases" / "v20230518" / "dev.json").write_text("{}\n")
    with LoopbackServer(files) as srv:
        urls.write_text(json.dumps({d: srv.url(f"/doc/{d}") for d in ("A-1-0001", "A-1-0002")}))
        code = main(["fetch", f"multi_lexsum={root}", "--release", "--endpoint", srv.url(""), "--no-progress",
                     "--urls", str(urls)])
    assert code == 0
    assert (root / "releases" / "v20230518" / "sources.json").read_bytes() == (base / "sources.json").read_bytes()
    assert (root / "pdfs" / "A-1-0002.pdf").read_bytes() == files["/doc/A-1-0002"]


def test_gov_report_highlights_only_pdf_is_reported(tmp_path, counter):
    root = tmp_path / "rel"
    base = make_govreport_release(root, ["GAO-12-604"], size=SMALL)
    doc = pymupdf.open(base / "pdfs" / "gao-12-604.pdf")
    doc.select([1])  # keep only the highlights page (GAO also publishes these alone)
    doc.save(base / "pdfs" / "only.pdf")
    doc.close()
    (base / "pdfs" / "only.pdf").replace(base / "pdfs" / "gao-12-604.pdf")
    rows, report = build("gov_report_8k", "govreport", root, tmp_path, counter)
    assert rows == [] and "no report body" in report.skipped[0].reason


def test_max_pages_option(lexsum_release, tmp_path, counter):
    rows, _ = build("multi_lexsum_128k", "multi_lexsum", lexsum_release, tmp_path, counter, options={"max_pages": 5})
    docs = {d["doc_id"]: d for d in json.loads(rows[0]["meta"])["documents"]}
    assert docs["EE-AL-0045-0001"]["pages_available"] == 5 and docs["EE-AL-0045-0002"]["pages_available"] == 4
    assert all(i < 5 for _, i in json.loads(rows[0]["meta"])["pages"])


# --- MMLongBench appendix B.4: "discard examples that exceed the 128K context length by more
# --- than 24K tokens" (128K = 131,072; 24K = 24,576; so the full input may reach 155,648)

BIG = (1000, 1000)  # 2000x2000 px at 144 dpi: 5,041 tokens a page


def test_gov_report_24k_over_128k_rule_at_its_boundary(tmp_path, counter):
    """A report 1-24K over 128K is kept (truncated to the length); one more than 24K over is
    dropped, with the same verdict at every length."""
    page = counter.image(2000, 2000)
    assert page == 5041  # 72x72 merged patches after smart_resize (2016x2016)
    root = tmp_path / "rel"
    base = make_govreport_release(root, ["GAO-20-1", "GAO-20-2"], body_pages=27, size=BIG)
    make_gao_pdf(base / "pdfs" / "gao-20-2.pdf", "GAO-20-2", body_pages=31, size=BIG)
    for length in ("8k", "16k"):
        rows, report = build(f"gov_report_{length}", "govreport", root, tmp_path, counter)
        assert [r["id"] for r in rows] == ["gov_report_gao-20-1"]
        meta = check_invariant(rows[0], counter)
        assert 131_072 < meta["full_num_tokens"] <= 155_648  # cover + 27 body pages, no highlights
        assert meta["full_num_tokens"] > 28 * page
        [skip] = report.skipped
        assert skip.record == "GAO_GAO-20-2" and "gao-20-2.pdf" in skip.file
        full = int(skip.reason.split(" take ")[1].split()[0])
        assert full > 155_648 and "more than 128K + 24576 = 155648" in skip.reason


def test_multi_lexsum_24k_over_128k_rule_counts_every_document(tmp_path, counter):
    """Multi-LexSum: the rule applies to all documents of a case together."""
    cases = {"CASE-A": ["A-1", "A-2"], "CASE-B": ["B-1", "B-2"]}
    pages = {"A-1": 14, "A-2": 14, "B-1": 16, "B-2": 15}  # 28 pages ~ 141K; 31 pages ~ 156.3K
    root = tmp_path / "rel"
    make_lexsum_release(root, cases, pages={})
    for doc_id, count in pages.items():
        make_plain_pdf(root / "pdfs" / f"{doc_id}.pdf", count, doc_id, size=BIG)
    rows, report = build("multi_lexsum_16k", "multi_lexsum", root, tmp_path, counter)
    assert [r["id"] for r in rows] == ["multi_lexsum_CASE-A"]
    meta = check_invariant(rows[0], counter)
    assert 131_072 < meta["full_num_tokens"] <= 155_648
    assert [d["pages_kept"] for d in meta["documents"]] == [2, 1]  # 16K holds 3 pages, evenly cut
    [skip] = report.skipped
    assert skip.record == "CASE-B" and "more than 128K + 24576" in skip.reason


def test_gov_report_extended_lengths_lift_the_cap_and_say_when_pages_run_out(tmp_path, counter):
    """256K: the cap is 256K + 24K, so the report dropped at 128K (31 big pages, > 155,648 tokens) is
    kept; both reports are shorter than 256K, so each row holds the whole report and the build
    notes, per question, that the source ran out of pages."""
    root = tmp_path / "rel"
    base = make_govreport_release(root, ["GAO-20-1", "GAO-20-2"], body_pages=27, size=BIG)
    make_gao_pdf(base / "pdfs" / "gao-20-2.pdf", "GAO-20-2", body_pages=31, size=BIG)
    rows, report = build("gov_report_256k", "govreport", root, tmp_path, counter)
    assert [r["id"] for r in rows] == ["gov_report_gao-20-1", "gov_report_gao-20-2"] and report.num_skipped == 0
    for row in rows:
        meta = check_invariant(row, counter)
        assert meta["next_num_tokens"] is None and row["num_tokens"] == meta["full_num_tokens"] > 131_072
    ran_out = [n for n in report.notes if "ran out of pages" in n]
    assert len(ran_out) == 2 and all("gov_report_256k" in n and "of 262144 tokens" in n for n in ran_out)
