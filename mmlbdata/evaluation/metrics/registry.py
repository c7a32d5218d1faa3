"""Metric registry: the ``metric`` column of every example names one entry here.

lm-evaluation-harness style: ``@register("name")`` on a :class:`Metric` subclass. A metric
scores one prediction against one example (``score``), may batch (``score_many``: concurrency
for the judge-backed metrics) and turns per-example results into aggregates (``aggregate``; the default is the mean score, some
benchmarks need corpus-level formulas).

This module imports no metric family (they import it): the package ``__init__`` imports
:mod:`.families` right after it, so the table is complete before any lookup (this module can only
be imported through that package).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

from mmlbdata.official import protocol as protocols

_REGISTRY: dict[str, type["Metric"]] = {}


@dataclass(slots=True)
class ScoreResult:
    """One scored prediction: ``score`` in [0, 1], the answer the parser read, extras."""

    score: float
    parsed: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


#: ``default``: this project's scorer (official bugs fixed, each difference in
#: ``mmlbdata/official/deviations.py``); ``official``: what the benchmark's own code returns
PARITIES = ("default", "official")


def parity_of(options: dict) -> str:
    """The ``parity`` option (default: "default")."""
    parity = options.get("parity") or "default"
    if parity not in PARITIES:
        raise ValueError(f"parity must be one of {', '.join(PARITIES)}, not {parity!r}")
    return parity


#: the example key that carries its prediction line's ``generated_tokens`` (``reads_generated_tokens``)
GENERATED_TOKENS = "_generated_tokens"


class Metric:
    """Base class. Subclasses implement ``score``; options come from the CLI/config
    (``parity="official"`` makes every metric return the official scorer's value)."""

    name = ""
    #: meta keys whose values get their own breakdown table in the report
    group_by: Sequence[str] = ()
    #: whether ``score`` reads the example's row in its config (``"_row"``, set by ``mmlb eval``'s
    #: engine only for such metrics): official rules whose result depends on the run's order
    reads_row = False
    #: whether ``score`` reads the prediction line's ``generated_tokens`` (:data:`GENERATED_TOKENS`,
    #: set on the example by ``mmlb eval``'s engine only for such metrics): an official rule keyed on it
    reads_generated_tokens = False

    def __init__(self, **options: Any) -> None:
        self.options = options
        self.parity = parity_of(options)
        #: MMLongBench's protocol (``protocol`` option; mmlbdata.official.protocol): what parity mode reproduces
        self.protocol = protocols.of_options(options)

    @property
    def official(self) -> bool:
        return self.parity == "official"

    @property
    def first_line(self) -> bool:
        """Whether MMLongBench's ``parse_output`` reads only the rest of the prefix's line (protocol
        v1.0) rather than everything after it (v1.1): the protocol's flag, whatever the parity (parity
        mode's parse and the judge's parsed answer both read it)."""
        return self.protocol.parse_first_line

    def score(self, prediction: str, example: dict) -> ScoreResult:  # pragma: no cover - abstract
        raise NotImplementedError

    def score_many(self, predictions: Sequence[str], examples: Sequence[dict]) -> list[ScoreResult]:
        """One result per prediction, in order."""
        return [self.score(p, e) for p, e in zip(predictions, examples)]

    #: whether ``aggregate()["score"]`` is the mean of the scores of :meth:`averaged` (True for every
    #: metric here: an ``aggregate`` override that adds breakdowns or notes keeps it). What makes
    #: a standard error analytic (the lmms-eval hooks); a corpus-level score would set it False.
    mean_score = True

    def averaged(self, results: Sequence[ScoreResult]) -> list[ScoreResult]:
        """The results the headline score averages: all but those marked ``extra["left_out"]``
        (official rules that skip an example)."""
        return [r for r in results if not r.extra.get("left_out")]

    def aggregate(self, results: Sequence[ScoreResult], examples: Sequence[dict]) -> dict[str, float]:
        """Corpus-level numbers; ``score`` is the headline (mean of per-example scores). Results
        marked ``extra["left_out"]`` (official rules that skip an example) are not averaged."""
        counted = self.averaged(results)
        agg = {"score": mean(r.score for r in counted), "n": len(counted)}
        if len(counted) != len(results):
            agg["left_out"] = len(results) - len(counted)
        return agg


def register(name: str) -> Callable[[type[Metric]], type[Metric]]:
    def wrap(cls: type[Metric]) -> type[Metric]:
        if name in _REGISTRY and _REGISTRY[name] is not cls:
            raise ValueError(f"metric {name!r} registered twice")
        cls.name = name
        _REGISTRY[name] = cls
        return cls

    return wrap


def get_metric(name: str, **options: Any) -> Metric:
    """The metric registered as ``name``, built with ``options``."""
    try:
        cls = _REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown metric {name!r}; known: {', '.join(sorted(_REGISTRY))}") from None
    return cls(**options)


def metric_names() -> list[str]:
    return sorted(_REGISTRY)


def mean(values: Iterable[float]) -> float:
    values = list(values)
    return sum(values) / len(values) if values else 0.0
