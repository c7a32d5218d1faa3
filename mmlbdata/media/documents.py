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

from . import pdf


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
        return pdf.render_pages(store, self.path, page_indices, self.dpi, num_proc)


@dataclass
class ImageDocument:
    """A document released as one image file per page."""

    doc_id: str
    paths: tuple[Path, ...]
    _sizes: list | None = field(default=None, repr=False, compare=False)

    def sizes(self) -> list[tuple[int, int]]:
        if self._sizes is None:
            from mmlbdata.store import inspect_image  # header size + truncation check, no decode

            refs = [inspect_image(path) for path in self.paths]
            self._sizes = [(ref.width, ref.height) for ref in refs]
        return self._sizes

    def images(self, store, page_indices: Sequence[int], num_proc: int = 1) -> list:
        return [store.ref(self.paths[i]) for i in page_indices]
