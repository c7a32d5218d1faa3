"""Concatenate document pages into grid images (MMLongBench-Doc's open-model setting).

Why: the original MMLongBench-Doc evaluation feeds open models at most ``concat_num`` images per
document, each a grid of consecutive pages laid out in ``columns`` columns. Pages are split into
``ceil(n / concat_num)``-page batches; every cell of a grid is the size of the batch's largest page
(pages pasted at the cell's top-left on white), so a grid's size follows from the page sizes
alone and its token count is known before anything is drawn.
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
    cols = min(columns, len(sizes))
    rows = math.ceil(len(sizes) / columns)
    return cell_w * cols, cell_h * rows


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


def grid_png(page_files: Sequence, columns: int = 3) -> bytes:
    """PNG bytes of the grid of the page image files (paths or bytes)."""
    from PIL import Image

    opened = [Image.open(io.BytesIO(f) if isinstance(f, (bytes, bytearray)) else f)
              for f in page_files]
    try:
        buffer = io.BytesIO()
        draw_grid(opened, columns).save(buffer, format="PNG", compress_level=1)
        return buffer.getvalue()
    finally:
        for image in opened:
            image.close()
