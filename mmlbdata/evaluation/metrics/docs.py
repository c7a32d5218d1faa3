"""MMLongBench-Doc's original scorer and LongDocURL's list scorer, with LLM answer extraction.

The original pipelines first let an LLM read the free-form answer and return
``Extracted answer: ...`` / ``Answer format: ...``; that step goes through the judge client
(``extractor=<JudgeClient>``). With ``extractor=None`` ("--extractor none") predictions are taken
as already-extracted answers.
"""
from __future__ import annotations

import re
from collections import defaultdict
from math import isclose
from typing import Sequence

from mmlbdata.evaluation import parse
from mmlbdata.evaluation.metrics import official as off
from mmlbdata.evaluation.metrics.common import golds, meta_of, official_result
from mmlbdata.evaluation.metrics.registry import Metric, ScoreResult, mean, register
from mmlbdata.evaluation.prompts import load_prompt
from mmlbdata.sources.docqa import SHORT_FORMAT

NOT_ANSWERABLE = "Not answerable"
FAILED = "Failed to extract"


# --- MMLongBench-Doc eval_score ---------------------------------------------------------------

def clean_string(s, original_bugs: bool = False) -> str:
    """Lowercase; drop mile(s)/million suffixes, parentheses, surrounding quotes, $ and %.

    The original computed ``s.rstrip("mile")`` etc. and threw the result away, so units were
    never stripped; ``original_bugs=True`` reproduces that.
    """
    s = str(s).lower().strip()
    if not original_bugs:
        for suffix in ("miles", "mile", "million"):
            if s.endswith(suffix):
                s = s[: -len(suffix)].strip()
                break
    s = parse.drop_parenthesised(s).strip()
    s = re.sub(r"^['\"]|['\"]$", "", s).strip()
    s = s.strip().lstrip("$").strip()
    return s.strip().rstrip("%").strip()


#: MMLongBench-Doc's patterns that get no partial (ANLS) credit, the same in both parities
is_exact_match = off.doc_exact_match


def is_float_equal(reference: float, prediction: float) -> bool:
    """Within 1% relative of gold, gold/100 or gold*100, or equal when rounded at the shared
    number of decimals (at least 2)."""
    for item in (reference / 100, reference, reference * 100):
        if isclose(item, prediction, rel_tol=0.01):
            return True
        precision = max(min(off.decimals(prediction), off.decimals(item)), 2)
        if round(prediction, precision) == round(item, precision):
            return True
    return False


def eval_score(gold, pred, answer_format: str, original_bugs: bool = False) -> float:
    """MMLongBench-Doc's per-question score for an extracted answer."""
    clean = lambda s: clean_string(s, original_bugs)  # noqa: E731
    fmt = SHORT_FORMAT.get(answer_format, answer_format)
    if fmt == "Int":
        try:
            return float(int(gold) == int(float(str(pred).strip())))
        except (ValueError, TypeError, OverflowError):  # "inf" / "1e999": not an integer
            return 0.0
    if fmt == "Float":
        try:
            return float(is_float_equal(float(clean(gold)), float(clean(pred))))
        except (ValueError, TypeError):
            return 0.0
    if fmt in ("Str", "None"):
        gold, pred = clean(gold), clean(pred)
        return float(gold == pred) if is_exact_match(gold) else parse.anls(gold, pred)
    gold_list, pred_list = parse.as_list(gold), parse.as_list(pred)
    if len(gold_list) != len(pred_list):
        return 0.0
    gold_list = sorted(clean(a) for a in gold_list)
    pred_list = sorted(clean(a) for a in pred_list)
    if not gold_list:
        return 1.0
    if parse.is_float_text(gold_list[0]) or is_exact_match(gold_list[0]):
        return float("-".join(gold_list) == "-".join(pred_list))
    return min(parse.anls(g, p) for g, p in zip(gold_list, pred_list))


def acc_and_f1(scores: Sequence[float], gold_answers: Sequence[str], preds: Sequence[str]) -> tuple[float, float]:
    """Accuracy, and F1 with P = answerable score sum / #(pred != "Not answerable") and
    R = answerable score sum / #answerable (the original's definition)."""
    if not scores:
        return 0.0, 0.0
    acc = sum(scores) / len(scores)
    hit = sum(s for s, g in zip(scores, gold_answers) if g != NOT_ANSWERABLE)
    answerable = sum(1 for g in gold_answers if g != NOT_ANSWERABLE)
    answered = sum(1 for p in preds if p != NOT_ANSWERABLE)
    if not answerable or not answered:
        return acc, 0.0
    recall, precision = hit / answerable, hit / answered
    f1 = 2 * recall * precision / (recall + precision) if recall + precision > 0 else 0.0
    return acc, f1


# --- extraction -------------------------------------------------------------------------------

def parse_extraction(reply: str) -> str:
    """The answer between ``Extracted answer:`` and ``Answer format:``, or FAILED."""
    if not reply or "Extracted answer:" not in reply:
        return FAILED
    return reply.split("Answer format:")[0].split("Extracted answer:")[1].strip()


def extraction_messages(question: str, output: str) -> list[dict]:
    """The original request: the instruction as the user turn, the question and the model's
    free answer as a prefilled assistant turn."""
    return [
        {"role": "user", "content": load_prompt("mmlongbench_doc_extraction")},
        {"role": "assistant", "content": "\n\nQuestion:{}\nAnalysis:{}\n".format(question, output)},
    ]


class _ExtractedDocMetric(Metric):
    """Shared by the two document benchmarks: optional LLM extraction before scoring."""

    max_extraction_tokens = 256

    def extract_many(self, predictions, examples) -> list[str]:
        extractor = self.options.get("extractor")
        if extractor is None:
            return [(p or "").strip() for p in predictions]
        requests = [extraction_messages(e.get("question") or "", p or "") for p, e in zip(predictions, examples)]
        replies = extractor.complete_many(requests, max_tokens=self.max_extraction_tokens, temperature=0.0)
        return [parse_extraction(r) if r is not None else FAILED for r in replies]

    def score(self, prediction, example):
        return self.score_many([prediction], [example])[0]

    def score_many(self, predictions, examples):
        extracted = self.extract_many(predictions, examples)
        return [self.score_extracted(x, e) for x, e in zip(extracted, examples)]

    def score_extracted(self, pred: str, example: dict) -> ScoreResult:  # pragma: no cover
        raise NotImplementedError


@register("mmlongbench_doc")
class MMLongBenchDoc(_ExtractedDocMetric):
    """MMLongBench-Doc: original ``eval_score`` on the extracted answer; accuracy and F1."""

    def score_extracted(self, pred, example):
        gold = golds(example)[0] if golds(example) else ""
        fmt = meta_of(example).get("answer_format", "Str")
        if self.official:
            kind = SHORT_FORMAT.get(fmt, fmt)
            if pred == FAILED:
                return ScoreResult(0.0, pred, {"answer_format": fmt})
            return official_result(lambda: off.mmlongbench_doc(gold, pred, kind), pred, answer_format=fmt)
        score = 0.0 if pred == FAILED else eval_score(gold, pred, fmt)
        return ScoreResult(score, pred, {"answer_format": fmt})

    def aggregate(self, results, examples):
        gold = [(golds(e) or [""])[0] for e in examples]
        preds = [r.parsed or "" for r in results]
        scores = [r.score for r in results]
        acc, f1 = acc_and_f1(scores, gold, preds)
        out = {"score": acc, "acc": acc, "f1": f1, "n": len(results)}
        groups = defaultdict(list)
        for s, g, e in zip(scores, gold, examples):
            meta = meta_of(e)
            pages = parse.as_list(meta.get("evidence_pages", []))
            pages = [] if pages == [[]] else pages
            if g == NOT_ANSWERABLE:
                groups["unanswerable"].append(s)
            elif len(pages) == 1:
                groups["single_page"].append(s)
            else:
                groups["cross_page"].append(s)
            for source in parse.as_list(meta.get("evidence_sources", [])):
                if source and source != []:
                    groups[f"source={source}"].append(s)
            if meta.get("doc_type"):
                groups[f"doc_type={meta['doc_type']}"].append(s)
        out.update({f"acc[{k}]": mean(v) for k, v in sorted(groups.items())})
        return out


# --- LongDocURL -------------------------------------------------------------------------------

def greedy_list_score(gold: Sequence, pred: Sequence, original_bugs: bool = False) -> float:
    """Per gold element the best ANLS over predicted elements, averaged, times
    min(1, len(gold)/len(pred)) ** 0.5 (extra predicted items are penalised, order ignored)."""
    if not gold:
        return 0.0
    if not pred:
        return 0.0
    gold = [clean_string(g, original_bugs) for g in gold]
    pred = [clean_string(p, original_bugs) for p in pred]
    best = [max(parse.anls(g, p) for p in pred) for g in gold]
    return sum(best) / len(gold) * min(1.0, len(gold) / len(pred)) ** 0.5


@register("longdocurl")
class LongDocURL(_ExtractedDocMetric):
    """LongDocURL: lists by the greedy list match, other formats by MMLongBench-Doc's rules
    (Integer -> Int, String -> Str); under ``parity="official"`` those other formats go through
    the official MMLongBench-Doc ``eval_score`` as ``mmlongbench_doc`` does."""

    group_by = ("task_tag", "question_type")

    def score_extracted(self, pred, example):
        gold = golds(example)
        meta = meta_of(example)
        fmt = meta.get("answer_format", "String")
        bugs = self.official
        if pred == FAILED:
            score = 0.0
        elif fmt == "List":
            gold_list = parse.as_list(gold[0]) if len(gold) == 1 else gold
            score = greedy_list_score(gold_list, parse.as_list(pred), bugs)
        elif self.official:
            kind = SHORT_FORMAT.get(fmt, fmt)
            return official_result(lambda: off.mmlongbench_doc(gold[0] if gold else "", pred, kind), pred,
                                   answer_format=fmt)
        else:
            score = eval_score(gold[0] if gold else "", pred, fmt, bugs)
        return ScoreResult(score, pred, {"answer_format": fmt})
