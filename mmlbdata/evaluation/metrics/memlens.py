"""MemLens: the official LLM judge (the paper's score), and the official rule metrics beside it.

``memlens_judge`` scores one answer 0 or 1 as ``llm_judge.py`` does (:mod:`..memlens_judge`: the
official prompts read at run time, temperature 0, the reply parsing); the report's tables give it
per ability (``meta.category`` is the question type), per length and per ability and length, as the
paper's tables. Its aggregate also carries the rule metrics of ``data.py`` / ``parse_utils.py``
(SubEM, token F1, the refusal rate, abstention accuracy), which the official run computes beside
the judge.

Options: ``judge`` (a :class:`~mmlbdata.evaluation.judge.JudgeClient`) and ``judge_prompts`` (the
fetched ``judge_prompts/`` folder, or loaded prompts), ``judge_path`` (``vllm``, the default and the
README's judge: ``max_tokens`` 2048 and ``chat_template_kwargs`` turning the judge model's thinking
off; ``api``: ``llm_judge.py --api_model``'s request, ``max_completion_tokens`` 256 and nothing
else, which OpenAI's API takes). Without a judge the score is the rules' stand-in (SubEM for
answerable questions, refusal detected for answer refusal), said in the aggregate.

The default and ``parity="official"`` differ on two inputs. A reply that used 2048 generated
tokens (the prediction line's ``generated_tokens``): ``compute_metrics`` (``parse_utils.py``
L341-342) scores it as "" for the rule metrics, parity mode too; the judge reads it either way. And a
reference answer released as a number (``meta.answer_value``). The official ``sub_em`` raises on it (``parse_utils.py`` L91-93
@fd4c8d7: ``if not s`` lets 0 through, then ``s.lower()``), and ``eval_api.py`` drops the item
(L165 raises inside the worker; L251-255 log it and ``continue``), so neither its rule metrics nor
the judge ever see it. Parity mode leaves it out of every average and says why
(``extra["left_out"]``, ``extra["official_crash"]``); the default scores the number's text.
"""
from __future__ import annotations

import re
import string
from collections import Counter
from functools import cached_property
from typing import Optional

from mmlbdata.evaluation import memlens_judge as mj
from mmlbdata.evaluation.metrics.common import golds, meta_of
from mmlbdata.evaluation.metrics.registry import GENERATED_TOKENS, Metric, ScoreResult, mean, register

REFUSAL_TYPE = "answer_refusal"
#: parse_utils.py compute_metrics L341-342: a reply whose output_len reached this (the official
#: --generation_max_length) is "" for the rule metrics; the judge still reads the reply
OFFICIAL_OUTPUT_CAP = 2048

# -- parse_utils.py's rule metrics ----------------------------------------------------------------------

_PUNCT = frozenset(string.punctuation)
_ARTICLE_A = re.compile(r"\ba(?=\s+[a-z])")
_ARTICLES = re.compile(r"\b(an|the)\b")
#: is_insufficient_information: what counts as declining to answer (an empty answer too)
_REFUSALS = [re.compile(p) for p in (
    r"\b(?:in)?sufficient information\b",
    r"\bnot enough (?:information|context|details|data)\b",
    r"\bcannot (?:determine|answer|provide|find|identify)\b",
    r"\bunable to (?:determine|answer|provide|find|identify)\b",
    r"\b(?:i )?(?:do not|don\'t) (?:know|have enough information)\b",
    r"\b(?:no|without) (?:information|context|details|data)\b",
    r"\b(?:does not|doesn\'t) provide (?:enough|sufficient)\b",
    r"\bcannot be determined\b",
    r"\bunanswerable\b",
    r"\b(?:lack|lacking) (?:information|context|details)\b",
    r"\bnone\b",
    r"^\s*n/a\s*$",
    r"^\s*unknown\s*$",
)]


def _keep(text: str, i: int) -> bool:
    """``_remove_punc``: ``.`` and ``/`` stay between two digits (decimals, dates)."""
    return text[i] in "./" and 0 < i < len(text) - 1 and text[i - 1].isdigit() and text[i + 1].isdigit()


def normalize_answer(text: str) -> str:
    """``normalize_answer``: lower case, punctuation to spaces (see :func:`_keep`), articles out
    (``a`` only before a lower-case word, so an option ``A.`` stays), spaces collapsed."""
    if not text:
        return ""
    text = text.lower()
    text = "".join(c if c not in _PUNCT or _keep(text, i) else " " for i, c in enumerate(text))
    text = _ARTICLES.sub(" ", _ARTICLE_A.sub(" ", text))
    return " ".join(text.split())


def sub_em(prediction: str, reference: str) -> bool:
    pred, gold = normalize_answer(prediction), normalize_answer(reference)
    return bool(pred and gold and gold in pred)


def token_f1(prediction: str, reference: str) -> float:
    pred, gold = normalize_answer(prediction).split(), normalize_answer(reference).split()
    same = sum((Counter(pred) & Counter(gold)).values()) if pred and gold else 0
    if not same:
        return 0.0
    precision, recall = same / len(pred), same / len(gold)
    return 2 * precision * recall / (precision + recall)


def is_refusal(prediction: str) -> bool:
    """``is_insufficient_information``: an empty answer, or one of the refusal phrases."""
    return not prediction or any(p.search(prediction.lower()) for p in _REFUSALS)


def rules(prediction: str, reference: str) -> dict:
    """The per-answer rule metrics of ``compute_metrics`` on eval.py's parsed prediction."""
    return {"sub_em": sub_em(prediction, reference), "f1": token_f1(prediction, reference),
            "refusal": is_refusal(prediction)}


# -- the metric -----------------------------------------------------------------------------------------

@register("memlens_judge")
class MemLensJudge(Metric):
    """The official judge's 0/1 per answer (see the module docstring)."""

    group_by = ("task_key",)
    reads_generated_tokens = True  # parity mode: the rule metrics' output-length rule

    @property
    def may_leave_out(self) -> bool:
        """Parity mode leaves out the answers the official run drops (see the module docstring)."""
        return self.official

    @property
    def judged(self) -> bool:
        return self.options.get("judge") is not None

    @cached_property
    def prompts(self) -> mj.JudgePrompts:
        prompts = self.options.get("judge_prompts")
        if prompts is None:
            raise ValueError("memlens_judge with a judge needs the official judge prompts: "
                             f"`mmlb fetch {mj.SOURCE_KEY} --dest DIR`, then --memlens-judge-prompts DIR")
        return prompts if isinstance(prompts, mj.JudgePrompts) else mj.load_prompts(prompts)

    def score(self, prediction, example):
        return self.score_many([prediction], [example])[0]

    @property
    def judge_params(self) -> dict:
        """The judge request's parameters on the ``judge_path`` (see the module docstring)."""
        path = self.options.get("judge_path") or "vllm"
        if path not in mj.JUDGE_PATHS:
            raise ValueError(f"memlens_judge judge_path must be one of {', '.join(mj.JUDGE_PATHS)}, not {path!r}")
        return mj.JUDGE_PATHS[path]

    def score_many(self, predictions, examples):
        cases = [case(p, e, self.official and reached_output_cap(e)) for p, e in zip(predictions, examples)]
        crashes = [official_crash(e) if self.official else None for e in examples]
        if not self.judged:
            results = [ScoreResult(float(c["rules"]["refusal"] if c["refusal_type"] else c["rules"]["sub_em"]),
                                   c["answer"], c["extra"]) for c in cases]
        else:
            asked = [i for i, c in enumerate(cases) if not c["auto_zero"] and crashes[i] is None]
            requests = [self.prompts.request(cases[i]["task_key"], cases[i]["question"], cases[i]["reference"],
                                             cases[i]["judge_text"], cases[i]["old_answer"]) for i in asked]
            replies = dict(zip(asked, self.options["judge"].complete_many(requests, **self.judge_params)))
            results = [judged(c, replies.get(i), i in replies) for i, c in enumerate(cases)]
        return [result if crash is None else dropped(case_, crash)
                for result, case_, crash in zip(results, cases, crashes)]

    def aggregate(self, results, examples):
        agg = super().aggregate(results, examples)
        kept = [(r, e) for r, e in zip(results, examples) if not r.extra.get("left_out")]  # as compute_metrics
        results = [r for r, _e in kept]
        answerable = [r for r, e in kept if not _refusal_type(e)]
        refusal = [r for r, e in kept if _refusal_type(e)]
        agg["rules"] = {"sub_em": mean(r.extra["sub_em"] for r in results), "f1": mean(r.extra["f1"] for r in results),
                        "refusal_rate": mean(r.extra["refusal"] for r in results),
                        "answerable_sub_em": mean(r.extra["sub_em"] for r in answerable),
                        "answerable_f1": mean(r.extra["f1"] for r in answerable),
                        "abstention_acc": mean(r.extra["refusal"] for r in refusal)}
        # compute_metrics's calibration: the harmonic mean of answerable SubEM and abstention accuracy
        sem, acc = agg["rules"]["answerable_sub_em"], agg["rules"]["abstention_acc"]
        agg["rules"]["calibration"] = 2 * sem * acc / (sem + acc) if sem + acc > 0 else 0.0
        if self.judged:
            agg["scorer"] = f"LLM judge ({getattr(self.options['judge'], 'model', None)}; official MemLens protocol)"
            agg["judge_prompts"] = self.prompts.origin
            agg["judge_failed"] = sum(1 for r in results if r.extra.get("judge_failed"))
            agg["auto_zero"] = sum(1 for r in results if r.extra.get("auto_zero"))
        else:
            agg["note"] = ("no judge configured: SubEM (answer refusal: a refusal detected) stands in for the "
                           "official LLM judge's score")
        return agg


def official_crash(example: dict) -> Optional[str]:
    """The exception the official ``sub_em`` raises on the example's reference, or None: an answer
    released as a number other than 0 (``normalize_answer`` returns "" for a falsy value before
    calling ``lower()``)."""
    value = meta_of(example).get("answer_value")
    if value is None or isinstance(value, str) or not value:
        return None
    return f"AttributeError: '{type(value).__name__}' object has no attribute 'lower'"


def _refusal_type(example: dict) -> bool:
    return (example.get("question_type") or meta_of(example).get("category")) == REFUSAL_TYPE


def reached_output_cap(example: dict) -> bool:
    """Whether the example's reply used :data:`OFFICIAL_OUTPUT_CAP` generated tokens (a prediction
    line without a count, or with one that is not a number, did not)."""
    tokens = example.get(GENERATED_TOKENS)
    return isinstance(tokens, (int, float)) and not isinstance(tokens, bool) and tokens >= OFFICIAL_OUTPUT_CAP


def case(prediction: Optional[str], example: dict, capped: bool = False) -> dict:
    """What one judged answer is made of: eval.py's parsed answer (its rule metrics; "" when
    ``capped``, as compute_metrics has it), the text the judge sees, the task key, whether it is
    zeroed for length."""
    meta = meta_of(example)
    reference = (golds(example) or [""])[0]
    qtype = example.get("question_type") or meta.get("category") or ""
    answer = mj.parse_model_output(prediction if isinstance(prediction, str) else "")
    text, cut = mj.judge_text(answer)
    words = len(text.split())
    key = mj.task_key(qtype, meta.get("question_subtype") or "", reference)
    extra = {**rules("" if capped else answer, reference), **({"output_cap": True} if capped else {}),
             "task_key": key, "words": words, **({"truncated": True} if cut else {})}
    return {"answer": answer, "judge_text": text, "task_key": key, "question": example.get("question") or "",
            "reference": reference, "old_answer": meta.get("old_answer") or "", "refusal_type": qtype == REFUSAL_TYPE,
            "auto_zero": words > mj.MAX_ANSWER_WORDS, "rules": extra, "extra": extra}


def dropped(c: dict, crash: str) -> ScoreResult:
    """An answer the official run drops (parity mode): left out of every average, never judged."""
    return ScoreResult(0.0, c["answer"], {**c["extra"], "official_crash": crash,
                                          "left_out": "eval_api.py drops the item: the official sub_em raises "
                                                      "on an answer released as a number"})


def judged(c: dict, reply: Optional[str], asked: bool) -> ScoreResult:
    extra = dict(c["extra"])
    if not asked:
        extra["auto_zero"] = True
        return ScoreResult(0.0, c["answer"], extra)
    score, read = mj.reply_score(reply)
    extra.update(judge_reply=reply, judge_read=read, **({"judge_failed": True} if reply is None else {}))
    return ScoreResult(float(score), c["answer"], extra)
