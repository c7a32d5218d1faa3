"""N x N grid stitching (MMNeedle haystack images).

A stitched image is ``n * cell`` pixels square; cell ``k`` holds source image ``k`` resized to
``cell x cell`` (aspect not kept, as in MMNeedle) at ``row, col = divmod(k, n)`` (row-major). The
output is an RGB (YCbCr-coded, 4:2:0) JPEG.

This is the hot loop of MMNeedle (10,000 grids of up to 64 cells per N), so each grid is made with
as little work as possible:

* JPEG sources are decoded with libjpeg's DCT scaling (``draft``) by the largest power of two that
  still leaves at least ``draft_min * cell`` pixels on each axis (COCO's 640x480 and 640x427
  photos decode at half size). At the default (0.8) the grid differs from an exact one by about
  the error of its own JPEG encoding: ``benchmarks/bench_stitch.py`` prints both as PSNR (worst
  grid 29.5-31.5 dB, vs 33.7 dB for the straightforward output's encoding alone; either is far
  from the ~10 dB of a wrong cell). ``draft_min=None`` gives a full decode.
* Pixels stay in YCbCr from decoder to encoder: no colour conversion either way.
* Each cell is resized once (bicubic) and pasted; the grid is encoded once. With a
  :class:`CellCache` each *source* is decoded and resized once per build, however many grids
  use it.
* :func:`stitch_many` spreads grids over worker processes (Ray tasks under the Ray executor,
  :mod:`mmlbdata.core.parallel`) and yields results in input order.
"""
from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Iterable, Iterator, Sequence

from PIL import Image

from mmlbdata.core.parallel import map_units

CELL = 256
QUALITY = 90
DRAFT_MIN = 0.8


def draft_scale(width: int, height: int, cell: int = CELL, draft_min: float | None = DRAFT_MIN) -> int:
    """The DCT scale denominator (1, 2, 4 or 8) used for a ``width x height`` source."""
    if not draft_min:
        return 1
    need = draft_min * cell
    for scale in (8, 4, 2):
        if -(-width // scale) >= need and -(-height // scale) >= need:
            return scale
    return 1


def load_cell(path: str | os.PathLike, cell: int = CELL, draft_min: float | None = DRAFT_MIN,
              mode: str = "RGB") -> Image.Image:
    """Open ``path`` and return it resized to ``cell x cell`` in ``mode`` ("RGB" or "YCbCr")."""
    with Image.open(path) as im:
        if im.format == "JPEG":
            scale = draft_scale(im.width, im.height, cell, draft_min)
            # Asking for YCbCr makes libjpeg skip its colour conversion; an RGB draft is
            # converted below like any other image.
            im.draft("YCbCr" if mode == "YCbCr" else "RGB",
                     (im.width // scale, im.height // scale) if scale > 1 else None)
        if im.mode != mode:
            im = im.convert("RGB") if im.mode not in ("RGB", "L", "YCbCr") else im
            im = im.convert(mode)
        else:
            im.load()
        return im.resize((cell, cell), Image.BICUBIC)


class CellCache:
    """Resized cells kept in an image store, so each source is decoded and resized once.

    MMNeedle's grids reuse their sources heavily (10,000 grids per N from the 40,504 val2014
    images: each image lands in about 21 cells over N = 1, 2, 4, 8), and decoding plus resizing
    a source costs about ten times as much as reading back its 256 x 256 cell. A cell is stored
    as a 4:4:4 JPEG at quality 95 (keyed by the source's path, size and mtime and the settings),
    which adds far less error than the grid's own encoding. Safe across processes: the store
    writes atomically.
    """

    QUALITY = 95

    def __init__(self, root: str | os.PathLike, cell: int = CELL, draft_min: float | None = DRAFT_MIN):
        from mmlbdata.core.store import ImageStore

        self.store, self.cell, self.draft_min = ImageStore(root), cell, draft_min

    def key(self, path: str | os.PathLike) -> str:
        st = os.stat(path)
        return (f"cell:v1:{os.path.abspath(path)}:{st.st_size}:{st.st_mtime_ns}:{self.cell}px:"
                f"d{self.draft_min}:q{self.QUALITY}")

    def get(self, path: str | os.PathLike) -> Image.Image:
        """The YCbCr cell of ``path``, rendered and stored the first time."""
        def produce() -> tuple[bytes, str]:
            out = io.BytesIO()
            load_cell(path, self.cell, self.draft_min, "YCbCr").save(
                out, "JPEG", quality=self.QUALITY, subsampling=0)
            return out.getvalue(), "jpg"

        ref = self.store.cached(self.key(path), produce)
        with Image.open(ref.path) as im:
            im.draft("YCbCr", None)
            im.load()
            return im.copy() if im.mode == "YCbCr" else im.convert("YCbCr")


def stitch(files: Sequence[str | os.PathLike], n: int, cell: int = CELL, quality: int = QUALITY,
           draft_min: float | None = DRAFT_MIN, cells: CellCache | None = None) -> bytes:
    """JPEG bytes of the ``n x n`` grid of ``files`` (row-major); ``cells`` reuses resized cells."""
    if len(files) != n * n:
        raise ValueError(f"a {n}x{n} grid needs {n * n} files, got {len(files)}")
    canvas = Image.new("YCbCr", (n * cell, n * cell))
    for k, path in enumerate(files):
        row, col = divmod(k, n)
        try:
            image = cells.get(path) if cells is not None else load_cell(path, cell, draft_min, "YCbCr")
            canvas.paste(image, (col * cell, row * cell))
        except (OSError, ValueError, Image.DecompressionBombError) as exc:
            raise StitchError(f"{path}: cannot decode image for grid cell {k}: {exc}") from exc
    out = io.BytesIO()
    canvas.save(out, "JPEG", quality=quality)
    return out.getvalue()


class StitchError(ValueError):
    """A source image of a grid could not be decoded (the message names the file)."""


_CACHES: dict = {}  # one CellCache per worker process and root


def _stitch_job(job: tuple) -> bytes | StitchError:
    files, n, cell, quality, draft_min, cache_root = job
    cells = None
    if cache_root is not None:
        cells = _CACHES.get((cache_root, cell, draft_min))
        if cells is None:
            cells = _CACHES[(cache_root, cell, draft_min)] = CellCache(cache_root, cell, draft_min)
    try:
        return stitch(files, n, cell, quality, draft_min, cells)
    except StitchError as exc:  # returned, not raised, so one bad file does not stop the pool
        return exc


def default_processes() -> int:
    """Worker processes to use: the CPUs this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - non-Linux
        return max(1, os.cpu_count() or 1)


def stitch_many(grids: Iterable[Sequence[str | os.PathLike]], n: int, cell: int = CELL,
                quality: int = QUALITY, draft_min: float | None = DRAFT_MIN,
                processes: int | None = None, chunksize: int = 4,
                cache_root: str | os.PathLike | None = None) -> Iterator[bytes | StitchError]:
    """Stitch every grid (a list of ``n * n`` files), yielding JPEG bytes in input order.

    A grid whose image cannot be decoded yields a :class:`StitchError` instead of bytes, so the
    caller can report it and go on. Work is streamed: at most a few chunks per worker are in flight.
    With ``cache_root`` (an image store folder) cells are reused through a :class:`CellCache`.
    """
    root = None if cache_root is None else str(cache_root)
    jobs = ((tuple(str(f) for f in files), n, cell, quality, draft_min, root) for files in grids)
    processes = default_processes() if processes is None else processes
    # a local pool, or Ray tasks when the config runs under the Ray executor
    yield from map_units(_stitch_job, jobs, num_proc=processes, window=processes * chunksize * 2)


def recipe_key(files: Sequence[str | os.PathLike], n: int, cell: int = CELL,
               quality: int = QUALITY, draft_min: float | None = DRAFT_MIN, cached_cells: bool = False) -> str:
    """A store recipe key naming one grid: same files and settings -> same stitched image."""
    import hashlib

    digest = hashlib.sha256("\n".join(Path(f).as_posix() for f in files).encode()).hexdigest()
    via = f":c{CellCache.QUALITY}" if cached_cells else ""
    return f"stitch:v1:{n}x{n}:{cell}px:q{quality}:d{draft_min}{via}:{digest}"
