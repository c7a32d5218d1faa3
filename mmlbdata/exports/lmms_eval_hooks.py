"""The functions an exported lmms-eval task calls (its ``utils.py`` imports them from here).

``doc_to_visual`` returns the images in prompt order; ``doc_to_text`` gives the prompt with each
``<image>`` replaced by the model's image token (default: kept as ``<image>``); ``doc_to_messages``
gives the interleaved chat form (text and images in order) for chat models; ``process_results``
scores with the metric the row names, looked up in ``mmlbdata.evaluation``'s registry.

lmms-eval computes a standard error only for its own aggregation functions (``mean`` ...); ours is
the metric's own aggregate, so its ``stderr`` column reads "N/A". The task therefore also reports
``mmlb_score_stderr`` (:func:`aggregate_stderr`): the standard error of that aggregate, analytic
(sample standard deviation / sqrt(n), lmms-eval's ``mean_stderr``) when the aggregate is the mean of
the per-example scores (every metric's ``mean_score``, even one whose ``aggregate`` adds notes, as
document QA's does), else a seeded bootstrap of the metric's own aggregate.

``MMLB_PARITY=official`` in the environment makes the hooks score as the benchmark's official code
does (the same switch as ``mmlb eval --parity official``); ``MMLB_PROTOCOL=v1.0`` picks MMLongBench's
paper protocol instead of v1.1 (``mmlb eval --protocol``); ``MMLB_JUDGE_*`` configure the judge
(:mod:`.harness_options`). Without a judge a summary row is unscorable: reported so (a NaN score,
``unscorable`` in the aggregate), never an exception that ends the whole lmms-eval run.
In parity mode an example the official API runners leave out (empty parsed output, marked
``extra.left_out``) is left out of the mean and its standard error, as ``mmlb eval`` does.
"""
from __future__ import annotations

import math
import random
from types import SimpleNamespace
from typing import Any, Optional

from mmlbdata.evaluation.uncertainty import mean_stderr, sample_stddev
from mmlbdata.exports import harness_options, split_prompt

TEXT_FIELDS = ("id", "dataset", "length", "num_tokens", "prompt", "question", "answers", "metric", "meta")
SCORE_KEY = "mmlb_score"
STDERR_KEY = "mmlb_score_stderr"
BOOTSTRAP_ITERS = 1000
_OFFICIAL: dict = {}


class MetricUnavailableError(RuntimeError):
    """A row names a metric the evaluator's registry does not have."""


# lmms-eval passes no options to hooks: mmlb eval's flags come from the environment
parity, protocol = harness_options.parity, harness_options.protocol


def get_metric(name: str, scope: tuple = ()) -> Any:
    """``mmlbdata.evaluation.metrics``' registry entry for ``name``, at the parity and protocol
    ``$MMLB_PARITY`` and ``$MMLB_PROTOCOL`` ask for. Official instances are kept per ``scope`` (a
    doc's dataset and length: the file the official code loads at a time)."""
    from mmlbdata.evaluation import metrics  # the families' scorers, imported when a doc is scored

    try:
        options = {"protocol": protocol(), **harness_options.judge_options().get(name, {})}
        if parity() == "default":
            return metrics.get_metric(name, **options)
        # one instance per metric and loaded file: official binary_acc's default answer cycles
        # over the docs in order and data.py restarts it for each file it loads
        key = (name, parity(), protocol(), *scope)
        if key not in _OFFICIAL:
            _OFFICIAL[key] = metrics.get_metric(name, parity=parity(), **options)
        return _OFFICIAL[key]
    except KeyError as err:
        raise MetricUnavailableError(f"metric {name!r} is not in mmlbdata's registry: {err}") from err


def _image_token(kwargs: Optional[dict]) -> str:
    return (kwargs or {}).get("image_token", "<image>")


def doc_to_visual(doc: dict) -> list:
    """The example's images in prompt order, as RGB PIL images."""
    return [image.convert("RGB") for image in doc["images"]]


def doc_to_text(doc: dict, lmms_eval_specific_kwargs: Optional[dict] = None) -> str:
    kwargs = lmms_eval_specific_kwargs or {}
    text = _image_token(kwargs).join(split_prompt(doc["prompt"]))
    return f"{kwargs.get('pre_prompt', '')}{text}{kwargs.get('post_prompt', '')}"


def doc_to_messages(doc: dict, lmms_eval_specific_kwargs: Optional[dict] = None) -> list[dict]:
    """One user turn: text segments and images interleaved exactly as in ``prompt``."""
    kwargs = lmms_eval_specific_kwargs or {}
    segments = split_prompt(doc["prompt"])
    segments[0] = kwargs.get("pre_prompt", "") + segments[0]
    segments[-1] = segments[-1] + kwargs.get("post_prompt", "")
    images = doc_to_visual(doc)
    content: list[dict] = []
    for index, segment in enumerate(segments):
        if segment:
            content.append({"type": "text", "text": segment})
        if index < len(images):
            content.append({"type": "image", "url": images[index]})
    return [{"role": "user", "content": content}]


def doc_to_target(doc: dict) -> str:
    answers = doc.get("answers") or []
    return answers[0] if len(answers) == 1 else " | ".join(answers)


def process_results(doc: dict, results: list) -> dict:
    """Score the model's first output with the row's metric; the item keeps what aggregation needs."""
    prediction = results[0] if results else ""
    example = {k: doc[k] for k in TEXT_FIELDS if k in doc}
    scored = get_metric(doc["metric"], (doc.get("dataset"), doc.get("length"))).score(prediction, example)
    item = {"metric": doc["metric"], "score": float(scored.score), "parsed": getattr(scored, "parsed", None),
            "extra": getattr(scored, "extra", {}), "example": example}
    return {SCORE_KEY: item, STDERR_KEY: item}


def _own_aggregate(items: list[dict]) -> Optional[Any]:
    """The single metric of ``items`` when it has an aggregate of its own (not the plain mean)."""
    names = {item["metric"] for item in items}
    if len(names) != 1:
        return None
    metric = get_metric(names.pop())
    aggregate_fn = getattr(type(metric), "aggregate", None)
    if aggregate_fn is None:
        return None
    from mmlbdata.evaluation.metrics.registry import Metric

    return metric if aggregate_fn is not Metric.aggregate else None


def _results(items: list[dict]) -> list[SimpleNamespace]:
    """The items as the ``ScoreResult``-like objects a metric's ``aggregate``/``averaged`` read."""
    return [SimpleNamespace(score=i["score"], parsed=i["parsed"], extra=i["extra"] or {}) for i in items]


def _metric_aggregate(metric: Any, items: list[dict]) -> float:
    return float(metric.aggregate(_results(items), [i["example"] for i in items])["score"])


def _counted(items: list[dict]) -> list[dict]:
    """The items a mean averages: parity mode's ``extra.left_out`` ones are not (``Metric.aggregate``
    and ``mmlb eval`` skip them too)."""
    return [i for i in items if not (i.get("extra") or {}).get("left_out")]


def aggregate(items: list[dict]) -> float:
    """The metric's own aggregate (some are corpus-level), or the mean over mixed metrics."""
    if not items:
        return 0.0
    metric = _own_aggregate(items)
    if metric is not None:
        return _metric_aggregate(metric, items)
    counted = _counted(items)
    return sum(i["score"] for i in counted) / len(counted) if counted else 0.0


def _analytic(scores: list[float]) -> float:
    """lmms-eval's ``mean_stderr`` (``mmlb eval``'s too): sample standard deviation / sqrt(n); 0 for
    one score, NaN for none (a task whose rows were all unscorable has no score and no error either)."""
    return mean_stderr(scores) if scores else math.nan


def aggregate_stderr(items: list[dict]) -> float:
    """Standard error of :func:`aggregate` over ``items``: analytic when the aggregate is a mean
    (mixed metrics, or a metric whose ``mean_score`` says its score is the mean of the results it
    ``averaged``, whatever its ``aggregate`` adds), else a seeded bootstrap of the metric's own
    aggregate; 0 for fewer than two items."""
    metric = _own_aggregate(items)
    if metric is None or getattr(metric, "mean_score", False):
        if metric is None or not hasattr(metric, "averaged"):
            return _analytic([i["score"] for i in _counted(items)])
        return _analytic([r.score for r in metric.averaged(_results(items))])
    items = _counted(items)  # a left-out item is in no aggregate, so in no resample either
    if len(items) < 2:
        return 0.0
    from mmlbdata.core.seeding import stable_seed

    rng = random.Random(stable_seed("lmms-eval stderr", len(items)))
    boots = [_metric_aggregate(metric, rng.choices(items, k=len(items))) for _ in range(BOOTSTRAP_ITERS)]
    return sample_stddev(boots)
