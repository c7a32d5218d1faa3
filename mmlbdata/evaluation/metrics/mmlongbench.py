"""MMLongBench's metrics (VRAG, NIAH, ICL, DocVQA, summarisation ROUGE).

Each scores the raw output and the output after its ``Answer:``/``label:``/``Summary:`` prefix
and keeps the max (:func:`common.best_of`), as MMLongBench/HELMET do. With ``parity="official"``
each returns what MMLongBench's ``utils.py``/``data.py`` return (``official.py``) on the text its
runners score: the loader's system_template + the output (:class:`MMLongBenchMetric`, also the
base of ``summ.SummJudge``).
"""
from __future__ import annotations

import re
from functools import cached_property, lru_cache
from math import isclose

from mmlbdata.evaluation import parse
from mmlbdata.evaluation.metrics import official as off
from mmlbdata.evaluation.metrics.common import best_of, golds, meta_of, official_result
from mmlbdata.evaluation.metrics.registry import Metric, ScoreResult, register
from mmlbdata.official.mmlongbench_prompts import answer_prefix, doc_question
from mmlbdata.official.names import in_category
from mmlbdata.sources.docqa import LONG_FORMAT


class MMLongBenchMetric(Metric):
    """A metric of one of MMLongBench's ``data.py`` loaders (``loader``: the loader's kind in
    :mod:`mmlbdata.official.mmlongbench_prompts`, which holds its ``system_template``: ``Answer:``, ``label:``, ``Summary:``).

    Parity mode scores what the official runners score: :func:`official.runner_output`, the
    loader's system_template prepended to the output before any parse or raw-text score. That
    happens here, once, in :meth:`score_many`; subclasses score the text they are handed
    (:meth:`score_text`, or :meth:`score_texts` for a batch). The default mode hands them the
    output as the model wrote it (deviations table, "any output: what is scored").

    Parity mode also leaves an example out of every average when its ``parsed_output`` is empty,
    as MMLongBench's API runners (``eval_api.py`` and ``eval_api_batch.py``, at 26197d2 and
    22b9f27 alike) do; such a result is marked ``extra["left_out"]`` and :func:`Metric.aggregate`
    and ``mmlb eval``'s tables skip it. The default counts it (a score of 0 for saying nothing).
    ``leaves_out_empty = False`` where the official parsed output cannot be empty (Visual
    Haystack's is the whole text) or the official scorer is another script."""

    loader = "vrag"
    leaves_out_empty = True

    @property
    def system_template(self) -> str:
        """The loader's ``system_template`` (``mmlbdata.official.mmlongbench_prompts``, held there once)."""
        return answer_prefix(self.loader)

    @property
    def prepends_system_template(self) -> bool:
        """Parity mode scores system_template + output: a runner's line that already starts with its
        answer prefix is handed over without it (evaluate.scored_prediction)."""
        return self.official

    def scored_text(self, prediction):
        """What the scorer reads: the runner's text in parity mode, else the output itself."""
        return off.runner_output(self.system_template, prediction) if self.official else prediction

    def score(self, prediction, example):
        return self.score_many([prediction], [example])[0]

    def score_many(self, predictions, examples):
        texts = [self.scored_text(p) for p in predictions]
        results = self.score_texts(texts, examples)
        for text, result in zip(texts, results):
            if self.left_out(text):
                result.extra["left_out"] = "empty parsed output (eval_api_batch.py skips it)"
        return results

    def left_out(self, text) -> bool:
        """Whether parity mode leaves this runner text out of the averages (see the class doc)."""
        return (self.official and self.leaves_out_empty
                and off.mmlb_parse_output(text, self.system_template, self.first_line) == "")

    def score_texts(self, texts, examples) -> list[ScoreResult]:
        return [self.score_text(t, e) for t, e in zip(texts, examples)]

    def score_text(self, text, example) -> ScoreResult:  # pragma: no cover - abstract
        raise NotImplementedError


@register("sub_em")
class SubEM(MMLongBenchMetric):
    """Normalised gold is a substring of the normalised prediction; max over golds. A gold that
    normalises to nothing ("", " ", "the") is ignored (officially it matches anything)."""

    loader = "vrag"  # load_vrag, load_text_rag, load_mm_niah_text: "Answer:"

    def score_text(self, text, example):
        answers = golds(example)
        if self.official:
            return official_result(lambda: off.raw_and_parsed_max(text, lambda t: off.sub_em(t, answers),
                                                                  self.system_template, self.first_line))
        norm_golds = [n for n in (parse.normalize_answer(g) for g in answers) if n]

        def one(candidate):
            norm = parse.normalize_answer(candidate)
            hit = any(g in norm for g in norm_golds)
            return ScoreResult(float(hit), norm)

        return best_of(text, one)


@register("binary_acc")
class BinaryAcc(MMLongBenchMetric):
    """Visual Haystack: the last yes/no in the output equals the gold yes/no. No yes/no is
    wrong (pass ``default_answer`` to substitute one). Officially the default answer cycles
    0,1,1,0 over the examples in the order of the run (the config's row order under ``mmlb eval``;
    else the order they are scored in); ``extract_binary_label``'s bare-number reading ("1" = yes)
    never applies, since the text it reads starts with the prepended ``Answer:``."""

    loader = "vh"
    reads_row = True  # the official default answer cycles over the config's rows
    leaves_out_empty = False  # vh_post_process's parsed_output is the whole text, never ""

    def __init__(self, **options):
        super().__init__(**options)
        self.position = 0  # the official DefaultAnswerGenerator's index

    def score_text(self, text, example):
        if self.official:
            position, self.position = self.position, self.position + 1
            row = example.get("_row")  # the config row (mmlb eval): missing predictions keep the cycle
            position = row if isinstance(row, int) else position
            gold = (golds(example) or [""])[0]
            return official_result(lambda: off.binary_acc(text, gold, position),
                                   default_answer=off.DEFAULT_ANSWER_CYCLE[position % 4])
        gold = parse.extract_yes_no(golds(example)[0]) if golds(example) else None
        default = self.options.get("default_answer")

        def one(candidate):
            label = parse.extract_yes_no(candidate) or default
            return ScoreResult(float(label is not None and label == gold), label)

        return best_of(text, one)


@register("mc_acc")
class MCAcc(MMLongBenchMetric):
    """Multiple choice: "answer is (X)", then "Answer: X", then the last standalone A-J."""

    loader = "niah_choice"

    def score_text(self, text, example):
        gold = parse.letter_of(golds(example)[0]) if golds(example) else None
        if self.official:
            index = ord(gold) - ord("A") if gold else None
            return official_result(lambda: off.mc_acc(text, index, self.system_template, self.first_line))

        def one(candidate):
            letter = parse.extract_letter(candidate, rules="mmlongbench")
            return ScoreResult(float(letter is not None and letter == gold), letter)

        return best_of(text, one)


@register("cls_acc")
class ClsAcc(MMLongBenchMetric):
    """ICL classification: ``label: N``, else the last number, equals the gold label id."""

    loader = "icl"

    def score_text(self, text, example):
        answers = golds(example)
        gold = _int_or_none(answers[0]) if answers else None
        if self.official:
            return official_result(lambda: off.cls_acc(text, gold, self.system_template, self.first_line))

        def one(candidate):
            label = parse.extract_class_label(candidate)
            return ScoreResult(float(label is not None and label == gold), None if label is None else str(label))

        return best_of(text, one)


@register("count_acc")
class CountAcc(MMLongBenchMetric):
    """MM-NIAH counting: the predicted list's sum equals the gold list's sum (MMLongBench's
    robust replacement for soft accuracy). An empty prediction list never matches."""

    loader = "niah_count"

    def score_text(self, text, example):
        gold = count_gold(golds(example)[0]) if golds(example) else []
        if self.official:
            return official_result(lambda: off.count_acc(text, gold, self.system_template, self.first_line))

        def one(candidate):
            pred = parse.extract_int_list(candidate)
            return ScoreResult(float(bool(pred) and sum(pred) == sum(gold)), str(pred), {"sum": sum(pred)})

        return best_of(text, one)


def _int_or_none(text: str) -> int | None:
    """An integer label, or None (not a number, or longer than Python's digit limit)."""
    text = text.strip()
    if not re.fullmatch(r"-?\d+", text):
        return None
    try:
        return int(text)
    except ValueError:
        return None


def count_gold(text: str) -> list[int]:
    """The counting gold: the JSON list the builder stored, else the integers in the text."""
    value = parse.safe_json(text)
    if isinstance(value, list) and all(isinstance(v, int) for v in value):
        return value
    return parse.extract_int_list(text)


# --- docqa ------------------------------------------------------------------------------------

#: the cleaning and exact-match rules are MMLongBench's own in both parities (no bug to fix)
docqa_clean = off.docqa_clean
needs_exact_match = off.docqa_needs_em
# utils.py get_str_type: the same answer in both modes (inf, nan and words are String)
str_type = off.docqa_str_type


def _float_equal(gold: float, pred: float) -> bool:
    return any(isclose(g, pred, rel_tol=0.01) for g in (gold / 100, gold, gold * 100))


def docqa_score(gold, pred: str, answer_format: str) -> float:
    """MMLongBench's DocQA rule set for one gold answer of the given format."""
    fmt = LONG_FORMAT.get(str(answer_format), "String")
    if fmt == "Integer":
        try:
            value = float(docqa_clean(gold))
        except ValueError:
            return docqa_score(gold, pred, "String")
        numbers = parse.extract_numbers(docqa_clean(pred))
        return float(any(int(n) == n and int(n) == value for n in numbers))
    if fmt == "Float":
        try:
            value = float(docqa_clean(gold))
        except ValueError:
            return docqa_score(gold, pred, "String")
        return float(any(_float_equal(value, n) for n in parse.extract_numbers(docqa_clean(pred))))
    if fmt in ("String", "None"):
        gold = str(gold)
        if needs_exact_match(gold):
            return float(gold in pred)
        return parse.token_f1(pred, gold)[0]
    items = parse.as_list(gold)
    merge = [isinstance(i, str) and str_type(i) == "String" and not needs_exact_match(i) for i in items]
    merged = " ".join(i for i, m in zip(items, merge) if m).strip()
    if merged:
        items = [merged] + [i for i, m in zip(items, merge) if not m]
    if not items:
        return 0.0
    scores = []
    for item in items:
        kind = "Integer" if isinstance(item, int) else "Float" if isinstance(item, float) else str_type(str(item))
        scores.append(docqa_score(item, pred, kind))
    return sum(scores) / len(items)


@register("docqa")
class DocQA(MMLongBenchMetric):
    """MMLongBench DocQA (MMLongBench-Doc/LongDocURL/SlideVQA inside MMLongBench).

    Protocol v1.1 with a judge (options ``judge``: a ``JudgeClient``, ``judge_prompts``: the
    official ``utils_prompt.py`` or a loaded ``JudgePrompts``): the LLM judge of
    :mod:`..docqa_judge`. Otherwise (v1.0, or no judge configured) the rule set chosen by the gold
    ``answer_format`` in meta; max over golds and raw/parsed output; the aggregate says which."""

    loader = "docqa"  # load_doc_qa, load_doc_qa_with_llm_judge, load_text_doc_qa: "Answer:"
    group_by = ("answer_format",)

    @property
    def judged(self) -> bool:
        return self.protocol.docqa_judge and self.options.get("judge") is not None

    def rules(self, text, example):
        """``eval_docqa_score`` (parity mode) or this project's rule set (max over golds and
        raw/parsed output)."""
        fmt = meta_of(example).get("answer_format", "String")
        answers = golds(example) or [""]
        if self.official:
            kind = LONG_FORMAT.get(str(fmt), str(fmt))
            gold = list_gold(example, answers) if kind == "List" else answers[0]
            # data.py ``docqa_post_process`` (v1.0: ``dcoqa_post_process``): only ``parse_output(text,
            # prefix=system_template)`` is scored; on the runner's text the first ``Answer:`` is the
            # prepended one, so that is the whole output (v1.1) or its first line (v1.0)
            parsed = off.mmlb_parse_output(text, self.system_template, self.first_line)
            return official_result(lambda: off.docqa_score(gold, parsed, kind), parsed)

        if LONG_FORMAT.get(str(fmt)) == "List":
            answers = [list_gold(example, answers), *answers[1:]]

        def one(candidate):
            return ScoreResult(max(docqa_score(g, candidate, fmt) for g in answers), candidate)

        return best_of(text, one)

    def score_texts(self, texts, examples):
        results = [None if self.judged and uses_judge(e) else self.rules(t, e) for t, e in zip(texts, examples)]
        todo = [i for i, r in enumerate(results) if r is None]
        if todo:
            for i, result in zip(todo, self.judge_many([texts[i] for i in todo], [examples[i] for i in todo])):
                results[i] = result
        return results

    @cached_property
    def judge_prompts(self):
        """The ``judge_prompts`` option as loaded :class:`JudgePrompts`, read once per metric (a
        path given to ``get_metric`` is not parsed again for every ``score`` call)."""
        from mmlbdata.evaluation import docqa_judge as dj

        prompts = self.options.get("judge_prompts")
        if prompts is None:
            raise ValueError("docqa under protocol v1.1 with a judge needs the official judge prompts: "
                             f"`mmlb fetch {dj.SOURCE_KEY} --dest DIR`, then --judge-prompts DIR "
                             "(or --extractor none for the rule-based score)")
        return prompts if isinstance(prompts, dj.JudgePrompts) else dj.load_prompts(prompts)

    def judge_many(self, texts, examples) -> list[ScoreResult]:
        """One judge call per example (concurrent, cached by the judge client)."""
        from mmlbdata.evaluation import docqa_judge as dj

        prompts = self.judge_prompts
        cases = [judge_case(t, e, self.system_template, self.first_line) for t, e in zip(texts, examples)]
        replies = self.options["judge"].complete_many(
            [prompts.request(c["question"], c["reference"], c["parsed"], c["is_list"]) for c in cases],
            **dj.JUDGE_PARAMS)
        return [judged_result(r, c, self.official) for r, c in zip(replies, cases)]

    def aggregate(self, results, examples):
        agg = super().aggregate(results, examples)
        judged = sum(1 for r in results if "judge_reply" in r.extra)
        if judged:
            agg["scorer"] = f"LLM judge ({self.options['judge'].model}; protocol {self.protocol.name})"
            agg["judge_failed"] = sum(1 for r in results if r.extra.get("judge_failed"))
            if judged < len(results):
                agg["scored_by_rules"] = len(results) - judged
        else:
            agg["scorer"] = f"rules (eval_docqa_score; protocol {self.protocol.name})"
            if self.protocol.docqa_judge and not self.judged:
                agg["note"] = ("no judge configured (--extractor none or no endpoint): the rule-based score, "
                               "not v1.1's LLM judge")
        return agg


#: data.py @22b9f27 ``load_data`` L632-636: the judge scores these datasets only (``text_doc``, the
#: OCR-text ablation, keeps the rules of ``load_text_doc_qa``)
JUDGED_DATASETS = in_category("DocVQA")


def uses_judge(example: dict) -> bool:
    dataset = str(example.get("dataset") or "")
    return any(key in dataset for key in JUDGED_DATASETS)


def judge_question(example: dict) -> str:
    """The question as the official judge sees it: ``load_doc_qa_with_llm_judge`` maps it to
    ``Based on Document {doc_name:.15}, answer the following question. <question>`` (our recipe
    rows store it so; release rows keep the released question and ``meta.doc_name``). The prefix
    goes before every released question, even one that starts with it, as data.py @22b9f27 L521
    (and L454, L580) adds it unconditionally."""
    question = str(example.get("question") or "")
    doc = meta_of(example).get("doc_name")
    if doc is None:
        return question
    return doc_question(str(doc), question)


def list_gold(example: dict, answers: list[str]) -> str:
    """A List gold as released: ``answers[0]``, the release's JSON text (``["A", "B"]``) from the
    source readers on; rows built before that kept it in ``meta.answer_json`` beside a Python
    literal, which is read first for them."""
    return meta_of(example).get("answer_json", answers[0])


def judge_case(text: str, example: dict, prefix: str, first_line: bool) -> dict:
    """What one judge request is made of: the question, the gold as released (a List answer's
    release JSON where the row kept it), ``text`` parsed after ``prefix`` (in parity mode the
    runner's text, so the judge reads what ``load_doc_qa_with_llm_judge`` sends it), and the
    List branch."""
    fmt = LONG_FORMAT.get(str(meta_of(example).get("answer_format", "String")), "String")
    answers = golds(example) or [""]
    is_list = fmt == "List"
    reference = list_gold(example, answers) if is_list else answers[0]
    return {"question": judge_question(example), "reference": str(reference), "is_list": is_list,
            "parsed": off.mmlb_parse_output(text or "", prefix, first_line)}


def judged_result(reply, case: dict, official: bool) -> ScoreResult:
    """One judge reply -> the score (official: utils.py's value, crashes as 0 with the exception
    kept; default: a list F1 defined everywhere and a single score in [0, 1])."""
    from mmlbdata.evaluation import docqa_judge as dj

    extra = {"judge_reply": reply}
    if reply is None:  # the call failed for good: the official call_api raises
        extra["judge_failed"] = True
        if official:
            extra["official_crash"] = "judge call failed after retries"
        return ScoreResult(0.0, case["parsed"], extra)
    if case["is_list"]:
        counts = dj.list_counts(reply)
        extra["judge_counts"] = counts
        if official:
            num_gold = lambda: len(off.docqa_list_gold(case["reference"]))  # noqa: E731 (read only if needed)
            return official_result(lambda: dj.list_f1_official(counts, num_gold),
                                   case["parsed"], **extra)
        items = parse.as_list(case["reference"])
        return ScoreResult(dj.list_f1(counts, len(items)), case["parsed"], extra)
    value, extra["judge_read"] = dj.single_score(reply)
    if official:
        return official_result(lambda: dj.official_score(value), case["parsed"], **extra)
    return ScoreResult(dj.clamp_score(value), case["parsed"], extra)


#: distinct words whose stems ROUGE-L's tokenizer keeps, and the longest word kept: 9 MB of ordinary
#: words, 11 MB at most (a longer "word", a run of digits or a model repeating itself, is stemmed
#: each time, as rouge-score does, instead of being held twice, as word and stem)
STEMS_KEPT, LONGEST_KEPT = 1 << 16, 32


def _stem_caching_tokenizer():
    """rouge-score's own tokenizer with stemming (``use_stemmer=True``, as MMLongBench's utils.py
    builds its scorer), keeping each word's Porter stem. rouge-score stems every word of more than
    3 letters each time it meets it, and the stemmer is most of scoring a summary; a stem depends
    on the word alone, so the tokens, and every score, are the same (``tests/test_eval_parity.py``)."""
    from rouge_score import tokenizers

    class StemCachingTokenizer(tokenizers.DefaultTokenizer):
        def __init__(self):
            super().__init__(use_stemmer=True)
            self._stemmer = _CachedStemmer(self._stemmer)

    return StemCachingTokenizer()


class _CachedStemmer:
    """A stemmer whose ``stem`` keeps the stems of the last ``STEMS_KEPT`` distinct words of up to
    ``LONGEST_KEPT`` characters."""

    def __init__(self, stemmer):
        self._stem = stemmer.stem
        self._cached = lru_cache(maxsize=STEMS_KEPT)(stemmer.stem)

    def stem(self, word: str) -> str:
        return self._cached(word) if len(word) <= LONGEST_KEPT else self._stem(word)


@register("rouge_l")
class RougeL(MMLongBenchMetric):
    """ROUGE-L F1 (stemmed, ``rouge-score``), max over golds; ROUGE-Lsum kept in extra."""

    loader = "gov"  # load_gov_report and load_multi_lexsum: the same system_template
    _scorer = None

    def score_text(self, text, example):
        if RougeL._scorer is None:
            from mmlbdata.core.extras import require

            rouge_scorer = require("rouge_score.rouge_scorer", "eval", "the rouge_l metric")

            RougeL._scorer = rouge_scorer.RougeScorer(["rougeL", "rougeLsum"], tokenizer=_stem_caching_tokenizer())
        answers = golds(example) or [""]
        if self.official:
            both = off.rouge(text, answers, RougeL._scorer, self.system_template, self.first_line)
            return ScoreResult(float(both["rougeL"]), None, {"rougeLsum": float(both["rougeLsum"])})

        def one(candidate):
            scores = [RougeL._scorer.score(target=a, prediction=candidate) for a in answers]
            return ScoreResult(float(max(s["rougeL"].fmeasure for s in scores)), None,
                               {"rougeLsum": float(max(s["rougeLsum"].fmeasure for s in scores))})

        return best_of(text, one)
