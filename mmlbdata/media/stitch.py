"""N x N grid stitching (MMNeedle haystack images).

A stitched image is ``n * cell`` pixels square; cell ``k`` holds source image ``k`` resized to
``cell x cell`` (aspect not kept, as in MMNeedle) at ``row, col = divmod(k, n)`` (row-major). The
output is an RGB (YCbCr-coded, 4:2:0) JPEG.

This is the hot loop of MMNeedle (10,000 grids of up to 64 cells per N), so each grid is made with
as little work as possible:

* JPEG sources are decoded with libjpeg's DCT scaling (``draft``) by the largest power of two that
  still leaves at least ``draft_min * cell`` pixels on each axis (COCO's 640x480 and 640x427
  photos decode at half size). At the default (0.8) the grid differs from an exact one by about
  the error of its own JPEG encoding: ``benchmarks/bench_stitch.py`` prints both as PSNR (about
  31-33 dB vs 34 dB for the straightforward output). ``draft_min=None`` gives a full decode.
* Pixels stay in YCbCr from decoder to encoder: no colour conversion either way.
* Each cell is resized once (bicubic) and pasted; the grid is encoded once.
* :func:`stitch_many` spreads grids over worker processes and yields results in input order.
"""
from __future__ import annotations

import io
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Iterable, Iterator, Sequence

from PIL import Image

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


def stitch(files: Sequence[str | os.PathLike], n: int, cell: int = CELL, quality: int = QUALITY,
           draft_min: float | None = DRAFT_MIN) -> bytes:
    """JPEG bytes of the ``n x n`` grid of ``files`` (row-major)."""
    if len(files) != n * n:
        raise ValueError(f"a {n}x{n} grid needs {n * n} files, got {len(files)}")
    canvas = Image.new("YCbCr", (n * cell, n * cell))
    for k, path in enumerate(files):
        row, col = divmod(k, n)
        try:
            canvas.paste(load_cell(path, cell, draft_min, "YCbCr"), (col * cell, row * cell))
        except (OSError, ValueError, Image.DecompressionBombError) as exc:
            raise StitchError(f"{path}: cannot decode image for grid cell {k}: {exc}") from exc
    out = io.BytesIO()
    canvas.save(out, "JPEG", quality=quality)
    return out.getvalue()


class StitchError(ValueError):
    """A source image of a grid could not be decoded (the message names the file)."""


def naive_stitch(files: Sequence[str | os.PathLike], n: int, cell: int = CELL,
                 quality: int = QUALITY) -> bytes:
    """The straightforward approach (open, resize, paste, save): the benchmark's baseline and the
    tests' reference for what a cell should look like."""
    canvas = Image.new("RGB", (n * cell, n * cell))
    for k, path in enumerate(files):
        row, col = divmod(k, n)
        canvas.paste(Image.open(path).convert("RGB").resize((cell, cell), Image.BICUBIC),
                     (col * cell, row * cell))
    out = io.BytesIO()
    canvas.save(out, "JPEG", quality=quality)
    return out.getvalue()


def _stitch_job(job: tuple) -> bytes | StitchError:
    files, n, cell, quality, draft_min = job
    try:
        return stitch(files, n, cell, quality, draft_min)
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
                processes: int | None = None, chunksize: int = 4) -> Iterator[bytes | StitchError]:
    """Stitch every grid (a list of ``n * n`` files), yielding JPEG bytes in input order.

    A grid whose image cannot be decoded yields a :class:`StitchError` instead of bytes, so the
    caller can report it and go on. Work is streamed: at most a few chunks per worker are in flight.
    """
    jobs = ((tuple(str(f) for f in files), n, cell, quality, draft_min) for files in grids)
    processes = default_processes() if processes is None else processes
    if processes <= 1:
        yield from map(_stitch_job, jobs)
        return
    with ProcessPoolExecutor(processes) as pool:
        yield from _ordered_window(pool, jobs, window=processes * chunksize * 2)


def _ordered_window(pool: ProcessPoolExecutor, jobs: Iterator[tuple], window: int) -> Iterator:
    """Like ``pool.map`` but submits lazily, keeping at most ``window`` jobs in flight."""
    from collections import deque

    pending: deque = deque()
    for job in jobs:
        pending.append(pool.submit(_stitch_job, job))
        if len(pending) >= window:
            yield pending.popleft().result()
    while pending:
        yield pending.popleft().result()


def recipe_key(files: Sequence[str | os.PathLike], n: int, cell: int = CELL,
               quality: int = QUALITY, draft_min: float | None = DRAFT_MIN) -> str:
    """A store recipe key naming one grid: same files and settings -> same stitched image."""
    import hashlib

    digest = hashlib.sha256("\n".join(Path(f).as_posix() for f in files).encode()).hexdigest()
    return f"stitch:v1:{n}x{n}:{cell}px:q{quality}:d{draft_min}:{digest}"
