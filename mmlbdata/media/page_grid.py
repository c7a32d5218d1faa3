"""Concatenate document pages into grid images (MMLongBench-Doc's open-model setting).

Why: the original MMLongBench-Doc evaluation (``run_lvlm.py``) feeds open models at most
``concat_num`` images per document (5 by default), each a grid of consecutive pages in
``columns`` (3) columns, saved as JPEG. Pages are split into ``ceil(n / concat_num)``-page
batches; a grid is always ``columns`` cells wide and has as many rows as needed, on white.

The original sizes the cells from the batch's *first* page and pastes each page after the
previous one, which crops or overlaps pages of mixed sizes; here a cell is the size of the batch's
largest page (pasted at the cell's top-left). On a document with uniform pages the two agree pixel
for pixel. A grid's size follows from the page sizes alone, so its token count is known before
anything is drawn.
"""
from __future__ import annotations

import io
import math
from typing import Sequence


def batches(num_pages: int, concat_num: int) -> list[range]:
    """Consecutive page ranges, at most ``concat_num`` of them, covering ``num_pages`` pages."""
    if num_pages <= 0:
        return []
    per = max(math.ceil(num_pages / max(concat_num, 1)), 1)
    return [range(start, min(start + per, num_pages)) for start in range(0, num_pages, per)]


def grid_size(sizes: Sequence[tuple[int, int]], columns: int = 3) -> tuple[int, int]:
    """(width, height) of the grid of pages with these sizes."""
    cell_w = max(w for w, _ in sizes)
    cell_h = max(h for _, h in sizes)
    return cell_w * columns, cell_h * math.ceil(len(sizes) / columns)


def draw_grid(images: Sequence, columns: int = 3):
    """One RGB PIL image of the given PIL page images, row-major, ``columns`` per row."""
    from PIL import Image

    width, height = grid_size([im.size for im in images], columns)
    cell_w = max(im.size[0] for im in images)
    cell_h = max(im.size[1] for im in images)
    canvas = Image.new("RGB", (width, height), "white")
    for k, image in enumerate(images):
        canvas.paste(image.convert("RGB"), ((k % columns) * cell_w, (k // columns) * cell_h))
    return canvas


JPEG_QUALITY = 75  # PIL's default, which the original's ``save("...jpg")`` used


def grid_jpeg(page_files: Sequence, columns: int = 3, quality: int = JPEG_QUALITY) -> bytes:
    """JPEG bytes of the grid of the page image files (paths or bytes)."""
    from PIL import Image

    opened = [Image.open(io.BytesIO(f) if isinstance(f, (bytes, bytearray)) else f)
              for f in page_files]
    try:
        buffer = io.BytesIO()
        draw_grid(opened, columns).save(buffer, format="JPEG", quality=quality)
        return buffer.getvalue()
    finally:
        for image in opened:
            image.close()
