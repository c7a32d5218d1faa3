"""Units of work inside one config (video decoding, MMNeedle grids, PDF pages), run in order.

A local build runs a config's units in a process pool on its machine; under
``mmlb build --executor ray`` the Ray task of the config sets :data:`UNITS_ON_RAY`, and the same
units become Ray tasks spread over the cluster, so the largest configs (LongVideoBench's) no
longer bound the wall time to one node. Either way :func:`map_units` yields the results in the
input order, so what the builder writes is the same bytes (the image store is content-addressed).
``ray`` is imported only on the Ray path; builders call this and never import ``ray``.
"""
from __future__ import annotations

import os
import uuid
from collections import deque
from contextlib import contextmanager
from typing import Any, Callable, Iterable, Iterator, Optional

from mmlbdata.core.extras import require

#: Set (to "1") in a process whose config runs as a Ray task: its units go to Ray too.
UNITS_ON_RAY = "MMLB_UNITS_ON_RAY"
#: Test hook: a folder where every unit run as a Ray task leaves one empty file (fn name, pid).
UNIT_LOG = "MMLB_RAY_UNIT_LOG"


def units_on_ray() -> bool:
    """Whether this process's config runs under the Ray executor."""
    return os.environ.get(UNITS_ON_RAY) == "1"


@contextmanager
def ray_units():
    """Within: :func:`map_units` schedules Ray tasks (set by the Ray task that builds a config)."""
    before = os.environ.get(UNITS_ON_RAY)
    os.environ[UNITS_ON_RAY] = "1"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(UNITS_ON_RAY, None)
        else:
            os.environ[UNITS_ON_RAY] = before


def map_units(fn: Callable, items: Iterable, *, num_proc: int, window: Optional[int] = None,
              setup: Optional[tuple[Callable, tuple]] = None, start_method: Optional[str] = None,
              pool: Optional[Callable[[], Any]] = None) -> Iterator:
    """``fn(item)`` for every item, yielded in input order, at most ``window`` in flight.

    ``setup`` is ``(initializer, args)``, run once in each worker process before its first unit
    (state too costly to send with every unit, e.g. a builder with its tokenizer). ``pool`` gives a
    long-lived local executor to reuse instead of starting one per call (asked for only locally). ``fn`` and ``setup`` must be
    module-level functions (pickled by reference). Closing the generator early cancels the
    units not started. With ``num_proc <= 1`` and no Ray, units run here, one by one.
    """
    window = window or 2 * max(num_proc, 1)
    if units_on_ray():
        yield from _on_ray(fn, items, window, setup)
    elif pool is not None:
        yield from _windowed(pool(), fn, items, window)
    elif num_proc <= 1:
        if setup is not None:
            setup[0](*setup[1])
        yield from map(fn, items)
    else:
        yield from _local_pool(fn, items, num_proc, window, setup, start_method)


def _local_pool(fn, items, num_proc, window, setup, start_method) -> Iterator:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    context = multiprocessing.get_context(start_method) if start_method else None
    initializer, initargs = setup if setup is not None else (None, ())
    with ProcessPoolExecutor(num_proc, mp_context=context, initializer=initializer, initargs=initargs) as pool:
        yield from _windowed(pool, fn, items, window)


def _windowed(pool, fn, items, window) -> Iterator:
    """Like ``pool.map`` but submitting lazily, so memory stays flat in the number of units."""
    pending: deque = deque()
    try:
        for item in items:
            pending.append(pool.submit(fn, item))
            if len(pending) >= window:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        for future in pending:
            future.cancel()


def _on_ray(fn, items, window, setup) -> Iterator:
    ray = require("ray", "ray", "units of work on Ray (mmlb build --executor ray)")
    task = _remote_unit(ray).options(name=f"mmlb-unit:{fn.__name__}")
    shared = ray.put((uuid.uuid4().hex, setup))  # once, not with every unit
    pending: deque = deque()
    try:
        for item in items:
            pending.append(task.remote(fn, item, shared))
            if len(pending) >= window:
                yield _ray_result(ray, pending.popleft())
        while pending:
            yield _ray_result(ray, pending.popleft())
    finally:
        for ref in pending:
            ray.cancel(ref)


_REMOTE: list = []  # the Ray remote function, made once per process (a PDF build calls per example)


def _remote_unit(ray):
    if not _REMOTE:
        _REMOTE.append(ray.remote(num_cpus=1, max_retries=2)(_ray_unit))
    return _REMOTE[0]


_SET_UP: set = set()  # setups already run in this Ray worker process


def _ray_unit(fn: Callable, item: Any, shared: tuple) -> Any:
    """One unit in a Ray worker: the call's setup once per worker process, then ``fn(item)``.

    Only the latest setup is remembered: a worker switching between two configs' units sets up
    again (for LongVideoBench a builder, milliseconds beside decoding a video)."""
    token, setup = shared
    if setup is not None and token not in _SET_UP:
        setup[0](*setup[1])
        _SET_UP.clear()
        _SET_UP.add(token)
    log = os.environ.get(UNIT_LOG)
    if log:
        open(os.path.join(log, f"{fn.__name__}.{os.getpid()}.{uuid.uuid4().hex}"), "w").close()
    return fn(item)


def _ray_result(ray, ref) -> Any:
    """The unit's value; a unit's own exception is raised as itself (e.g. a ``PdfError``)."""
    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as err:
        cause = getattr(err, "cause", None)
        if isinstance(cause, BaseException):
            raise cause from None
        raise
