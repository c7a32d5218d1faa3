"""Image bytes of streamed rows, read ahead by a thread pool.

A files-layout row streamed with ``decode(False)`` holds each image as ``{"bytes": None, "path"}``:
a local file, or an ``hf://`` URL when the dataset is streamed from the Hub, where every image
is one HTTP request. Read one after the other, those round trips made streaming a 128K row from a
loopback Hub 3x slower than the embedded layout's parquet reads (benchmarks/bench_layout.py);
read by a pool a few rows ahead, they overlap. ``datasets`` does the same for decoded images
(``IterableDataset.decode(num_threads=...)``), but a runner wants the encoded bytes, not pixels.
"""
from __future__ import annotations

import re
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Iterable, Iterator

DEFAULT_THREADS = 16
DEFAULT_AHEAD = 64  # images read ahead of the row being used (a 128K row alone has ~350)


_HUB_PATH = re.compile(r"hf://(?P<kind>datasets|models|spaces)/(?P<repo>[^@]+)@(?P<revision>[^/]+)/(?P<path>.+)")


def read_image(image: Any) -> Any:
    """``{"bytes", "path"}`` with its bytes filled from ``path`` (local, ``hf://`` or any URL
    ``datasets`` opens); anything else (bytes already there, a decoded image) unchanged."""
    if not (isinstance(image, dict) and image.get("bytes") is None and image.get("path")):
        return image
    path = image["path"]
    hub = _HUB_PATH.fullmatch(path)
    if hub:
        return {"bytes": _hub_get(hub), "path": path}
    if "://" not in path:  # a local file: no fsspec layer
        with open(path, "rb") as handle:
            return {"bytes": handle.read(), "path": path}
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


def with_image_bytes(rows: Iterable[dict], column: str = "images", *, threads: int = DEFAULT_THREADS,
                     ahead: int = DEFAULT_AHEAD) -> Iterator[dict]:
    """``rows`` in order, each ``row[column]`` with its images' bytes read (:func:`read_image`),
    at least ``ahead`` images in advance; memory: one row's bytes and ``ahead`` images more."""
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="mmlb-images") as pool:
        pending: deque[tuple[dict, list[Future]]] = deque()
        waiting = 0  # images requested for the rows after the first pending one
        for row in rows:
            futures = [pool.submit(read_image, image) for image in row.get(column) or []]
            if pending:
                waiting += len(futures)
            pending.append((row, futures))
            while len(pending) > 1 and waiting >= ahead:
                yield _filled(*pending.popleft(), column)
                waiting -= len(pending[0][1])
        while pending:
            yield _filled(*pending.popleft(), column)


def _filled(row: dict, futures: list[Future], column: str) -> dict:
    """``row`` with the images read ahead; one that could not be read (a missing file, a Hub error)
    stays as it was, unread: the runner's decoding reads it again, and a second failure fails that
    row's batch only, as a corrupt image does, instead of ending the run here."""
    if futures:
        row = {**row, column: [_read_or_left(future, image) for future, image in zip(futures, row[column])]}
    return row


def _read_or_left(future: Future, image: Any) -> Any:
    try:
        return future.result()
    except Exception:  # noqa: BLE001 - see _filled
        return image
