"""The bootstrap interval's percentiles are numpy's (``numpy.percentile``, linear method) to the
last digit, worked out from one sort instead of numpy's general function (issue 36)."""
from __future__ import annotations

import math
import random

import numpy as np

from mmlbdata.evaluation import uncertainty
from mmlbdata.evaluation.uncertainty import bootstrap_interval, linear_percentiles


def _same(got: list[float], want) -> bool:
    return all((math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
               for a, b in zip(got, [float(w) for w in want])) and len(got) == len(want)


def test_linear_percentiles_equal_numpy_digit_for_digit():
    """Random, tied, integer-valued, signed-zero, infinite and NaN samples of 1 to 3,000 values, at
    the interval's own percentiles and at the edges (0, 100, the first and last virtual index)."""
    rnd = random.Random(36)
    samples = [[0.5], [-0.0, 0.0], [1.0, 1.0], [float("inf"), 1.0], [float("-inf"), float("inf")],
               [0.0, float("nan"), 1.0], [float("inf")] * 3]
    for n in (2, 3, 7, 10, 999, 1000, 1001, 3000):
        samples.append([rnd.random() for _ in range(n)])
        samples.append([rnd.randrange(n) / n for _ in range(n)])  # ties, as bootstrap means of an accuracy are
        samples.append([rnd.choice([0.0, 1.0, 0.5]) for _ in range(n)])
    levels = [0.95, 0.9, 0.99, 0.5, 0.999, 0.0, 1.0]
    percents = [[100 * (1 - level) / 2, 100 - 100 * (1 - level) / 2] for level in levels] + [[0, 100], [33.3, 66.7, 50]]
    for values in samples:
        for chosen in percents:
            assert _same(linear_percentiles(values, chosen), np.percentile(values, chosen)), (values[:5], chosen)


def test_the_bootstrap_interval_is_the_numpy_percentile_of_its_resampled_means(monkeypatch):
    """bootstrap_interval's figure equals np.percentile over the same seeded means, for an accuracy
    (few distinct scores) and for ROUGE-like scores (resampled directly)."""
    rnd = random.Random(7)
    seen = []
    original = uncertainty.linear_percentiles

    def keep(means, chosen):
        seen.append((np.array(means, copy=True), list(chosen)))
        return original(means, chosen)

    monkeypatch.setattr(uncertainty, "linear_percentiles", keep)
    for values in ([float(rnd.random() < 0.3) for _ in range(3000)], [rnd.random() for _ in range(500)]):
        seen.clear()
        got = bootstrap_interval(values)
        [(means, chosen)] = seen
        assert len(means) == uncertainty.BOOTSTRAP_ITERS and _same(got, np.percentile(means, chosen))


def test_a_percent_outside_0_to_100_raises_as_numpy_does():
    import pytest

    for chosen in ([-1.0, 50.0], [101.0], [float("nan")]):
        with pytest.raises(ValueError):
            np.percentile([1.0, 2.0], chosen)
        with pytest.raises(ValueError, match=r"range \[0, 100\]"):
            linear_percentiles([1.0, 2.0], chosen)
    with pytest.raises(ValueError):
        bootstrap_interval([0.0, 1.0], level=1.5)
