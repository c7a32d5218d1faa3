"""GovReport / Multi-LexSum readers on fixtures in the original release schemas."""
from __future__ import annotations

import hashlib
import json

import pymupdf
import pytest

from loopback_http import LoopbackServer
from mmlbdata.sources.download import download_all
from mmlbdata.sources import govreport, multi_lexsum
from mmlbdata.sources.jsonstream import iter_object_items
from summ_fixtures import (FOUND, RECOMMENDS, WHY, gao_record, make_gao_pdf, make_govreport_release,
                           make_lexsum_release)


# --- GovReport ---------------------------------------------------------------------------------

def test_gao_doc_id():
    assert govreport.gao_doc_id("GAO_GAO-12-604") == "gao-12-604"
    assert govreport.gao_doc_id("GAO-13-871T") == "gao-13-871t"
    assert govreport.gao_doc_id("R45461") is None
    assert govreport.gao_doc_id("CRS_RL33110") is None


def test_reference_is_the_structured_summary():
    rec = govreport.parse_record(gao_record("GAO-12-604"))
    assert rec.section_titles == [WHY, FOUND, RECOMMENDS]
    assert rec.reference == (
        f"{WHY}:\nCongress asked GAO to review GAO-12-604.\n\n"
        f"{FOUND}:\nFinding 0 of GAO-12-604: the agency lacks data.\n"
        "Finding 1 of GAO-12-604: the agency lacks data.\n\n"
        f"{RECOMMENDS}:\nGAO recommends that the agency collect data.")


def test_iter_records_reads_split_skips_crs_and_bad(tmp_path):
    base = make_govreport_release(tmp_path, ["GAO-12-604", "GAO-10-1", "GAO-11-22"], with_pdfs=False)
    bad = json.loads((base / "gao" / "GAO_GAO-11-22.json").read_text())
    bad["highlight"] = []
    (base / "gao" / "GAO_GAO-11-22.json").write_text(json.dumps(bad))
    with open(base / "split_ids" / "gao_test.ids", "a") as f:
        f.write("GAO_GAO-99-999\n")  # listed but missing
    skipped = []
    records = list(govreport.iter_records(tmp_path, on_skip=lambda *a: skipped.append(a)))
    assert [r.doc_id for r in records] == ["gao-10-1", "gao-12-604"]  # sorted, CRS never read
    reasons = {rec: why for _, rec, why in skipped}
    assert "no 'highlight'" in reasons["GAO_GAO-11-22"] and "missing" in reasons["GAO_GAO-99-999"]
    assert all(str(base) in f for f, _, _ in skipped)


def test_iter_records_all_files(tmp_path):
    make_govreport_release(tmp_path, ["GAO-12-604"], split="train", with_pdfs=False)
    assert [r.doc_id for r in govreport.iter_records(tmp_path / "gov-report", split=None)] == ["gao-12-604"]
    with pytest.raises(FileNotFoundError, match="gao_test.ids"):
        list(govreport.iter_records(tmp_path, split="test"))


@pytest.mark.parametrize("n_highlights", [1, 2])
def test_find_highlights_pages(tmp_path, n_highlights):
    path = make_gao_pdf(tmp_path / "g.pdf", "GAO-12-604", body_pages=5, highlights_pages=n_highlights)
    with pymupdf.open(path) as doc:
        pages = govreport.find_highlights_pages(doc)
        assert pages == list(range(1, 1 + n_highlights))  # cover kept; body quote (page 4+) kept
        kept = [i for i in range(doc.page_count) if i not in pages]
        for i in kept:
            text = doc[i].get_text()
            assert WHY not in text and "Highlights of" not in text


def test_find_highlights_pages_none(tmp_path, real_data):
    with pymupdf.open(real_data / "mmlongbench_doc" / "documents" / "2312.09390v1.pdf") as doc:
        assert govreport.find_highlights_pages(doc) == []


def test_gao_pdfs_download_by_id_from_loopback(tmp_path):
    pdf = make_gao_pdf(tmp_path / "src" / "gao-12-604.pdf", "GAO-12-604").read_bytes()
    rec = govreport.parse_record(gao_record("GAO-12-604"))
    with LoopbackServer({"/assets/gao-12-604.pdf": pdf}) as srv:
        specs = govreport.pdf_specs([rec], tmp_path / "pdfs", url_template=srv.url("/assets/{doc_id}.pdf"),
                                    checksums={"gao-12-604": hashlib.sha256(pdf).hexdigest()})
        report = download_all(specs, progress=False)
    assert report.ok and (tmp_path / "pdfs" / "gao-12-604.pdf").read_bytes() == pdf
    assert govreport.pdf_path(tmp_path, rec, tmp_path / "pdfs") == specs[0].dest


# --- Multi-LexSum ------------------------------------------------------------------------------

def test_iter_object_items_streams_in_small_chunks(tmp_path):
    data = {"a": {"doc_text": "x" * 5000, "n": [1, 2.5, None, True]}, "b\"q": 12345, "c": "é"}
    path = tmp_path / "s.json"
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False))
    assert dict(iter_object_items(path, chunk=7)) == data
    path.write_text('{"a": 1, "b": ')
    with pytest.raises(ValueError, match="truncated"):
        list(iter_object_items(path, chunk=4))


def test_iter_cases(tmp_path):
    make_lexsum_release(tmp_path, {"EE-AL-0045": ["EE-AL-0045-0001", "EE-AL-0045-0002"],
                                   "PC-CA-0001": ["PC-CA-0001-0003"]}, bad_line=True)
    skipped = []
    cases = list(multi_lexsum.iter_cases(tmp_path, on_skip=lambda *a: skipped.append(a)))
    assert [c.case_id for c in cases] == ["EE-AL-0045", "PC-CA-0001"]
    assert [d.doc_id for d in cases[0].documents] == ["EE-AL-0045-0001", "EE-AL-0045-0002"]
    assert cases[0].documents[0].title == "Complaint EE-AL-0045-0001"
    assert cases[0].documents[0].url == "https://clearinghouse.net/doc/EE-AL-0045-0001"
    assert cases[0].reference.startswith("On March 8, 2014") and cases[0].reference == cases[0].summary_short
    assert len(skipped) == 1 and skipped[0][1] == "line 2"


def test_iter_cases_skips_without_short_summary_or_documents(tmp_path):
    base = make_lexsum_release(tmp_path, {"A-1": ["A-1-0001"], "B-2": ["B-2-0001"], "C-3": ["C-3-0001"]})
    lines = [json.loads(x) for x in (base / "test.json").read_text().splitlines()]
    lines[0]["summary/short"] = None
    lines[1]["case_documents"].append("NOT-IN-SOURCES")
    (base / "test.json").write_text("\n".join(json.dumps(x) for x in lines))
    skipped = []
    cases = list(multi_lexsum.iter_cases(base, on_skip=lambda *a: skipped.append(a)))
    assert [c.case_id for c in cases] == ["C-3"]
    assert {r for _, r, _ in skipped} == {"A-1", "B-2"}


def test_lexsum_pdfs_download_from_loopback(tmp_path):
    make_lexsum_release(tmp_path / "rel", {"A-1": ["A-1-0001", "A-1-0002"]})
    cases = list(multi_lexsum.iter_cases(tmp_path / "rel"))
    files = {f"/doc/{d}": (tmp_path / "rel" / "pdfs" / f"{d}.pdf").read_bytes() for d in ["A-1-0001", "A-1-0002"]}
    with LoopbackServer(files) as srv:
        urls = {d: srv.url(f"/doc/{d}") for d in ["A-1-0001", "A-1-0002"]}
        report = download_all(multi_lexsum.pdf_specs(cases, tmp_path / "pdfs", urls=urls), progress=False)
    assert report.ok
    for d in ["A-1-0001", "A-1-0002"]:
        assert (tmp_path / "pdfs" / f"{d}.pdf").read_bytes() == files[f"/doc/{d}"]


def test_highlights_continuation_without_heading_found_from_the_summary(tmp_path):
    """GAO highlights may run onto a page with no heading; the record's summary finds it."""
    rec = govreport.parse_record(gao_record("GAO-12-604"))
    finding = rec.highlight[1][1][1]  # "Finding 1 of GAO-12-604: the agency lacks data."
    long_finding = finding + " It also did not track its spending on the program."
    rec_paras = rec.summary_paragraphs[:-1] + [long_finding]
    path = make_gao_pdf(tmp_path / "g.pdf", "GAO-12-604", body_pages=4,
                        continuation=["Figure 2: Program spending", long_finding, "Source: GAO analysis."])
    with pymupdf.open(path) as doc:
        assert govreport.find_highlights_pages(doc) == [1]  # headings alone miss page 2
        assert govreport.find_highlights_pages(doc, summary=rec_paras) == [1, 2]
        # a body page quoting the summary is not part of the run: the run has ended
        assert govreport.find_highlights_pages(doc, summary=["Letter body text. " * 4]) == [1]


def test_summary_snippets_normalize():
    assert govreport.summary_snippets(["The  Agency lacks-\n ing data on its\nprogram costs and outcomes today."]) == [
        "the agency lacksing data on its program costs and outcomes"]
    assert govreport.summary_snippets(["Too short."]) == []
