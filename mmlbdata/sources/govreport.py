"""GovReport (Huang et al., NAACL 2021), GAO part: records, report PDFs, highlights pages.

Original release layout (``gov-report/`` from gov-report-data.github.io)::

    gov-report/gao/GAO_GAO-12-604.json      one record per report
    gov-report/crs/R45461.json              CRS reports (not used: no structured summary)
    gov-report/split_ids/gao_test.ids       one record id per line (also _train, _valid)

A GAO record is ``{"id", "url", "title", "released_date", "published_date", "fastfact": [str],
"report": [section], "highlight": [{"section_title", "paragraphs": [str]}]}`` with sections
``{"section_title", "paragraphs", "subsections": [section]}``. The highlight is GAO's own
structured summary: "Why GAO Did This Study", "What GAO Found", "What GAO Recommends".

The release has no PDFs; MMLongBench renders GAO's published report PDF. They live next to the
records as ``pdfs/<doc_id>.pdf`` with ``doc_id`` the lower-case product number (``gao-12-604``),
the name GAO itself uses under ``https://www.gao.gov/assets/``; :func:`pdf_specs` +
:func:`mmlbdata.sources.download.download_all` fetch them.

The PDF's front "Highlights" page(s) print that very summary, so they are found with PyMuPDF
text search (:func:`find_highlights_pages`) and removed by the builder.
"""
from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Mapping, Sequence

from mmlbdata.sources.download import FileSpec

log = logging.getLogger(__name__)

HIGHLIGHT_SECTIONS = ("Why GAO Did This Study", "What GAO Found", "What GAO Recommends")
# Text that only GAO's highlights page carries ("Highlights of GAO-12-604, a report to ...").
HIGHLIGHTS_MARKERS = ("Highlights of GAO-", "GAO Highlights")
GAO_PDF_URL = "https://www.gao.gov/assets/{doc_id}.pdf"
_GAO_ID = re.compile(r"^(?:GAO_)?(GAO-\d{2}-\d+[A-Z]*)$", re.IGNORECASE)

SkipFn = Callable[[str, str, str], None]


def _log_skip(file: str, record: str, reason: str) -> None:
    log.warning("skipped %s record %s: %s", file, record, reason)


def gao_doc_id(record_id: str) -> str | None:
    """``GAO_GAO-12-604`` / ``GAO-12-604`` -> ``gao-12-604``; None for a non-GAO (CRS) id."""
    m = _GAO_ID.match(record_id.strip())
    return m.group(1).lower() if m else None


@dataclass(frozen=True)
class GaoRecord:
    id: str                     # the release's record id, e.g. GAO_GAO-12-604
    doc_id: str                 # gao-12-604: PDF name, prompt id
    title: str
    url: str | None
    released_date: str | None
    highlight: tuple[tuple[str, tuple[str, ...]], ...]  # (section_title, paragraphs)
    fastfact: tuple[str, ...] = ()
    report_sections: int = 0
    source_file: str = field(default="", compare=False)

    @property
    def reference(self) -> str:
        """The structured summary, as MMLongBench joins it: ``Title:\\npara\\npara`` per section."""
        return "\n\n".join(f"{title}:\n" + "\n".join(paras) for title, paras in self.highlight)

    @property
    def section_titles(self) -> list[str]:
        return [title for title, _ in self.highlight]

    @property
    def summary_paragraphs(self) -> list[str]:
        return [p for _, paras in self.highlight for p in paras]


def _parse_highlight(raw) -> tuple[tuple[str, tuple[str, ...]], ...]:
    if not isinstance(raw, list) or not raw:
        raise ValueError("no 'highlight' sections")
    out = []
    for section in raw:
        title = str(section.get("section_title", "")).strip()
        paras = tuple(str(p).strip() for p in section.get("paragraphs", []) if str(p).strip())
        if not title or not paras:
            raise ValueError(f"malformed highlight section {title!r}")
        out.append((title, paras))
    return tuple(out)


def parse_record(data: Mapping, source_file: str = "") -> GaoRecord:
    """One GAO json record -> :class:`GaoRecord` (ValueError names what is wrong)."""
    record_id = str(data.get("id", ""))
    doc_id = gao_doc_id(record_id)
    if doc_id is None:
        raise ValueError(f"not a GAO report id: {record_id!r}")
    return GaoRecord(
        id=record_id, doc_id=doc_id, title=str(data.get("title", "")).strip(),
        url=data.get("url"), released_date=data.get("released_date"),
        highlight=_parse_highlight(data.get("highlight")),
        fastfact=tuple(str(x) for x in data.get("fastfact") or []),
        report_sections=len(data.get("report") or []), source_file=source_file,
    )


def release_root(root: Path) -> Path:
    """Accept the folder holding ``gov-report/`` or ``gov-report/`` itself."""
    root = Path(root)
    return root / "gov-report" if (root / "gov-report" / "gao").is_dir() else root


def _split_ids(root: Path, split: str | None) -> list[str] | None:
    if split in (None, "all"):
        return None
    ids_file = root / "split_ids" / f"gao_{split}.ids"
    if not ids_file.is_file():
        raise FileNotFoundError(f"{ids_file}: split file of the GovReport release not found")
    return [line.strip() for line in ids_file.read_text().splitlines() if line.strip()]


def iter_records(root: Path, split: str | None = "test", on_skip: SkipFn = _log_skip,
                 ) -> Iterator[GaoRecord]:
    """GAO records of a split (``None``/"all": every file), sorted by file name; CRS never."""
    root = release_root(root)
    gao_dir = root / "gao"
    if not gao_dir.is_dir():
        raise FileNotFoundError(f"{gao_dir}: no 'gao' folder (GovReport release layout expected)")
    ids = _split_ids(root, split)
    files = sorted(gao_dir.glob("*.json")) if ids is None else [gao_dir / f"{i}.json" for i in sorted(ids)]
    for path in files:
        name = path.stem
        if gao_doc_id(name) is None:
            continue  # not a GAO product (the split files list GAO ids only; be safe)
        try:
            with open(path, encoding="utf-8") as f:
                yield parse_record(json.load(f), source_file=str(path))
        except FileNotFoundError:
            on_skip(str(path), name, "record listed in the split file is missing")
        except (ValueError, AttributeError, TypeError) as err:
            on_skip(str(path), name, f"bad record: {err}")


def pdf_path(root: Path, record: GaoRecord, pdf_dir: Path | None = None) -> Path:
    return Path(pdf_dir or release_root(root) / "pdfs") / f"{record.doc_id}.pdf"


def pdf_specs(records, dest_dir: Path, url_template: str = GAO_PDF_URL,
              urls: Mapping[str, str] | None = None,
              checksums: Mapping[str, str] | None = None) -> list[FileSpec]:
    """Download specs for the records' PDFs: ``urls[doc_id]`` if given, else the template.

    ``checksums`` maps doc_id -> sha256 (e.g. from a previous build's manifest).
    """
    specs = []
    for record in records:
        doc_id = record.doc_id if isinstance(record, GaoRecord) else gao_doc_id(str(record)) or str(record)
        url = (urls or {}).get(doc_id) or url_template.format(doc_id=doc_id)
        specs.append(FileSpec(url, Path(dest_dir) / f"{doc_id}.pdf", sha256=(checksums or {}).get(doc_id)))
    return specs


def _normalize(text: str) -> str:
    """Lower-case, words joined by single spaces, line-end hyphenation undone."""
    return " ".join(re.sub(r"-\s*\n\s*", "", text).lower().split())


def summary_snippets(paragraphs, words: int = 10) -> list[str]:
    """The opening ``words`` words of every summary paragraph long enough to be distinctive."""
    out = []
    for paragraph in paragraphs:
        tokens = _normalize(paragraph).split()
        if len(tokens) >= words:
            out.append(" ".join(tokens[:words]))
    return out


def find_highlights_pages(doc, max_front_pages: int = 8, summary: Sequence[str] = ()) -> list[int]:
    """0-based indices of the GAO "Highlights" pages at the front of an open PyMuPDF document.

    A run of highlights pages starts at a page where PyMuPDF's text search finds the highlights
    marker ("Highlights of GAO-...") or one of the three section headings, and continues over the
    following pages that also carry a heading, or, when the record's ``summary`` paragraphs are
    given, the opening words of one of them (a highlights page that continues "What GAO Found"
    without repeating the heading). Only the first ``max_front_pages`` pages are searched (the
    headings may be quoted in the body), and only the first run is returned: the body is kept.
    """
    snippets = summary_snippets(summary)
    pages: list[int] = []
    for index in range(min(max_front_pages, doc.page_count)):
        page = doc[index]
        hit = any(page.search_for(text) for text in HIGHLIGHTS_MARKERS + HIGHLIGHT_SECTIONS)
        if not hit and pages and snippets:
            text = _normalize(page.get_text())
            hit = any(snippet in text for snippet in snippets)
        if hit:
            pages.append(index)
        elif pages:
            break
    return pages
