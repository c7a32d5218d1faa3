"""Helpers every family module uses: gold answers, meta, the raw-vs-parsed max rule."""
from __future__ import annotations

import json
from typing import Callable

from mmlbdata.evaluation.metrics.official import CRASHES, crash_text
from mmlbdata.evaluation.metrics.registry import ScoreResult
from mmlbdata.evaluation.parse import candidates


def golds(example: dict) -> list[str]:
    answers = example.get("answers")
    if answers is None:
        return []
    if isinstance(answers, str):
        return [answers]
    return [str(a) for a in answers]


def meta_of(example: dict) -> dict:
    """``meta`` as a dict whether the dataset stores it as JSON text or a mapping ({} for none, or
    for text that is not a JSON object)."""
    meta = example.get("meta")
    if meta is None or meta == "":
        return {}
    if not isinstance(meta, str):
        return dict(meta)
    try:
        value = json.loads(meta)
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def best_of(prediction: str, fn: Callable[[str], ScoreResult]) -> ScoreResult:
    """MMLongBench's rule: score the raw output and the text after its answer prefix; keep the
    better one (ties keep the raw output's parse)."""
    best = None
    for text in candidates(prediction):
        result = fn(text)
        if best is None or result.score > best.score:
            best = result
    return best


def official_result(compute: Callable[[], float], parsed: str | None = None, **extra) -> ScoreResult:
    """An official scorer's value; where the official code would crash, 0.0 with the exception
    kept in ``extra["official_crash"]``."""
    try:  # no wrapper built per call: this runs once per scored example
        score = float(compute())
    except CRASHES as exc:  # noqa: B902 - the official run would stop here
        score = 0.0
        extra["official_crash"] = crash_text(exc)
    return ScoreResult(score, parsed, extra)
