"""How sure a score is: the standard error and a bootstrap interval of a mean of per-example scores.

The standard error is lmms-eval's ``mean_stderr`` (``lmms_eval/api/metrics.py``): the sample
standard deviation (n - 1 in the denominator) over sqrt(n), so ``mmlb eval`` and the lmms-eval
export (``mmlb_score_stderr``) print the same figure for the same scores. lmms-eval bootstraps the
aggregates that are not a plain mean; the headline of ``mmlb eval`` is always a mean, so here the
bootstrap gives the other figure a reader wants: a 95% percentile interval, resampled with a fixed
seed (same scores => same interval, run after run).
"""
from __future__ import annotations

import math
from typing import Sequence

BOOTSTRAP_ITERS = 1000
#: resamples drawn per numpy call: memory stays near CHUNK x n x 8 bytes whatever ``iters`` is
CHUNK = 100
#: up to this many distinct scores, resamples are drawn as multinomial counts of each
FEW_DISTINCT = 64


def sample_stddev(values: Sequence[float]) -> float:
    """Standard deviation with Bessel's correction (0 for fewer than two values)."""
    if len(values) < 2:
        return 0.0
    mu = sum(values) / len(values)
    return math.sqrt(sum([(v - mu) ** 2 for v in values]) / (len(values) - 1))


def mean_stderr(values: Sequence[float]) -> float:
    """lmms-eval's ``mean_stderr``: sample standard deviation / sqrt(n) (0 below two values)."""
    return sample_stddev(values) / math.sqrt(len(values)) if len(values) >= 2 else 0.0


def bootstrap_interval(values: Sequence[float], iters: int = BOOTSTRAP_ITERS, level: float = 0.95,
                       seed: int = 0) -> list[float]:
    """The ``level`` percentile interval of the mean over ``iters`` seeded resamples ([] for no value).

    A resample of n scores drawn with replacement is, in distribution, a multinomial draw of how
    many times each distinct score comes back; drawing those counts costs iters x (distinct
    scores), not iters x n (two distinct scores for an accuracy, whatever the config's size); with
    many distinct scores the scores themselves are resampled.
    """
    import numpy as np

    if not len(values):
        return []
    scores = np.asarray(values, dtype=float)
    distinct, counts = np.unique(scores, return_counts=True)
    rng = np.random.default_rng(seed)
    n = len(scores)
    if len(distinct) <= FEW_DISTINCT:  # one draw: iters x distinct counts (chunks would draw the same stream)
        means = rng.multinomial(n, counts / n, size=iters) @ distinct / n
    else:  # many distinct scores (ROUGE, F1): resample the scores themselves, CHUNK resamples at a time
        means = np.concatenate([scores[rng.integers(0, n, size=(min(CHUNK, iters - start), n))].mean(axis=1)
                                for start in range(0, iters, CHUNK)])
    tail = 100 * (1 - level) / 2
    return linear_percentiles(means, [tail, 100 - tail])


def linear_percentiles(values, percents: Sequence[float]) -> list[float]:
    """``numpy.percentile(values, percents)`` (its default, linear method) of float64 values, as
    floats, from one sort: numpy's own function makes some 80 Python calls for what is a sort and
    two interpolations, more than the resampling itself costs in a report of a few thousand scores.
    Every step is numpy's (the virtual index, its floor, and ``_lerp``'s two sides of 0.5), so the
    digits are numpy's, but for the sign of a zero result among mixed -0.0 and 0.0 (numpy
    partitions, this sorts; bootstrap means of scores >= 0 are never -0.0). A NaN anywhere gives
    NaN, and a percent outside [0, 100] raises, as numpy's do. ``tests/test_eval_uncertainty.py``
    checks both against numpy."""
    import numpy as np

    if not all(0 <= percent <= 100 for percent in percents):
        raise ValueError(f"percentiles must be in the range [0, 100], not {list(percents)}")
    ordered = np.sort(np.asarray(values, dtype=float).ravel()).tolist()
    n = len(ordered)
    if n and ordered[-1] != ordered[-1]:  # NaNs sort last
        return [float("nan")] * len(percents)
    out = []
    for percent in percents:  # numpy's _quantile and _lerp, one quantile at a time
        q = percent / 100
        virtual = (n - 1) * q  # the linear method's virtual index
        if virtual >= n - 1:  # at or past the last value: both neighbours the last
            below = above = -1
        elif virtual < 0:
            below = above = 0
        else:
            below = math.floor(virtual)
            above = below + 1
        gamma = virtual - below
        low, high = ordered[below], ordered[above]
        step = high - low
        out.append(high - step * (1 - gamma) if gamma >= 0.5 else low + step * gamma)
    return out


def summary(values: Sequence[float]) -> dict:
    """``{"stderr", "ci95"}`` of the mean of ``values`` (the stderr with lmms-eval's own arithmetic,
    so both print the same digits)."""
    return {"stderr": mean_stderr(values), "ci95": bootstrap_interval(values)}
