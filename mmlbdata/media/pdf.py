"""Render PDF pages to PNG images, once per (document, page, dpi), through the image store.

Why this module exists: every document benchmark (MMLongBench-Doc, GovReport, Multi-LexSum,
the padded DocVQA configs) needs the same three things from a PDF: its page count, the pixel size
of a page at a DPI (to count image tokens *without* rendering), and the rendered page itself. The
size is computed from the page rectangle exactly the way MuPDF sizes the pixmap, so the token count
of a page never needs a second render, and only the pages that end up in an example are rendered.

Broken input is reported as :class:`PdfError` naming the file (and the page): encrypted files,
truncated or unreadable files, documents with no pages, and pages whose object is missing or empty
(MuPDF silently substitutes a blank Letter page for those, which would put a wrong image in an
example).
"""
from __future__ import annotations

import atexit
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, Sequence

from mmlbdata.core.parallel import map_units, units_on_ray

if TYPE_CHECKING:  # pragma: no cover
    import pymupdf as fitz

DEFAULT_DPI = 144
_TAIL_BYTES = 2048  # a complete PDF ends with "%%EOF" (plus optional whitespace/garbage)


class PdfError(Exception):
    """A PDF (or one of its pages) that cannot be used; the message names the file and page."""

    def __init__(self, path: str | os.PathLike, reason: str, page: int | None = None):
        self.path = str(path)
        self.page = page
        self.reason = reason
        where = self.path if page is None else f"{self.path} (page index {page})"
        super().__init__(f"{where}: {reason}")

    def __reduce__(self):  # picklable across worker processes
        return (PdfError, (self.path, self.reason, self.page))


def _pymupdf():
    import pymupdf  # lazily: importing MuPDF costs ~0.1 s and not every command needs it

    return pymupdf


def _is_truncated(path: Path) -> bool:
    """True when the file lacks its closing ``%%EOF`` marker.

    MuPDF "repairs" a cut-off file and then renders blank default-size pages for the objects it
    lost, so truncation has to be caught before opening.
    """
    size = path.stat().st_size
    with open(path, "rb") as handle:
        handle.seek(max(0, size - _TAIL_BYTES))
        return b"%%EOF" not in handle.read()


def open_pdf(path: str | os.PathLike) -> "fitz.Document":
    """Open a PDF for reading, or raise :class:`PdfError` saying why it cannot be used."""
    pymupdf = _pymupdf()
    path = Path(path)
    if not path.is_file():
        raise PdfError(path, "file not found")
    if _is_truncated(path):
        raise PdfError(path, "truncated PDF (no %%EOF marker at the end of the file)")
    try:
        doc = pymupdf.open(str(path), filetype="pdf")
    except Exception as exc:  # MuPDF raises FileDataError / RuntimeError variants
        raise PdfError(path, f"unreadable PDF ({type(exc).__name__}: {exc})") from exc
    if doc.needs_pass or doc.is_encrypted:
        doc.close()
        raise PdfError(path, "encrypted PDF (password required)")
    if doc.page_count == 0:
        doc.close()
        raise PdfError(path, "PDF has zero pages")
    return doc


def page_count(path: str | os.PathLike) -> int:
    """Number of pages of a usable PDF."""
    with open_pdf(path) as doc:
        return doc.page_count


def _load_page(doc, path, page_index: int):
    """The page object, checked: in range, present in the file, non-empty rectangle."""
    if not 0 <= page_index < doc.page_count:
        raise PdfError(path, f"page index out of range (document has {doc.page_count} pages)",
                       page_index)
    try:
        xref = doc.page_xref(page_index)
        if xref <= 0 or doc.xref_object(xref, compressed=True).strip() == "null":
            raise PdfError(path, "page object missing from the file", page_index)
        page = doc.load_page(page_index)
    except PdfError:
        raise
    except Exception as exc:
        raise PdfError(path, f"cannot load page ({type(exc).__name__}: {exc})", page_index) from exc
    if page.rect.is_empty:
        raise PdfError(path, f"page has an empty rectangle {tuple(page.rect)}", page_index)
    return page


def _pixel_size(page, dpi: int) -> tuple[int, int]:
    """Pixmap size MuPDF produces for ``page`` at ``dpi``: the rounded transformed page rect."""
    pymupdf = _pymupdf()
    zoom = dpi / 72.0
    irect = (page.rect * pymupdf.Matrix(zoom, zoom)).round()
    return irect.width, irect.height


def page_pixel_sizes(path: str | os.PathLike, dpi: int = DEFAULT_DPI,
                     max_pages: int | None = None) -> list[tuple[int, int]]:
    """Pixel sizes of the first ``max_pages`` pages (all when None), opening the file once.

    A page that cannot be loaded raises :class:`PdfError` naming it: the caller skips the example.
    """
    with open_pdf(path) as doc:
        count = doc.page_count if max_pages is None else min(doc.page_count, max_pages)
        return [_pixel_size(_load_page(doc, path, i), dpi) for i in range(count)]


def _render(doc, path, page_index: int, dpi: int) -> bytes:
    page = _load_page(doc, path, page_index)
    _check_limits(path, page_index, *_pixel_size(page, dpi))
    try:
        return page.get_pixmap(dpi=dpi, alpha=False).tobytes("png")
    except Exception as exc:
        raise PdfError(path, f"page failed to render ({type(exc).__name__}: {exc})",
                       page_index) from exc


def _check_limits(path, page_index: int, width: int, height: int) -> None:
    """A page is an image too: one whose pixmap would be a decompression bomb (a 200-inch page)
    or too thin is refused before MuPDF allocates it (the store's limits, see mmlbdata.core.store)."""
    from mmlbdata.core.store import BadImageError, ImageLimits

    try:
        ImageLimits.from_env().check(path, width, height)
    except BadImageError as err:
        raise PdfError(path, err.reason, page_index) from None


def render_page_png(path: str | os.PathLike, page_index: int, dpi: int = DEFAULT_DPI) -> bytes:
    """PNG bytes of one page at ``dpi`` (RGB, no alpha)."""
    with open_pdf(path) as doc:
        return _render(doc, path, page_index, dpi)


def pdf_sha256(path: str | os.PathLike) -> str:
    """Content hash of a PDF (the store's memoised file hash): page keys do not depend on paths."""
    from mmlbdata.core.store import file_sha256

    return file_sha256(path)


def recipe_key(sha: str, page_index: int, dpi: int) -> str:
    """Store key of one rendered page: independent of where the PDF lives."""
    return f"pdf:{sha}:p{page_index}:{dpi}dpi"


# ---------------------------------------------------------------- parallel rendering

_WORKER_DOCS: dict[str, object] = {}


def _worker_render(args: tuple[str, int, int]) -> bytes:
    """Render in a worker process, keeping the document open across pages of the same file."""
    path, page_index, dpi = args
    doc = _WORKER_DOCS.get(path)
    if doc is None:
        for old in _WORKER_DOCS.values():
            old.close()
        _WORKER_DOCS.clear()
        doc = _WORKER_DOCS[path] = open_pdf(path)
    return _render(doc, path, page_index, dpi)


_POOLS: dict[int, ProcessPoolExecutor] = {}


def _pool(num_proc: int) -> ProcessPoolExecutor:
    """A worker pool kept for the life of the process: a build renders page batches for many
    examples, and starting processes for each batch would cost more than rendering."""
    pool = _POOLS.get(num_proc)
    if pool is None:
        pool = _POOLS[num_proc] = ProcessPoolExecutor(max_workers=num_proc)
        atexit.register(pool.shutdown, wait=False, cancel_futures=True)
    return pool


def iter_render_jobs(jobs: Sequence[tuple[str | os.PathLike, int]], dpi: int = DEFAULT_DPI,
                     num_proc: int = 1) -> Iterator[bytes]:
    """PNG bytes of ``(pdf path, page index)`` jobs over ``num_proc`` processes, yielded in job
    order as they are rendered (memory: a few pages).

    In parallel, jobs are handed out sorted by file so that each worker keeps a document open
    across its pages; callers that want that locality pass jobs already sorted. A broken page
    raises :class:`PdfError` naming it, from whichever process met it.
    """
    jobs = [(str(path), int(i)) for path, i in jobs]
    if num_proc <= 1 or (len(jobs) <= 1 and not units_on_ray()):
        docs = {}
        try:
            for path, i in jobs:
                if path not in docs:
                    docs[path] = open_pdf(path)
                yield _render(docs[path], path, i, dpi)
        finally:
            for doc in docs.values():
                doc.close()
        return
    # the kept local pool, or Ray tasks when the config runs under the Ray executor
    yield from map_units(_worker_render, [(path, i, dpi) for path, i in jobs], num_proc=num_proc,
                         pool=lambda: _pool(num_proc))


def render_page_refs(store, pages: Sequence[tuple[str | os.PathLike, int]],
                     dpi: int = DEFAULT_DPI, num_proc: int = 1) -> list:
    """ImageRefs of ``(pdf path, page index)`` pages, of one PDF or several, rendered lazily and
    once, through ``store.cached``.

    The recipe key is ``pdf:<content sha256>:p<page>:<dpi>dpi``, so a page shared by many examples
    (padding documents, several questions on one PDF) is rendered a single time per store, whatever
    path the PDF has. Pages the store lacks are rendered together, in one batch (in parallel when
    ``num_proc > 1``), and then handed to the store; pages it has cost a key lookup.
    """
    keys = {(str(path), i): recipe_key(pdf_sha256(path), i, dpi) for path, i in pages}
    refs = {job: store.lookup(key) for job, key in keys.items()}
    missing = sorted(job for job, ref in refs.items() if ref is None)
    for job, data in zip(missing, iter_render_jobs(missing, dpi, num_proc)):
        refs[job] = store.cached(keys[job], lambda data=data: (data, "png"))
    return [refs[(str(path), i)] for path, i in pages]
