"""Multi-page documents as the DocVQA recipes see them: page sizes now, page images on demand.

Why: a recipe decides which pages of which documents go into an example from their token counts
alone, which need only pixel sizes; it then asks for the images of the chosen pages. A PDF
renders those pages (cached in the store); a folder of page images (LongDocURL, SlideVQA) hands
the files to the store as they are.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, Sequence

from mmlbdata.media import pdf


def max_pages_option(builder) -> int | None:
    """The ``max_pages`` recipe option as an int (None: all pages); CLI options arrive as text."""
    value = builder.option("max_pages")
    if value is None or str(value).strip().lower() in ("", "none", "all", "0"):
        return None
    return int(value)


class PageDocument(Protocol):
    doc_id: str

    def sizes(self) -> list[tuple[int, int]]:
        """(width, height) of every usable page, in order; raises on a broken document."""

    def images(self, store, page_indices: Sequence[int], num_proc: int = 1) -> list:
        """ImageRefs of the given pages, in the given order."""


@dataclass
class PdfDocument:
    """A PDF rendered at ``dpi``, limited to its first ``max_pages`` pages when set."""

    doc_id: str
    path: Path
    dpi: int = pdf.DEFAULT_DPI
    max_pages: int | None = None
    _sizes: list | None = field(default=None, repr=False, compare=False)

    def sizes(self) -> list[tuple[int, int]]:
        if self._sizes is None:
            self._sizes = pdf.page_pixel_sizes(self.path, self.dpi, self.max_pages)
        return self._sizes

    def images(self, store, page_indices: Sequence[int], num_proc: int = 1) -> list:
        return pdf.render_page_refs(store, [(self.path, i) for i in page_indices], self.dpi, num_proc)


@dataclass
class ImageDocument:
    """A document released as one image file per page."""

    doc_id: str
    paths: tuple[Path, ...]
    _sizes: list | None = field(default=None, repr=False, compare=False)

    def sizes(self) -> list[tuple[int, int]]:
        if self._sizes is None:
            from mmlbdata.core.store import inspect_image  # header size + truncation check, no decode

            refs = [inspect_image(path) for path in self.paths]
            self._sizes = [(ref.width, ref.height) for ref in refs]
        return self._sizes

    def images(self, store, page_indices: Sequence[int], num_proc: int = 1) -> list:
        return [store.ref(self.paths[i]) for i in page_indices]


@dataclass
class ScaledImageDocument:
    """A page-image document shown at another resolution: every page resized by ``scale``.

    Why: LongDocURL's page PNGs were rendered at 72 DPI (a letter page is 612x792), while
    MMLongBench screenshots pages at 144 DPI; when the release's PDFs are absent, the PNGs are
    upscaled to the 144-DPI page size so that pages cost what the paper's pages cost. Sizes come
    from the file headers (no decode); only the pages an example uses are resized, once per store.
    """

    doc_id: str
    paths: tuple[Path, ...]
    scale: float
    _sizes: list | None = field(default=None, repr=False, compare=False)

    def sizes(self) -> list[tuple[int, int]]:
        if self._sizes is None:
            from mmlbdata.core.store import inspect_image

            self._sizes = [self._scaled(inspect_image(path)) for path in self.paths]
        return self._sizes

    def _scaled(self, ref) -> tuple[int, int]:
        return max(1, round(ref.width * self.scale)), max(1, round(ref.height * self.scale))

    def images(self, store, page_indices: Sequence[int], num_proc: int = 1) -> list:
        return [self._image(store, i) for i in page_indices]

    def _image(self, store, index: int):
        from mmlbdata.core.store import file_sha256

        path = self.paths[index]
        size = self.sizes()[index]
        key = f"scaled:{file_sha256(path)}:{size[0]}x{size[1]}"
        return store.cached(key, lambda: (_resized_png(path, size), "png"))


def _resized_png(path: Path, size: tuple[int, int]) -> bytes:
    """PNG bytes of the image at ``path`` resized to ``size`` (Lanczos; deterministic)."""
    import io

    from PIL import Image

    with Image.open(path) as image:
        image = image.convert("RGB").resize(size, Image.Resampling.LANCZOS)
        buffer = io.BytesIO()
        image.save(buffer, format="PNG")
        return buffer.getvalue()


class DocCorpus:
    """The documents of one source by id: page sizes on first use, broken documents reported once.

    Used as the ``num_pages`` mapping of :func:`mmlbdata.dataset.docpack.select_pages` (a broken or absent
    document has 0 pages, so it is never drawn as padding), and to fetch the images of a page list
    spanning several documents.
    """

    def __init__(self, documents: dict[str, PageDocument], report=None):
        self.documents = dict(sorted(documents.items()))
        self.report = report
        self._sizes: dict[str, list[tuple[int, int]]] = {}
        self.errors: dict[str, str] = {}

    def ids(self) -> list[str]:
        return list(self.documents)

    def sizes(self, doc_id: str) -> list[tuple[int, int]]:
        """Page sizes of ``doc_id``; [] when absent or broken (reported the first time)."""
        if doc_id in self._sizes:
            return self._sizes[doc_id]
        document = self.documents.get(doc_id)
        sizes: list[tuple[int, int]] = []
        if document is None:
            self.errors[doc_id] = f"document {doc_id!r} not found in the source"
        else:
            try:
                sizes = document.sizes()
            except Exception as exc:  # PdfError, BadImageError, ValueError: one message each
                self.errors[doc_id] = str(exc)
                if self.report is not None:
                    where = getattr(document, "path", None) or document.paths[0]
                    self.report.skip(where, doc_id, f"unusable document: {exc}")
        self._sizes[doc_id] = sizes
        return sizes

    def __getitem__(self, doc_id: str) -> int:
        return len(self.sizes(doc_id))

    def get(self, doc_id: str, default: int = 0) -> int:
        return len(self.sizes(doc_id)) or default

    def size(self, doc_id: str, page_index: int) -> tuple[int, int]:
        return self.sizes(doc_id)[page_index]

    def images(self, store, pages: Sequence[tuple[str, int]], num_proc: int = 1) -> list:
        """ImageRefs of ``(doc_id, page_index)`` pairs, in the given order.

        Pages of all PDFs are rendered as one batch (parallel across documents when
        ``num_proc > 1``); page-image documents hand their files to the store.
        """
        unique = sorted(set(pages))
        pdf_pages = [p for p in unique if isinstance(self.documents[p[0]], PdfDocument)]
        found = {}
        by_dpi: dict[int, list[tuple[str, int]]] = {}
        for doc_id, index in pdf_pages:
            by_dpi.setdefault(self.documents[doc_id].dpi, []).append((doc_id, index))
        for dpi, group in by_dpi.items():
            jobs = [(self.documents[d].path, i) for d, i in group]
            found.update(zip(group, pdf.render_page_refs(store, jobs, dpi, num_proc)))
        for doc_id, index in unique:
            if (doc_id, index) not in found:
                found[(doc_id, index)] = self.documents[doc_id].images(store, [index])[0]
        return [found[page] for page in pages]
