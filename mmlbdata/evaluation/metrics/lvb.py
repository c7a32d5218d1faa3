"""LongVideoBench: option letter accuracy, broken down by duration, category and level."""
from __future__ import annotations

from mmlbdata.evaluation import parse
from mmlbdata.evaluation.metrics.common import golds
from mmlbdata.evaluation.metrics.registry import Metric, ScoreResult, register


@register("lvb_mc")
class LVBMC(Metric):
    """Preambles ("The answer is", "Answer:", "Best option:", ...) dropped, then the first
    standalone A-E letter; none is wrong unless ``random_fallback=True`` (parity option)."""

    group_by = ("duration_group", "question_category", "level", "topic_category")

    def score(self, prediction, example):
        gold = parse.letter_of((golds(example) or [""])[0], letters="ABCDE")
        letter = parse.extract_letter(prediction or "", letters="ABCDE", rules="lvb",
                                      random_fallback=self.options.get("random_fallback", False),
                                      seed=example.get("id", ""))
        return ScoreResult(float(letter is not None and letter == gold), letter)
