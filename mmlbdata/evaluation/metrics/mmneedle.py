"""MMNeedle: existence, index and exact accuracy for single and multiple needles.

Gold (``answers[0]``): ``"i, r, c"`` (1-based image index, row, column) for one needle,
``"i, r, c; i, r, c"`` for several, ``"-1"`` (or an index of 0) for a negative sample.
The default parser tolerates spaces, brackets, parentheses and an ``Answer:`` prefix;
``parity="official"`` (or ``strict=True``) applies the official string comparisons
(``evaluate.py`` for one needle, ``evaluate_multi.py`` for several; ``official.py``).
"""
from __future__ import annotations

import re
from collections import defaultdict

from mmlbdata.evaluation import parse
from mmlbdata.evaluation.metrics import official as off
from mmlbdata.evaluation.metrics.common import meta_of
from mmlbdata.evaluation.metrics.registry import Metric, ScoreResult, mean, register

Needles = list[tuple[int, ...]]


def parse_needles(text: str) -> Needles:
    """``"2, 1, 3; 4, 2, 2"`` -> [(2, 1, 3), (4, 2, 2)]; tolerant of brackets and prefixes."""
    text = parse.strip_prefix(text or "") or (text or "")
    groups = [g for g in re.split(r";|\n|\)\s*,?\s*\(|\]\s*,?\s*\[", text) if re.search(r"-?\d", g)]
    return [tuple(parse.ints_of(re.findall(r"-?\d+", g))) for g in groups]


def gold_of(example: dict) -> tuple[str, bool, object]:
    """(gold answer, multi-needle or not, ``meta["k"]``): several needles when the gold has a
    ``;`` or meta's ``k`` is over 1. The gold is ``answers`` itself when text, else its first item
    ("-1" for none)."""
    answers = example.get("answers")
    gold = answers if isinstance(answers, str) else str(answers[0]) if answers else "-1"
    k = meta_of(example).get("k")
    return gold, ";" in gold or (isinstance(k, int) and k > 1), k


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
    def score(self, prediction, example):
        gold, multi, k = gold_of(example)
        prediction = prediction or ""
        if self.official or self.options.get("strict"):
            parts = off.needle_multi(gold, prediction, k) if multi else off.needle_single(gold, prediction)
            return ScoreResult(parts["exact"], prediction, parts)
        res = _tolerant(gold, prediction)
        res["multi"] = multi
        return ScoreResult(res["exact"], str(parse_needles(prediction)), res)

    def aggregate(self, results, examples):
        """Headline: exact accuracy over all; then existence / index / exact for positives and
        existence for negatives, each for single and multi needle separately."""
        out = {"score": mean(r.score for r in results), "n": len(results)}
        groups = defaultdict(list)
        for r in results:
            groups[("multi" if r.extra["multi"] else "single", r.extra["positive"])].append(r.extra)
        for (kind, positive), parts in sorted(groups.items()):
            tag = f"{kind}.{'pos' if positive else 'neg'}"
            out[f"{tag}.n"] = len(parts)
            out[f"{tag}.exist"] = mean(p["exist"] for p in parts)
            if positive:
                out[f"{tag}.index"] = mean(p["index"] for p in parts)
                out[f"{tag}.exact"] = mean(p["exact"] for p in parts)
        return out
