"""Summarisation judged by an LLM: HELMET's procedure as used by MMLongBench.

Three judge calls per summary (prompts verbatim from MMLongBench's ``eval_gpt4_summ.py``,
GovReport and Multi-LexSum variants, under ``evaluation/prompts``): fluency (0/1), recall
(supported key points / all key points), precision (supported sentences / sentences).
F1 of recall and precision; final score = fluency x F1. The last JSON object of each reply is
read. Key points come from ``meta["keypoints"]`` (or ``meta["claims"]``) or from HELMET's claims
files (``--summ-keypoints``); the expert summary is the gold answer.
"""
from __future__ import annotations

import json
import math

from mmlbdata.evaluation import parse
from mmlbdata.evaluation.metrics import official as off
from mmlbdata.evaluation.metrics.common import golds, meta_of
from mmlbdata.evaluation.metrics.mmlongbench import MMLongBenchMetric
from mmlbdata.evaluation.metrics.registry import ScoreResult, mean, register
from mmlbdata.evaluation.prompts import load_prompt

JUDGE_PARAMS = {"temperature": 0.1, "max_tokens": 4096}
#: why a summary has no score when no judge is configured (the row's ``extra.unscorable``)
NO_JUDGE = ("unscorable: summ_judge needs an LLM judge endpoint (mmlb eval --judge-base-url/--judge-model; "
            "lmms-eval and VLMEvalKit: $MMLB_JUDGE_BASE_URL, $MMLB_JUDGE_MODEL, $MMLB_JUDGE_API_KEY)")


def summ_variant(example: dict) -> str:
    """``govreport`` or ``multi_lexsum`` from meta or the dataset name."""
    meta = meta_of(example)
    name = str(meta.get("variant") or meta.get("source") or example.get("dataset") or "").lower()
    return "multi_lexsum" if "lexsum" in name else "govreport"


def load_keypoints(path) -> dict[str, list[str]]:
    """HELMET's claims files (``gov_claims.jsonl``, ``lexsum_claims.jsonl``): one
    ``{"id": ..., "claims": [...]}`` per line, as id -> key points."""
    out = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                row = json.loads(line)
                out[str(row["id"])] = list(row.get("claims") or row.get("keypoints") or [])
    return out


def keypoints_of(example: dict, table: dict[str, list[str]] | None = None) -> list[str]:
    """Key points from meta, else from a claims table by record/case/doc/example id."""
    meta = meta_of(example)
    found = meta.get("keypoints") or meta.get("claims")
    if found:
        return list(found)
    table = table or {}
    for key in ("record_id", "case_id", "doc_id", "source_id"):
        value = meta.get(key)
        for candidate in (value, f"gov_report_{value}" if value else None):
            if candidate is not None and str(candidate) in table:
                return table[str(candidate)]
    return table.get(str(example.get("id")), [])


def summary_for_judge(summary: str, official: bool = False) -> str:
    """The summary the judge reads: a leading "Summary:" dropped, the rest stripped.

    ``eval_gpt4_summ.py`` (MMLongBench 22b9f27 and 26197d2, lines 348-349) reads the runner's saved
    output, which starts with the prepended ``Summary:`` (``official.runner_output``; parity mode
    hands that text here), and drops exactly those 8 characters before any strip: the judge reads
    the generated text stripped, a ``Summary:`` the model wrote itself kept. The default (the
    model's output) strips first and drops the model's own leading ``Summary:``."""
    summary = summary or ""
    if not official:
        summary = summary.strip()
    if summary.startswith("Summary:"):
        summary = summary[8:]
    return summary.strip()


def summ_prompts(summary: str, example: dict, keypoints: list[str] | None = None,
                 official: bool = False) -> tuple[str, str, str]:
    """The fluency, recall and precision prompts for one summary (see :func:`summary_for_judge`)."""
    summary = summary_for_judge(summary, official)
    keypoints = keypoints_of(example) if keypoints is None else keypoints
    variant = summ_variant(example)
    kp_text = "\n".join(f"{i + 1}. {kp}" for i, kp in enumerate(keypoints))
    expert = (golds(example) or [""])[0]
    return (
        load_prompt(f"summ_fluency_{variant}").format(text=summary),
        load_prompt(f"summ_recall_{variant}").format(keypoints=kp_text, summary=summary),
        load_prompt(f"summ_precision_{variant}").format(expert_summary=expert, summary=summary),
    )


def combine(fluency: dict | None, recall: dict | None, precision: dict | None, n_keypoints: int) -> ScoreResult:
    """fluency x F1(recall, precision) from the three parsed judge objects."""
    try:
        flu = float(fluency["fluency"])
        found = float(recall["recall"])
        supported = float(precision["precision"])
        sentences = float(precision["sentence_count"])
    except (TypeError, KeyError, ValueError):
        return ScoreResult(0.0, None, {"judge_failed": True})
    rec = found / n_keypoints if n_keypoints > 0 else 0.0
    prec = supported / sentences if sentences > 0 else 0.0
    f1 = 2 * rec * prec / (rec + prec) if rec + prec > 0 else 0.0
    return ScoreResult(f1 * flu, None, {"fluency": flu, "recall": rec, "precision": prec, "f1": f1,
                                        "judge_failed": False})


def official_combine(replies, n_keypoints: int) -> ScoreResult:
    """eval_gpt4_summ.py: each reply read by its ``parse_json``; any reply without braces, or
    whose JSON the official code could not read or use, leaves the example out (judge_failed).

    The replies are read in the official order (fluency, recall, precision) and reading stops at
    the first one without braces (``if f is None: continue``): a later reply that would make
    ``parse_json`` raise is then never read, so the example is skipped, not a crash."""
    parsed = []
    try:
        for reply in replies:
            value = off.summ_parse_json(reply or "")
            if value is None:
                return ScoreResult(0.0, None, {"judge_failed": True, "skipped": "a judge reply has no JSON object"})
            parsed.append(value)
        scores = off.summ_score(*parsed, n_keypoints)
    except off.CRASHES as exc:
        return ScoreResult(0.0, None, {"judge_failed": True, "official_crash": f"{type(exc).__name__}: {exc}"[:200]})
    return ScoreResult(scores.pop("score"), None, {**scores, "judge_failed": False})


@register("summ_judge")
class SummJudge(MMLongBenchMetric):
    """Needs ``judge=<JudgeClient>``; without one it cannot score and says so. Parity mode judges
    the runner's text (``Summary:`` + output), as ``eval_gpt4_summ.py`` reads the saved results."""

    loader = "gov"  # load_gov_report and load_multi_lexsum: "Summary:"
    # eval_gpt4_summ.py (L342) judges the runner's saved results["data"], which the API runners
    # write without empty parsed outputs (eval_api_batch.py @22b9f27 L166, eval_api.py L156): in
    # parity mode such an example is left out and never sent to the judge
    leaves_out_empty = True

    def score_texts(self, predictions, examples):
        """Three judge calls per example that has key points (``meta["keypoints"]`` or the
        ``keypoints`` table option, see :func:`load_keypoints`); one without scores 0 and is
        counted, never sent."""
        judge = self.options.get("judge")
        if judge is None:  # a harness run (lmms-eval, VLMEvalKit) goes on: the rows say why they have no score
            # left out of every average (mmlb eval's report, the harness means) like an official skip
            return [ScoreResult(0.0, None, {"unscorable": NO_JUDGE, "left_out": True}) for _ in predictions]
        table = self.options.get("keypoints")
        kps = [keypoints_of(e, table) for e in examples]
        todo = [i for i, kp in enumerate(kps) if kp and not self.left_out(predictions[i])]
        flat = [p for i in todo for p in summ_prompts(predictions[i], examples[i], kps[i], self.official)]
        replies = judge.complete_many(flat, **JUDGE_PARAMS)
        out = [ScoreResult(0.0, None, {"judge_failed": False, "no_keypoints": not kp}) for kp in kps]
        for j, i in enumerate(todo):
            three = replies[3 * j:3 * j + 3]
            out[i] = official_combine(three, len(kps[i])) if self.official else combine(
                *(parse.last_json_object(x) if x else None for x in three), len(kps[i]))
        return out

    @staticmethod
    def _judged(results):
        return [r for r in results if not r.extra.get("judge_failed") and not r.extra.get("no_keypoints")
                and not r.extra.get("left_out") and not r.extra.get("unscorable")]

    def averaged(self, results):
        """Default: every example (a failed judge call scores 0). Officially (``eval_gpt4_summ.py``)
        examples without a parseable reply are left out. Rows with no judge to score them
        (``extra.unscorable``) are in no average."""
        if self.official:
            return self._judged(results)
        return [r for r in results if not r.extra.get("unscorable")]

    def aggregate(self, results, examples):
        """The mean over :meth:`averaged`; the judge's four numbers over the judged examples.
        With no judge configured every row is unscorable: the score is NaN (not a 0 the model did
        not earn), ``unscorable`` counts the rows and ``note`` says why."""
        ok = self._judged(results)
        counted = self.averaged(results)
        unscorable = sum(1 for r in results if r.extra.get("unscorable"))
        if unscorable:
            return {"score": mean(r.score for r in counted) if counted else math.nan, "n": len(results),
                    "n_scored": len(ok), "unscorable": unscorable, "note": NO_JUDGE}
        agg = {"score": mean(r.score for r in counted), "n": len(results), "n_scored": len(ok),
               "judge_failed": sum(1 for r in results if r.extra.get("judge_failed")),
               "no_keypoints": sum(1 for r in results if r.extra.get("no_keypoints")),
               "left_out": sum(1 for r in results if r.extra.get("left_out"))}
        for key in ("fluency", "recall", "precision", "f1"):
            agg[key] = mean(r.extra[key] for r in ok)
        return agg
