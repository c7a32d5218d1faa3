"""ReadBench's scorers: option letters (MMLU-Pro, MMLU-Redux, GPQA), BABILong, LongBench F1."""
from __future__ import annotations

import random
import re

from mmlbdata.evaluation import parse
from mmlbdata.evaluation.metrics import official as off
from mmlbdata.evaluation.metrics.common import golds, meta_of, official_result
from mmlbdata.evaluation.metrics.registry import Metric, ScoreResult, mean, register

READBENCH_GROUPS = ("source", "subset", "category", "task", "length_bin")


@register("readbench_mc")
class ReadBenchMC(Metric):
    """Last ``answer: X``, then ``answer is (X)``, then the last standalone capital letter;
    nothing found scores 0. ``random_fallback=True`` picks a seeded random letter instead
    (the original's behaviour, for parity runs only)."""

    group_by = READBENCH_GROUPS

    def score(self, prediction, example):
        gold = parse.letter_of((golds(example) or [""])[0])
        if self.official:
            return self.score_official(prediction or "", gold, example)
        letter = parse.extract_letter(prediction or "", rules="readbench",
                                      random_fallback=self.options.get("random_fallback", False),
                                      seed=example.get("id", ""))
        return ScoreResult(float(letter is not None and letter == gold), letter)

    @staticmethod
    def score_official(prediction: str, gold: str | None, example: dict) -> ScoreResult:
        """run_eval.py ``eval_mmlu``: nothing parsed -> a random letter; here seeded by the
        example id (the official ``random.choice`` is unseeded)."""
        letter = off.readbench_letter(prediction)
        guessed = letter is None
        if guessed:
            letter = random.Random(str(example.get("id", ""))).choice("ABCDEFGHIJ")
        return ScoreResult(float(letter == gold), letter, {"random_letter": True} if guessed else {})


# --- BABILong ---------------------------------------------------------------------------------

TASK_LABELS = {
    "qa1": ["bathroom", "bedroom", "garden", "hallway", "kitchen", "office"],
    "qa2": ["bathroom", "bedroom", "garden", "hallway", "kitchen", "office"],
    "qa3": ["bathroom", "bedroom", "garden", "hallway", "kitchen", "office"],
    "qa4": ["bathroom", "bedroom", "garden", "hallway", "kitchen", "office"],
    "qa5": ["Bill", "Fred", "Jeff", "Mary", "apple", "football", "milk"],
    "qa6": ["no", "yes"],
    "qa7": ["none", "one", "three", "two"],
    "qa8": ["apple", "football", "milk", "nothing"],
    "qa9": ["no", "yes"],
    "qa10": ["maybe", "no", "yes"],
}


def babilong_task(example: dict) -> str:
    """qa1..qa10 from ``meta["task"]``, else from the dataset name or id."""
    meta = meta_of(example)
    for text in (meta.get("task"), example.get("dataset"), example.get("id")):
        match = re.search(r"qa(10|[1-9])(?!\d)", str(text or "").lower())
        if match:
            return f"qa{match.group(1)}"
    raise ValueError(f"example {example.get('id')!r}: no BABILong task (qa1..qa10) in meta/dataset/id")


def babilong_correct(target: str, output: str, question: str, task: str) -> tuple[bool, list[str]]:
    """ReadBench's label-set rule: in the first sentence of the output (cut at "question"),
    with digits 1-9 spelled out, the labels of the task that are mentioned (minus those the
    question names) must be exactly the target label(s).

    Labels are matched as whole words ("none" does not contain "one", "no" is not in "north");
    the official ``eval_babi`` matches substrings (``official.eval_babi``).
    """
    labels = [label.lower() for label in TASK_LABELS[task]]
    out = off.babi_preprocess(output)

    def mentioned(label: str, text: str) -> bool:
        return re.search(r"\b" + re.escape(label) + r"\b", text) is not None

    in_question = {label for label in labels if mentioned(label, question.lower())}
    found = {label for label in labels if mentioned(label, out)} - in_question
    target = target.lower().strip()
    if "," in target and len(target) > 3:
        parts = [t.strip() for t in target.split(",")]
        ok = all(t in found for t in parts) and len(found) == len(parts)
    else:
        ok = target in found and len(found) == 1
    return ok, sorted(found)


@register("babilong")
class BABILong(Metric):
    group_by = READBENCH_GROUPS

    def score(self, prediction, example):
        task = babilong_task(example)
        question = example.get("question") or meta_of(example).get("question") or ""
        target = (golds(example) or [""])[0]
        if self.official:
            return official_result(lambda: off.eval_babi(prediction or "", target, question, TASK_LABELS[task]),
                                   off.babi_preprocess(prediction or ""), task=task)
        ok, found = babilong_correct(target, prediction or "", question, task)
        return ScoreResult(float(ok), ",".join(found), {"task": task})


@register("longbench_f1")
class LongBenchF1(Metric):
    """Normalised token F1, best over golds (raw and after an answer prefix); an example is
    correct when F1 > 0 (ReadBench's accuracy), the raw F1 kept in ``extra`` and aggregated."""

    group_by = READBENCH_GROUPS

    def score(self, prediction, example):
        answers = golds(example) or [""]
        if self.official:
            subset = str(meta_of(example).get("subset") or "")
            best = off.longbench_qa_f1(prediction or "", answers, subset)
            return ScoreResult(float(best > 0), parse.normalize_answer(prediction or ""), {"f1": best})

        def one(text):
            f1 = max(parse.token_f1(text, g)[0] for g in answers)
            return ScoreResult(float(f1 > 0), parse.normalize_answer(text), {"f1": f1})

        return max((one(t) for t in parse.candidates(prediction or "")), key=lambda r: r.extra["f1"])

    def aggregate(self, results, examples):
        return {"score": mean(r.score for r in results), "f1": mean(r.extra["f1"] for r in results),
                "n": len(results)}
