"""Image bytes of streamed rows, read ahead by a thread pool.

A files-layout row streamed with ``decode(False)`` holds each image as ``{"bytes": None, "path"}``:
a local file, or an ``hf://`` URL when the dataset is streamed from the Hub, where every image
is one HTTP request. Read one after the other, those round trips made streaming a 128K row from a
loopback Hub 3x slower than the embedded layout's parquet reads (benchmarks/bench_layout.py);
read by a pool a few rows ahead, they overlap. ``datasets`` does the same for decoded images
(``IterableDataset.decode(num_threads=...)``), but a runner wants the encoded bytes, not pixels.
"""
from __future__ import annotations

import os
import re
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, Iterable, Iterator

DEFAULT_THREADS = 16  # remote images: each read mostly waits on its round trip
DEFAULT_AHEAD = 64  # images read ahead of the row being used (a 128K row alone has ~350)


def usable_cores() -> int:
    """The CPUs this process may run on (its affinity mask, not the machine's count)."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except (AttributeError, OSError):  # no affinity API (macOS, Windows)
        return os.cpu_count() or 1


def needs_read(image: Any) -> bool:
    """An image given by its path only: its bytes must be read (embedded images need nothing)."""
    return isinstance(image, dict) and image.get("bytes") is None and bool(image.get("path"))


def is_remote(path: str) -> bool:
    return "://" in path


def reader_threads(path: str) -> int:
    """Threads that read images like ``path`` (0: read in the caller's thread). Remote ones
    (``hf://``, URLs) wait on round trips, so :data:`DEFAULT_THREADS` overlap them. A local file
    is a copy out of the page cache: CPU work that a pool only makes dearer (bytes allocated in a
    worker's malloc arena and freed by the consumer: 960 COCO files held a few rows ahead, 24 ms of
    CPU read inline, 72-83 ms from a pool of 1-2 threads on 2 cores), so it is read where it is
    used; ``mmlb run`` reads in its feeder thread, beside generation (``pipeline.prefetched``)."""
    return DEFAULT_THREADS if is_remote(path) else 0


_HUB_PATH = re.compile(r"hf://(?P<kind>datasets|models|spaces)/(?P<repo>[^@]+)@(?P<revision>[^/]+)/(?P<path>.+)")


def read_image(image: Any) -> Any:
    """``{"bytes", "path"}`` with its bytes filled from ``path`` (local, ``hf://`` or any URL
    ``datasets`` opens); anything else (bytes already there, a decoded image) unchanged."""
    if not needs_read(image):
        return image
    path = image["path"]
    hub = _HUB_PATH.fullmatch(path)
    if hub:
        return {"bytes": _hub_get(hub), "path": path}
    if not is_remote(path):  # a local file: no fsspec layer
        return {"bytes": Path(path).read_bytes(), "path": path}
    from datasets.utils.file_utils import xopen

    with xopen(path, "rb") as handle:
        return {"bytes": handle.read(), "path": path}


def _hub_get(hub: re.Match) -> bytes:
    """One GET of the file's resolve URL, through huggingface_hub's session (its auth headers,
    redirects to the CDN); HfFileSystem's open asks for the file's info first and serialises
    threads on its event loop, which made a pool slower than one thread."""
    from urllib.parse import unquote

    from huggingface_hub import hf_hub_url
    from huggingface_hub.utils import build_hf_headers, get_session, hf_raise_for_status

    url = hf_hub_url(hub["repo"], hub["path"], repo_type=hub["kind"][:-1], revision=unquote(hub["revision"]))
    response = get_session().get(url, headers=build_hf_headers(), follow_redirects=True)
    hf_raise_for_status(response)
    return response.content


def with_image_bytes(rows: Iterable[dict], column: str = "images", *, threads: int | None = None,
                     ahead: int = DEFAULT_AHEAD) -> Iterator[dict]:
    """``rows`` in order, each ``row[column]`` with its images' bytes read (:func:`read_image`).

    Only images given by path are read (embedded bytes are passed on as they are). How, is decided
    at the first image to read: ``threads`` (else :func:`reader_threads` of its path) 0 reads each
    row's images when the row is reached; otherwise a pool of that many threads reads at least
    ``ahead`` images in advance (memory: one row's bytes and ``ahead`` images more). An
    embedded-layout config starts no thread at all."""
    pool: ThreadPoolExecutor | None = None
    inline = False
    pending: deque[tuple[dict, list[Future | None]]] = deque()
    waiting = 0  # images requested for the rows after the first pending one
    try:
        for row in rows:
            images = row.get(column) or []
            if pool is None and not inline:
                first = next((image for image in images if needs_read(image)), None)
                if first is not None:
                    count = reader_threads(first["path"]) if threads is None else threads
                    inline = count <= 0
                    if not inline:
                        pool = ThreadPoolExecutor(max_workers=count, thread_name_prefix="mmlb-images")
            if inline:
                yield _read_now(row, column)
                continue
            if pool is None:  # nothing read so far (embedded bytes): the row as it is, no waiting
                yield row
                continue
            futures = [pool.submit(read_image, image) if needs_read(image) else None for image in images]
            if pending:
                waiting += len(futures)
            pending.append((row, futures))
            while len(pending) > 1 and (waiting >= ahead or len(pending) > ahead):  # rows without images too
                yield _filled(*pending.popleft(), column)
                waiting -= len(pending[0][1])
        while pending:
            yield _filled(*pending.popleft(), column)
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


def _read_now(row: dict, column: str) -> dict:
    """``row`` with its images read here (one that cannot be read is left as it was, see :func:`_filled`)."""
    images = row.get(column) or []
    return {**row, column: [_read_or_left(None, image) for image in images]} if images else row


def _filled(row: dict, futures: list[Future], column: str) -> dict:
    """``row`` with the images read ahead; one that could not be read (a missing file, a Hub error)
    stays as it was, unread: the runner's decoding reads it again, and a second failure fails that
    row's batch only, as a corrupt image does, instead of ending the run here."""
    if any(futures):
        row = {**row, column: [_read_or_left(future, image) for future, image in zip(futures, row[column])]}
    return row


def _read_or_left(future: Future | None, image: Any) -> Any:
    """The image read ahead by ``future`` (None: read it now; embedded bytes stay as they are)."""
    try:
        return future.result() if future is not None else read_image(image)
    except Exception:  # noqa: BLE001 - see _filled
        return image
