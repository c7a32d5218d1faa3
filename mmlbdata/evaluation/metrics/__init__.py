# isort: skip_file  (the registry before the families that register into it)
"""Scorers for every family, looked up by the example's ``metric`` name.

:mod:`.registry` holds the table and the :class:`Metric` base; :mod:`.families` imports every
family module so that each registers itself, before anything here can be looked up.
"""
from mmlbdata.evaluation.metrics import families  # noqa: E402,F401  (after the registry: every family registers now)
from mmlbdata.evaluation.metrics.registry import Metric, ScoreResult, get_metric, metric_names, register

__all__ = ["Metric", "ScoreResult", "get_metric", "metric_names", "register"]
