"""Keep the model busy: read, decode and preprocess the next batches while this one generates.

A run has four stages per batch: **read** (stream the row, build the request), **decode** (image
bytes -> pixels), **preprocess** (the processor: chat template, resize, tokenise) and
**generate** (the model). Only the last needs the accelerator; run one after the other it waits
for the first three on every batch. Here a feeder thread reads and batches the rows and hands
each batch to a small thread pool that runs the backend's ``prepare`` (decode + preprocess);
the caller takes the prepared batches *in order* from a queue a few batches deep and generates.

Why threads and not processes (the official MMLongBench ``eval.py`` uses DataLoader worker
processes): the heavy parts of preparing (PIL's JPEG/PNG decoders and resampling, numpy
normalisation, the Rust tokenizer) release the GIL, so threads overlap with generation, and
``benchmarks/bench_runner_pipeline.py`` found two spawned processes no faster than two threads
(each needs its own processor, and every batch's pixel tensors, tens of MB for a 32K row, are
pickled back); rows streamed from one parquet shard cannot be split between DataLoader workers
anyway.

The order of batches, and so the order of output lines, is the order they are read, and a
batch's content does not depend on the number of workers: ``workers=0`` runs the same stages
inline (the serial path) and yields the same predictions. Memory stays flat: at most ``depth``
prepared batches wait, whatever the number of examples.
"""
from __future__ import annotations

import logging
import queue
import sys
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, Optional

log = logging.getLogger(__name__)

STAGES = ("read", "decode", "preprocess", "generate")


@dataclass
class BatchProfile:
    """Seconds one batch spent in each stage, and how long generation waited for it."""
    config: str
    ids: list[str]
    lengths: list[int]
    seconds: dict[str, float] = field(default_factory=lambda: dict.fromkeys(STAGES, 0.0))
    waited: float = 0.0  # the generating thread idle, waiting for this batch to be prepared

    @property
    def padding(self) -> int:
        """Length units a batch padded to its longest member carries for nothing."""
        return len(self.lengths) * max(self.lengths, default=0) - sum(self.lengths)

    def record(self) -> dict:
        """The ``--profile`` JSON line of this batch."""
        return {"config": self.config, "ids": self.ids, "size": len(self.ids),
                **{k: round(v, 6) for k, v in self.seconds.items()}, "waited": round(self.waited, 6),
                "lengths": self.lengths, "padding": self.padding}


@contextmanager
def stage(profile: Optional[BatchProfile], name: str):
    """Add the block's wall time to ``profile.seconds[name]`` (a no-op without a profile)."""
    started = time.perf_counter()
    try:
        yield
    finally:
        if profile is not None:
            profile.seconds[name] = profile.seconds.get(name, 0.0) + time.perf_counter() - started


@dataclass
class Batch:
    """Requests that go to the backend together, their profile, and what ``prepare`` made."""
    config: str
    requests: list
    profile: BatchProfile
    prepared: object = None
    error: Optional[BaseException] = None  # prepare failed: the whole batch is reported failed


def prepare_batch(backend, batch: Batch) -> Batch:
    """Run the backend's CPU half (``prepare``, when it has one) on ``batch``; a failure (a
    corrupt image) is kept on the batch, to be reported when its turn to generate comes."""
    prepare = getattr(backend, "prepare", None)
    try:
        batch.prepared = prepare(batch.requests, batch.profile) if prepare else batch.requests
    except Exception as exc:  # noqa: BLE001 - one bad batch never ends a long run
        batch.error = exc
    return batch


def group_key(request) -> tuple:
    """Requests sharing a backend call share its settings: token budget and prefilled or not."""
    return (request.max_new_tokens, bool(request.prefix))


def batches(items: Iterable[tuple[object, float]], batch_size: int, sort_window: int = 0) -> Iterator[Batch]:
    """Cut ``(request, read_seconds)`` pairs of one config into batches of one :func:`group_key`.

    Without ``sort_window`` batches are consecutive requests, as read. With it, up to
    ``sort_window`` batches' worth of requests of a key are gathered, sorted by ``length``
    (stable) and cut, so requests of similar length share a batch and padding shrinks; the ids
    are the same, only their order changes, and memory stays bounded by the window.
    """
    pending: dict[tuple, list] = {}
    reads: dict[int, float] = {}
    limit = batch_size * max(sort_window, 1)

    def cut(key: tuple, final: bool) -> Iterator[Batch]:
        reqs = pending.pop(key, [])
        if sort_window:
            reqs.sort(key=lambda r: r.length)
        while reqs and (final or len(reqs) >= batch_size):
            chunk, reqs = reqs[:batch_size], reqs[batch_size:]
            yield make_batch(chunk, sum(reads.pop(id(r), 0.0) for r in chunk))
        if reqs:
            pending[key] = reqs

    for request, seconds in items:
        key = group_key(request)
        reads[id(request)] = seconds
        pending.setdefault(key, []).append(request)
        if len(pending[key]) >= limit:
            yield from cut(key, final=False)
    for key in list(pending):
        yield from cut(key, final=True)


def make_batch(requests: list, read_seconds: float) -> Batch:
    profile = BatchProfile(requests[0].config, [r.id for r in requests], [r.length for r in requests])
    profile.seconds["read"] = read_seconds
    return Batch(requests[0].config, requests, profile)


class _Failed:
    """The feeder thread's exception, carried through the queue to the consumer."""

    def __init__(self, exc: BaseException):
        self.exc = exc


_DONE = object()


def prepare_threads(backend, workers: int) -> int:
    """Threads that run ``backend.prepare`` beside the feeder: ``workers`` capped at the cores
    this process may use (decoding and the processor are CPU work: more threads than cores only
    wait on each other), and none for a backend without ``prepare`` (an API or vLLM backend: the
    feeder hands its batches on as it reads them, still ahead of generation)."""
    from mmlbdata.runner.prefetch import usable_cores

    if workers <= 0 or not callable(getattr(backend, "prepare", None)):
        return 0
    return min(workers, usable_cores())


def prefetched(source: Iterable[Batch], prepare: Callable[[Batch], Batch], workers: int = 2,
               depth: int = 4, threads: int | None = None) -> Iterator[Batch]:
    """Prepared batches in ``source`` order. ``workers=0``: read and prepare inline, one batch at
    a time (the serial path). Otherwise a feeder thread pulls ``source`` (the reading) and
    submits each batch to a pool of ``threads`` threads (default ``workers``; 0: the feeder runs
    ``prepare`` itself, for a ``prepare`` with nothing to do, see :func:`prepare_threads`); at most
    ``depth`` batches are read ahead. ``profile.waited`` records how long the consumer waited for
    each batch."""
    if workers <= 0:
        it = iter(source)
        while True:
            started = time.perf_counter()
            batch = next(it, None)
            if batch is None:
                return
            batch = prepare(batch)
            batch.profile.waited = time.perf_counter() - started
            yield batch
    ahead: "queue.Queue[object]" = queue.Queue(maxsize=max(depth, 1))
    stop = threading.Event()
    threads = workers if threads is None else threads
    pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="mmlb-prepare") if threads > 0 else None

    def put(item) -> bool:
        while not stop.is_set():
            try:
                ahead.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def feed() -> None:
        try:
            for batch in source:
                if not put(pool.submit(prepare, batch) if pool is not None else prepare(batch)):
                    return
            put(_DONE)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the consumer
            put(_Failed(exc))

    feeder = threading.Thread(target=feed, name="mmlb-read", daemon=True)
    feeder.start()
    try:
        while True:
            started = time.perf_counter()
            item = ahead.get()
            if item is _DONE:
                return
            if isinstance(item, _Failed):
                raise item.exc
            batch = item.result() if isinstance(item, Future) else item
            batch.profile.waited = time.perf_counter() - started
            yield batch
    finally:
        stop.set()
        feeder.join(timeout=5)
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


def gpu_peak_memory() -> Optional[int]:
    """Peak bytes torch allocated on CUDA in this process, or None (no CUDA, torch not loaded:
    it is never imported just to say n/a)."""
    torch = sys.modules.get("torch")
    try:
        if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
            return int(torch.cuda.max_memory_allocated())
    except Exception:  # noqa: BLE001 - a broken CUDA setup only loses the figure
        return None
    return None
