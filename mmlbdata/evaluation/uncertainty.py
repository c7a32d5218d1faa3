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
    return np.percentile(means, [tail, 100 - tail]).tolist()


def summary(values: Sequence[float]) -> dict:
    """``{"stderr", "ci95"}`` of the mean of ``values`` (the stderr with lmms-eval's own arithmetic,
    so both print the same digits)."""
    return {"stderr": mean_stderr(values), "ci95": bootstrap_interval(values)}
