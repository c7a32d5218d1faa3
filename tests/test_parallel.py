"""``mmlbdata.core.parallel.map_units`` without Ray: results in input order whatever finishes first,
the setup run in each worker before its units, a kept pool reused, units left unstarted when the
caller stops early. (The Ray path: tests/test_ray_units.py.)"""
from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

from mmlbdata.core import parallel

_PREFIX = None


def _set_prefix(prefix: str) -> None:
    global _PREFIX
    _PREFIX = prefix


def _labelled(item: int) -> str:
    time.sleep(0.05 * (item % 3))  # later items often finish first
    return f"{_PREFIX}{item}"


def test_local_pool_keeps_input_order_and_runs_the_setup(monkeypatch):
    monkeypatch.delenv(parallel.UNITS_ON_RAY, raising=False)
    out = list(parallel.map_units(_labelled, range(8), num_proc=2, window=3, setup=(_set_prefix, ("u",))))
    assert out == [f"u{i}" for i in range(8)]


def test_serial_when_one_process(monkeypatch):
    monkeypatch.delenv(parallel.UNITS_ON_RAY, raising=False)
    assert list(parallel.map_units(_labelled, [2, 0, 1], num_proc=1, setup=(_set_prefix, ("s",)))) == \
        ["s2", "s0", "s1"]


def test_kept_pool_is_reused_and_an_early_stop_cancels_the_rest(monkeypatch):
    monkeypatch.delenv(parallel.UNITS_ON_RAY, raising=False)
    _set_prefix("k")
    started = []

    def unit(item):
        started.append(item)
        return item * item

    with ThreadPoolExecutor(1) as pool:
        units = parallel.map_units(unit, range(100), num_proc=1, window=4, pool=lambda: pool)
        assert [next(units), next(units)] == [0, 1]
        units.close()
    assert len(started) <= 6  # the window, not the 100 items


def test_ray_context_is_set_and_restored(monkeypatch):
    monkeypatch.delenv(parallel.UNITS_ON_RAY, raising=False)
    assert not parallel.units_on_ray()
    with parallel.ray_units():
        assert parallel.units_on_ray()
    assert not parallel.units_on_ray()
