"""Helpers every family module uses: gold answers, meta, the raw-vs-parsed max rule."""
from __future__ import annotations

import json
from functools import lru_cache
from typing import Callable, Iterable

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
    """``meta`` as a dict whether the dataset stores it as JSON text or a mapping. Read-only:
    JSON text is parsed once per distinct text (a config's rows share a few metas, and a metric,
    the report's groups and its categories all ask for the same row's), so the dict is shared."""
    meta = example.get("meta")
    if meta is None or meta == "":
        return {}
    if isinstance(meta, str):
        return _meta_json(meta)
    return dict(meta)


def meta_may_hold(meta, key: str) -> bool:
    """Whether ``meta`` (JSON text or a mapping) may have ``key``: a JSON text in which neither
    ``"key"`` nor a ``\\u`` escape appears cannot, so per-example metas need not be parsed to
    learn that they lack it."""
    return not isinstance(meta, str) or f'"{key}"' in meta or "\\u" in meta


def any_meta_may_hold(metas: Iterable, key: str) -> bool:
    """Whether any of ``metas`` (empty ones skipped) may have ``key`` (:func:`meta_may_hold`),
    with one search through their texts joined: a config's per-example metas are thousands of short
    texts. Neither searched string holds the newline that joins them, so no match spans two."""
    try:
        joined = "\n".join(filter(None, metas))
    except TypeError:  # a meta that is not text (a mapping): it may
        return True
    return f'"{key}"' in joined or "\\u" in joined


@lru_cache(maxsize=4096)
def _meta_json(text: str) -> dict:
    try:
        value = json.loads(text)
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
    kept in ``extra["official_crash"]`` (see ``official.crash_is_zero``)."""
    try:  # no wrapper built per call: this runs once per scored example
        score = float(compute())
    except CRASHES as exc:  # noqa: B902 - the official run would stop here
        score = 0.0
        extra["official_crash"] = crash_text(exc)
    return ScoreResult(score, parsed, extra)
