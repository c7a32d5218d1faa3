"""Metric registry: the ``metric`` column of every example names one entry here.

lm-evaluation-harness style: ``@register("name")`` on a :class:`Metric` subclass. A metric
scores one prediction against one example (``score``), may batch (``score_many``: concurrency
for the judge-backed metrics, work done once per config, results as :class:`ScoreColumns`) and
turns per-example results into aggregates (``aggregate``; the default is the mean score, some
benchmarks need corpus-level formulas).

This module imports no metric family (they import it): the package ``__init__`` imports
:mod:`.families` right after it, so the table is complete before any lookup (this module can only
be imported through that package).
"""
from __future__ import annotations

from collections.abc import Sequence as SequenceABC
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, Callable, Iterable, Sequence

from mmlbdata.official import protocol as protocols

_REGISTRY: dict[str, type["Metric"]] = {}


@dataclass(slots=True)
class ScoreResult:
    """One scored prediction: ``score`` in [0, 1], the answer the parser read, extras."""

    score: float
    parsed: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class ScoreColumns(SequenceABC):
    """A config's results as three columns (``scores``, ``parsed``, ``extras``) instead of a
    :class:`ScoreResult` per example. Where the official rule is a few string operations per
    example (MMNeedle's, about 1 us), building a result object for each, and reading its fields back
    in every pass of the engine, cost more than the rule; a metric like that returns its results as
    columns, and the engine reads every metric's results as columns (:meth:`of`).

    Still a sequence of results: indexing and iterating build ``ScoreResult`` objects on access
    (so changing one of those changes nothing here: change the columns), and it equals a list of
    the same results."""

    __slots__ = ("extras", "parsed", "scores")
    __hash__ = None  # mutable, as a list of results is

    def __init__(self, scores: list[float], parsed: list, extras: list[dict]) -> None:
        if not len(scores) == len(parsed) == len(extras):
            raise ValueError(f"columns of different lengths: {len(scores)} scores, {len(parsed)} parsed, "
                             f"{len(extras)} extras")
        self.scores, self.parsed, self.extras = scores, parsed, extras

    @classmethod
    def of(cls, results: Sequence[ScoreResult]) -> ScoreColumns:
        """``results`` as columns (themselves when they already are)."""
        if isinstance(results, cls):
            return results
        return cls(list(map(_SCORE, results)), list(map(_PARSED, results)), list(map(_EXTRA, results)))

    def __len__(self) -> int:
        return len(self.scores)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return ScoreColumns(self.scores[index], self.parsed[index], self.extras[index])
        return ScoreResult(self.scores[index], self.parsed[index], self.extras[index])

    def __iter__(self):
        return map(ScoreResult, self.scores, self.parsed, self.extras)

    def __eq__(self, other) -> bool:
        if not isinstance(other, SequenceABC) or isinstance(other, (str, bytes)):
            return NotImplemented
        return list(self) == list(other)

    def __repr__(self) -> str:
        return f"ScoreColumns({list(self)!r})"


_SCORE, _PARSED, _EXTRA = attrgetter("score"), attrgetter("parsed"), attrgetter("extra")


class ReadOnlyDict(dict):
    """A dict that refuses changes: one breakdown shared by every result with the same outcome
    (MMNeedle's official string rules have 32), so none is built per example, and a change through
    one result cannot reach the others. ``==`` and JSON see a plain dict; copies and pickles stay
    read-only (several results copied together share one again); ``dict(...)`` gives a mutable one."""

    __slots__ = ()

    def __init__(self, *args, **kwargs):
        if self:  # d.__init__(exact=0.0) on a built one would change it in place
            self._refuse()
        super().__init__(*args, **kwargs)

    def _refuse(self, *args, **kwargs):
        raise TypeError("this breakdown is shared by many results and read-only: change a dict(...) copy")

    __setitem__ = __delitem__ = __ior__ = update = setdefault = pop = popitem = clear = _refuse

    def __reduce__(self):
        return ReadOnlyDict, (dict(self),)


#: ``default``: this project's scorer (official bugs fixed, each difference in
#: ``mmlbdata/official/deviations.py``); ``official``: what the benchmark's own code returns
PARITIES = ("default", "official")


def parity_of(options: dict) -> str:
    """The ``parity`` option (``original_bugs=True`` is the older spelling of "official")."""
    parity = options.get("parity") or ("official" if options.get("original_bugs") else "default")
    if parity not in PARITIES:
        raise ValueError(f"parity must be one of {', '.join(PARITIES)}, not {parity!r}")
    return parity


class Metric:
    """Base class. Subclasses implement ``score``; options come from the CLI/config
    (``parity="official"`` makes every metric return the official scorer's value)."""

    name = ""
    #: meta keys whose values get their own breakdown table in the report
    group_by: Sequence[str] = ()
    #: whether ``score`` reads the example's row in its config (``"_row"``, set by ``mmlb eval``'s
    #: engine only for such metrics): official rules whose result depends on the run's order
    reads_row = False
    #: whether ``score_many`` may mark a result ``extra["left_out"]`` or ``extra["unscorable"]`` (an
    #: official rule that skips an example, a judge that is not configured). A metric that never does
    #: says False, and the engine need not look through its results for them.
    may_leave_out = True

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

    @property
    def calls_out(self) -> bool:
        """Whether scoring with these options may call a model (an LLM ``judge`` or ``extractor``
        client, or the stand-in that says one is needed)."""
        return any(self.options.get(key) is not None for key in ("judge", "extractor"))

    def score(self, prediction: str, example: dict) -> ScoreResult:  # pragma: no cover - abstract
        raise NotImplementedError

    def score_many(self, predictions: Sequence[str], examples: Sequence[dict]) -> Sequence[ScoreResult]:
        """One result per prediction, in order: a list, or :class:`ScoreColumns` where the rule is
        cheaper than a result object per example."""
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
