"""Scorers for every family, looked up by the example's ``metric`` name."""
from .registry import Metric, ScoreResult, get_metric, metric_names, register

__all__ = ["Metric", "ScoreResult", "get_metric", "metric_names", "register"]
