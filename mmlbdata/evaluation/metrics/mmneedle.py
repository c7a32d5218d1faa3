"""MMNeedle: existence, index and exact accuracy for single and multiple needles.

Gold (``answers[0]``): ``"i, r, c"`` (1-based image index, row, column) for one needle,
``"i, r, c; i, r, c"`` for several, ``"-1"`` (or an index of 0) for a negative sample.
The default parser tolerates spaces, brackets, parentheses and an ``Answer:`` prefix;
``parity="official"`` (or ``strict=True``) applies the official string comparisons
(``evaluate.py`` for one needle, ``evaluate_multi.py`` for several; ``official.py``).
"""
from __future__ import annotations

import re
from collections import Counter
from itertools import repeat
from operator import itemgetter

from mmlbdata.evaluation import parse
from mmlbdata.evaluation.metrics import official as off
from mmlbdata.evaluation.metrics.common import meta_may_hold, meta_of
from mmlbdata.evaluation.metrics.registry import Metric, ScoreColumns, ScoreResult, mean, register

Needles = list[tuple[int, ...]]


def parse_needles(text: str) -> Needles:
    """``"2, 1, 3; 4, 2, 2"`` -> [(2, 1, 3), (4, 2, 2)]; tolerant of brackets and prefixes."""
    text = parse.strip_prefix(text or "") or (text or "")
    groups = [g for g in re.split(r";|\n|\)\s*,?\s*\(|\]\s*,?\s*\[", text) if re.search(r"-?\d", g)]
    return [tuple(parse.ints_of(re.findall(r"-?\d+", g))) for g in groups]


def gold_of(example: dict) -> tuple[str, bool, object]:
    """(gold answer, multi-needle or not, ``meta["k"]``): several needles when the gold has a
    ``;`` or meta's ``k`` is over 1."""
    gold, k = _gold_texts([example.get("answers")])[0], _k(example.get("meta"))
    return gold, ";" in gold or _says_multi(k), k


def _gold_texts(answers_column: list) -> list[str]:
    """The gold of each example's ``answers``: the text itself, or the first of a list ("-1" for none)."""
    return [answers if isinstance(answers, str) else str(answers[0]) if answers else "-1"
            for answers in answers_column]


def _k(meta):
    """meta's ``k`` (None without one). A meta text that cannot hold a ``"k"`` key is not parsed:
    MMNeedle's metas differ per example, and a parse per example would cost more than scoring."""
    return meta_of({"meta": meta}).get("k") if meta_may_hold(meta, "k") else None


_ANSWERS, _META = itemgetter("answers"), itemgetter("meta")
_PARTS = itemgetter("multi", "positive", "exist", "index", "exact")


def _gold_and_meta_columns(examples) -> tuple[list[str], list]:
    """Each example's gold text and ``meta``: a column read at a time (no tuple per row)."""
    try:
        answers, metas = list(map(_ANSWERS, examples)), list(map(_META, examples))
    except KeyError:  # rows without answers or meta
        answers, metas = [example.get("answers") for example in examples], [example.get("meta") for example in examples]
    return _gold_texts(answers), metas


def _k_columns(metas: list) -> tuple:
    """(whether ``meta["k"]`` says several needles, ``meta["k"]``) per example, as two iterables;
    each distinct meta text is read once (a config has one or a few; MMNeedle's vary per row)."""
    try:
        distinct = {meta: _k(meta) for meta in set(metas)}
    except TypeError:  # meta mappings (rows not read from a built dataset): each row's own
        ks = [_k(meta) for meta in metas]
    else:
        if len(distinct) == 1:
            [k] = distinct.values()
            return repeat(_says_multi(k)), repeat(k)
        ks = [distinct[meta] for meta in metas]
    return [_says_multi(k) for k in ks], ks


#: id of each shared breakdown of the official rules -> its (multi, positive, exist, index, exact)
_SHARED_PARTS = {id(b): _PARTS(b) for b in off.NEEDLE_BREAKDOWNS}


def _outcomes(extras: list[dict]) -> list[tuple[tuple, int]]:
    """((multi, positive, exist, index, exact), how many results had it) of the results'
    breakdowns: counted by identity when every one is a shared one (the official rules), else by
    their parts."""
    shared = Counter(map(id, extras))
    if shared.keys() <= _SHARED_PARTS.keys():
        return [(_SHARED_PARTS[i], times) for i, times in shared.items()]
    return list(Counter(map(_PARTS, extras)).items())


def _says_multi(k) -> bool:
    return isinstance(k, int) and k > 1


def _no_needle(needle: tuple[int, ...]) -> bool:
    return all(v == -1 for v in needle) or needle[:1] == (0,)


def is_negative(needles: Needles) -> bool:
    """The gold's rule: no groups, all ``-1``, or a first index of 0 mark a negative sample."""
    return not needles or all(all(v == -1 for v in n) for n in needles) or needles[0][:1] == (0,)


def says_no_needle(needles: Needles) -> bool:
    """A prediction claims "no needle" only when it has groups and every group says so: an
    empty or number-free answer ("", "I can't tell") is a non-answer, not a negative claim."""
    return bool(needles) and all(_no_needle(n) for n in needles)


def _tolerant(gold: str, pred: str) -> dict:
    gold_n, pred_n = parse_needles(gold), parse_needles(pred)
    pred_negative = says_no_needle(pred_n)
    if is_negative(gold_n):
        return {"positive": False, "exist": float(pred_negative), "index": float(pred_negative),
                "exact": float(pred_negative)}
    claims_needle = bool(pred_n) and not pred_negative
    index = [n[0] for n in gold_n] == [n[0] for n in pred_n if n]
    exact = [n[:3] for n in gold_n] == [n[:3] for n in pred_n]
    return {"positive": True, "exist": float(claims_needle), "index": float(index), "exact": float(exact)}


@register("mmneedle")
class MMNeedle(Metric):
    may_leave_out = False

    def score(self, prediction, example):
        if self.official or self.options.get("strict"):
            return self.score_many([prediction], [example])[0]
        gold, multi, _ = gold_of(example)
        res = _tolerant(gold, prediction or "")
        res["multi"] = multi
        return ScoreResult(res["exact"], str(parse_needles(prediction or "")), res)

    def score_many(self, predictions, examples):
        """The official rules (``off.needle_results``) over a config at once: each distinct meta
        text read once for its k, the golds read in one pass over the rows."""
        if not (self.official or self.options.get("strict")):
            return super().score_many(predictions, examples)
        golds, metas = _gold_and_meta_columns(examples)
        return off.needle_results(golds, *_k_columns(metas), predictions)

    def aggregate(self, results, examples):
        """Headline: exact accuracy over all; then existence / index / exact for positives and
        existence for negatives, each for single and multi needle separately. Every part is 0.0 or
        1.0, so each mean is worked out from how often each combination occurs (the same sums,
        exactly, as adding the parts one by one)."""
        columns = ScoreColumns.of(results)
        out = {"score": mean(columns.scores), "n": len(results)}
        sums: dict[tuple[str, bool], list] = {}
        for (multi, positive, exist, index, exact), times in _outcomes(columns.extras):
            group = sums.setdefault(("multi" if multi else "single", positive), [0, 0.0, 0.0, 0.0])
            group[0] += times
            group[1] += exist * times
            group[2] += index * times
            group[3] += exact * times
        for (kind, positive), (n, exist, index, exact) in sorted(sums.items()):
            tag = f"{kind}.{'pos' if positive else 'neg'}"
            out[f"{tag}.n"] = n
            out[f"{tag}.exist"] = exist / n
            if positive:
                out[f"{tag}.index"] = index / n
                out[f"{tag}.exact"] = exact / n
        return out
