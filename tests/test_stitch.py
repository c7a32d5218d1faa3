"""The grid stitcher: cell placement, draft decoding, parallel order, bad files."""
from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from benchmarks.bench_stitch import naive_stitch
from mmlbdata.media.stitch import CELL, CellCache, StitchError, draft_scale, load_cell, recipe_key, stitch, stitch_many


@pytest.fixture(scope="module")
def photos(coco_mini):
    return sorted((coco_mini / "val2017").glob("*.jpg"))[:16]


def rgb(data: bytes) -> np.ndarray:
    image = Image.open(io.BytesIO(data))
    assert image.format == "JPEG" and image.mode == "RGB"
    return np.asarray(image, dtype=np.int16)


def test_draft_scale():
    assert draft_scale(640, 480) == 2  # 320x240 keeps >= 0.8 * 256 per axis
    assert draft_scale(500, 375) == 1  # 250x188 would not
    assert draft_scale(2592, 1944) == 8
    assert draft_scale(640, 480, draft_min=None) == 1
    assert draft_scale(640, 480, draft_min=1.0) == 1


def test_cells_row_major_and_close_to_exact(photos):
    n = 4
    data = stitch(photos, n)
    got = rgb(data)
    assert got.shape == (n * CELL, n * CELL, 3)
    refs = [np.asarray(Image.open(p).convert("RGB").resize((CELL, CELL), Image.BICUBIC), dtype=np.int16)
            for p in photos]
    for k in range(n * n):
        row, col = divmod(k, n)
        cell = got[row * CELL:(row + 1) * CELL, col * CELL:(col + 1) * CELL]
        errors = [np.abs(cell - ref).mean() for ref in refs]
        assert int(np.argmin(errors)) == k and errors[k] < 12


def test_full_decode_matches_naive(photos):
    exact = rgb(stitch(photos[:4], 2, draft_min=None))
    naive = rgb(naive_stitch(photos[:4], 2))
    assert np.abs(exact - naive).mean() < 1.5  # same pixels up to YCbCr rounding


def test_grayscale_and_png_sources(tmp_path, photos):
    gray = tmp_path / "gray.jpg"
    Image.open(photos[0]).convert("L").save(gray)
    png = tmp_path / "p.png"
    Image.open(photos[1]).save(png)
    assert load_cell(gray).mode == "RGB" and load_cell(png, mode="YCbCr").size == (CELL, CELL)
    got = rgb(stitch([gray, png, photos[2], photos[3]], 2))
    cell = got[:CELL, :CELL]
    assert np.abs(cell - cell[..., :1]).max() < 12  # grey stays grey


def test_stitch_many_keeps_order_and_reports_bad_file(tmp_path, photos):
    bad = tmp_path / "bad.jpg"
    bad.write_bytes(photos[0].read_bytes()[:300])
    grids = [photos[0:4], photos[4:8], [photos[0], bad, photos[1], photos[2]], photos[8:12]]
    serial = [stitch(g, 2) for g in (grids[0], grids[1], grids[3])]
    results = list(stitch_many(grids, 2, processes=2, chunksize=1))
    assert isinstance(results[2], StitchError) and "bad.jpg" in str(results[2])
    assert [results[0], results[1], results[3]] == serial  # deterministic bytes, input order
    with pytest.raises(ValueError, match="needs 4 files"):
        stitch(photos[:3], 2)


def test_recipe_key_names_files_and_settings(photos):
    assert recipe_key(photos[:4], 2) == recipe_key(list(photos[:4]), 2)
    assert recipe_key(photos[:4], 2) != recipe_key(photos[1:5], 2)
    assert recipe_key(photos[:4], 2) != recipe_key(photos[:4], 2, quality=75)


def test_cell_cache_renders_each_source_once(tmp_path, photos):
    cells = CellCache(tmp_path / "cells")
    first = stitch(photos[:4], 2, cells=cells)
    objects = sorted((tmp_path / "cells" / "objects").rglob("*.jpg"))
    assert len(objects) == 4
    assert stitch(photos[:4], 2, cells=cells) == first  # second use: read back, same bytes
    swapped = stitch([photos[1], photos[0], photos[2], photos[3]], 2, cells=cells)
    assert sorted((tmp_path / "cells" / "objects").rglob("*.jpg")) == objects  # nothing new rendered
    a, b = rgb(first), rgb(swapped)
    assert np.abs(a[:CELL, :CELL] - b[:CELL, CELL:]).mean() < 2  # the same cell, moved
    exact = rgb(stitch(photos[:4], 2, draft_min=None))
    assert np.abs(a - exact).mean() < 4
    par = list(stitch_many([photos[:4], photos[4:8]], 2, processes=2, cache_root=tmp_path / "cells"))
    assert par[0] == first and recipe_key(photos[:4], 2, cached_cells=True) != recipe_key(photos[:4], 2)
