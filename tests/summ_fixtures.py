"""Realistic GovReport / Multi-LexSum releases and GAO-like PDFs, made in the tests.

No real samples of these sources ship with the test data, so the fixtures follow the original
release schemas exactly (see mmlbdata/sources/govreport.py and multi_lexsum.py) and the PDFs are
drawn with PyMuPDF: a GAO report has a cover page, a "GAO Highlights" page (one or two) with the
three structured-summary headings, then body pages.
"""
from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pymupdf

WHY = "Why GAO Did This Study"
FOUND = "What GAO Found"
RECOMMENDS = "What GAO Recommends"


def gao_record(number: str, n_found_paras: int = 2) -> dict:
    """A GAO record in GovReport's release format (``gao/GAO_<number>.json``)."""
    return {
        "id": f"GAO_{number}",
        "url": f"https://www.gao.gov/products/{number}",
        "title": f"Federal Programs: Oversight Needed ({number})",
        "released_date": "2012-06-14",
        "published_date": "2012-06-14",
        "fastfact": [f"Fast fact about {number}."],
        "report": [
            {"section_title": "Letter", "paragraphs": ["We reviewed the program."],
             "subsections": [{"section_title": "Background", "paragraphs": ["Since 2005 ..."],
                              "subsections": []}]},
        ],
        "highlight": [
            {"section_title": WHY, "paragraphs": [f"Congress asked GAO to review {number}."]},
            {"section_title": FOUND,
             "paragraphs": [f"Finding {i} of {number}: the agency lacks data." for i in range(n_found_paras)]},
            {"section_title": RECOMMENDS, "paragraphs": ["GAO recommends that the agency collect data."]},
        ],
    }


def crs_record(rid: str) -> dict:
    return {"id": rid, "title": "A CRS report", "released_date": "2019-01-01",
            "reports": {"section_title": "", "paragraphs": ["text"], "subsections": []},
            "summary": ["CRS summary."]}


def _page(doc, lines: list[str], size=(612, 792)) -> None:
    """A page with ``lines`` written top-down (wrapped to the page width, font scaled to it)."""
    page = doc.new_page(width=size[0], height=size[1])
    fontsize = max(4.0, 11 * min(1.0, size[0] / 612))
    margin = size[0] * 0.08
    width_chars = int((size[0] - 2 * margin) / (fontsize * 0.5))
    wrapped = [w for line in lines for w in textwrap.wrap(line, width_chars) or [""]]
    page.insert_text((margin, margin + fontsize), "\n".join(wrapped), fontsize=fontsize)


def make_gao_pdf(path: Path, number: str, body_pages: int = 6, highlights_pages: int = 1,
                 quote_heading_in_body: bool = True, size=(612, 792),
                 continuation: list[str] | None = None) -> Path:
    """Cover, highlights page(s), then body pages (one of which quotes a heading)."""
    doc = pymupdf.open()
    _page_sized = lambda lines: _page(doc, lines, size=size)  # noqa: E731
    _page_sized(["United States Government Accountability Office", "Report to Congressional Requesters",
                "June 2012", "FEDERAL PROGRAMS", "Oversight Needed", number])
    _page_sized(["GAO Highlights", f"Highlights of {number}, a report to congressional requesters",
                WHY, "Congress asked GAO to review the program.", FOUND,
                "The agency lacks reliable data.", RECOMMENDS, "GAO recommends collecting data.",
                f"View {number}. For more information, contact the director."])
    for extra in range(highlights_pages - 1):
        _page_sized([f"{FOUND} (continued)", f"More findings, part {extra + 2}."])
    if continuation:  # a highlights page that goes on without any heading
        _page_sized(continuation)
    for i in range(body_pages):
        lines = [f"{number} Federal Programs", f"Page {i + 1}", "Letter body text. " * 20]
        if quote_heading_in_body and i == 2:
            lines.append(f"As described in the section {FOUND} above, the agency ...")
        _page_sized(lines)
    path.parent.mkdir(parents=True, exist_ok=True)
    doc.save(path)
    doc.close()
    return path


def make_plain_pdf(path: Path, pages: int, label: str, size=(612, 792)) -> Path:
    doc = pymupdf.open()
    for i in range(pages):
        _page(doc, [f"{label} page {i + 1}", "Court filing text. " * 15], size=size)
    path.parent.mkdir(parents=True, exist_ok=True)
    doc.save(path)
    doc.close()
    return path


def make_govreport_release(root: Path, numbers: list[str], split: str = "test",
                           with_pdfs: bool = True, **pdf_kwargs) -> Path:
    """``root/gov-report/{gao,crs,split_ids}`` plus ``root/gov-report/pdfs/<doc_id>.pdf``."""
    base = root / "gov-report"
    (base / "gao").mkdir(parents=True, exist_ok=True)
    (base / "crs").mkdir(parents=True, exist_ok=True)
    (base / "split_ids").mkdir(parents=True, exist_ok=True)
    for number in numbers:
        (base / "gao" / f"GAO_{number}.json").write_text(json.dumps(gao_record(number)))
        if with_pdfs:
            make_gao_pdf(base / "pdfs" / f"{number.lower()}.pdf", number, **pdf_kwargs)
    (base / "crs" / "R45461.json").write_text(json.dumps(crs_record("R45461")))
    (base / "split_ids" / f"gao_{split}.ids").write_text("".join(f"GAO_{n}\n" for n in numbers))
    (base / "split_ids" / f"crs_{split}.ids").write_text("R45461\n")
    return base


def lexsum_case(case_id: str, doc_ids: list[str], short: str | None = "default") -> dict:
    return {
        "case_id": case_id,
        "case_documents": doc_ids,
        "summary/long": f"Long summary of {case_id}.\n\nSecond paragraph.",
        "summary/short": (f"On March 8, 2014, plaintiffs sued in case {case_id}. The court granted "
                          "a preliminary injunction and the parties settled.") if short == "default" else short,
        "summary/tiny": f"Plaintiffs sued ({case_id}).",
        "case_metadata": {"case_name": f"Doe v. City ({case_id})", "filing_year": "2014"},
    }


def lexsum_source(doc_id: str) -> dict:
    return {"doc_text": f"Case document {doc_id} full text. " * 50, "doc_type": "Complaint",
            "doc_title": f"Complaint {doc_id}", "parser": "pdfminer",
            "url": f"https://clearinghouse.net/doc/{doc_id}"}


def make_lexsum_release(root: Path, cases: dict[str, list[str]], version: str = "v20230518",
                        pages: dict[str, int] | None = None, extra_sources: int = 3,
                        bad_line: bool = False) -> Path:
    """``root/releases/<version>/{test.json,sources.json}`` and ``root/pdfs/<doc_id>.pdf``."""
    base = root / "releases" / version
    base.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(lexsum_case(cid, docs)) for cid, docs in cases.items()]
    if bad_line:
        lines.insert(1, "{not json")
    (base / "test.json").write_text("\n".join(lines) + "\n")
    sources = {d: lexsum_source(d) for docs in cases.values() for d in docs}
    sources.update({f"ZZ-XX-{i:04d}-0001": lexsum_source(f"ZZ-XX-{i:04d}-0001") for i in range(extra_sources)})
    (base / "sources.json").write_text(json.dumps(dict(sorted(sources.items())), indent=1))
    for docs in cases.values():
        for d in docs:
            if pages is None or d in pages:
                make_plain_pdf(root / "pdfs" / f"{d}.pdf", (pages or {}).get(d, 3), d)
    return base
