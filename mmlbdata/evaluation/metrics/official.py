"""The official scorers re-read step by step: what ``--parity official`` returns.

Each function here follows one official function (named in its docstring, pinned commits in
``docs/evaluation.md``), bugs included, so a score under ``parity="official"`` can be compared
with the papers' tables. Written from reading the official code, not copied from it.

Where the official code would *crash* on an input (an uncaught exception that stops the official
run), the metric scores 0.0 and records the exception in ``extra["official_crash"]``
(``common.official_result``): a crashed example scores nothing officially, and ReadBench's own
runner does exactly this.
"""
from __future__ import annotations

import json
import re
from math import isclose
from typing import Callable

from mmlbdata.evaluation import parse

#: exceptions an official function may raise on hostile text (RecursionError: json's decoder on
#: deeply nested brackets; MemoryError: Python's parser on some pathological literals)
CRASHES = (Exception, RecursionError, MemoryError)


def crash_text(exc: BaseException) -> str:
    """How a crash is recorded: ``"ExceptionName: message"`` (message cut at 200 characters)."""
    return f"{type(exc).__name__}: {str(exc)[:200]}"


# --- MMLongBench utils.py / data.py ----------------------------------------------------------

def runner_output(system_template: str, output: str | None) -> str:
    """What MMLongBench's runners hand to ``data["post_process"]``: the loader's
    ``system_template`` (``Answer:``, ``label:``, ``Summary:``; no placeholders, so ``.format``
    leaves it as it is) followed by the generated text, with no separator, whether or not a chat
    template was used: ``eval.py`` L73-74, ``eval_api.py`` L91-92, ``eval_api_batch.py`` L83-84,
    identical at 26197d2 (v1.0) and 22b9f27 (v1.1). The saved results keep this text, so
    ``scripts/eval_gpt4_summ.py`` reads it too. Every parse and every raw-text score of parity
    mode starts from it (``metrics/mmlongbench.MMLongBenchMetric``)."""
    return system_template + (output or "")


def mmlb_parse_output(output: str, prefix: str = "Answer:", first_line: bool = False) -> str:
    """utils.py ``parse_output``: text after the first ``prefix`` (case-insensitive, the prefix
    used as a regex), stripped, one repeated prefix dropped; without a prefix the output from its
    start (the second pattern ``(?:^)(.*)`` always matches, so it never returns None).

    ``first_line`` (protocol v1.0, utils.py @26197d2 L123-124): both patterns end at ``(?:\n|$)``
    without DOTALL, so only the rest of the prefix's line is read (and the first line of an output
    without the prefix). Otherwise (v1.1, @476fe86): ``re.IGNORECASE | re.DOTALL``, everything
    after the prefix."""
    if first_line:
        match = re.search(f"(?:{prefix})(.*)(?:\n|$)", output, re.IGNORECASE)
        rest = (match.group(1) if match else re.search(r"(?:^)(.*)(?:\n|$)", output).group(1)).strip()
    else:
        match = re.search(f"(?:{prefix})(.*)", output, re.IGNORECASE | re.DOTALL)
        rest = match.group(1).strip() if match else output.strip()
    return re.sub("^" + re.escape(prefix), "", rest, flags=re.IGNORECASE).strip()


def raw_and_parsed_max(prediction: str, score: Callable[[str], float], prefix: str,
                       first_line: bool = False) -> float:
    """data.py ``default_post_process``: the metric on the raw output and on the output parsed
    after ``prefix`` (the loader's system_template; ``first_line``: protocol v1.0's
    ``parse_output``), the larger kept."""
    return max(score(prediction), score(mmlb_parse_output(prediction, prefix, first_line)))


def sub_em(prediction: str, golds: list[str]) -> float:
    """utils.py ``substring_exact_match_score`` max over golds: a gold that normalises to ""
    (blank, only punctuation or articles) is a substring of anything. No golds: IndexError."""
    if not golds:
        raise IndexError("no gold answers (ground_truths[0])")
    pred = parse.normalize_answer(prediction)
    return float(max(parse.normalize_answer(g) in pred for g in golds))


_YES_NO = re.compile(r"\b(?:yes|no)\b", re.IGNORECASE)


def last_match(pattern: re.Pattern, text: str, group: int = 0) -> str | None:
    """The last match of ``pattern``: what the official ``X(?!.*X)`` (DOTALL) lookaheads find,
    in linear rather than quadratic time (matches of these patterns cannot overlap)."""
    found = None
    for found in pattern.finditer(text):
        pass
    return found.group(group) if found else None


def binary_label(text: str) -> int:
    """utils.py ``extract_binary_label``: last yes/no (1/0); else the whole normalised text read
    as an integer when ``str.isdigit`` (``"1"`` is yes); else -1. Text that IGNORECASE matches
    but the map lacks (``"yeſ"``) raises KeyError, as officially."""
    text = parse.normalize_with_punc(text)
    match = last_match(_YES_NO, text)
    if match:
        return {"yes": 1, "no": 0}[match]
    if text.strip().isdigit():
        return int(text.strip())
    return -1


#: data.py ``DefaultAnswerGenerator``: the label used when the output has none, by example order
DEFAULT_ANSWER_CYCLE = (0, 1, 1, 0)


def binary_acc(prediction: str, gold: str, position: int) -> float:
    """data.py ``vh_post_process`` + utils.py ``binary_acc``: the raw output only (no parsed
    rescoring); the cycling default answer of the example at ``position``."""
    label = binary_label(prediction)
    if label == -1:
        label = DEFAULT_ANSWER_CYCLE[position % len(DEFAULT_ANSWER_CYCLE)]
    return float(label == binary_label(gold))


def _ints_kept(items) -> list[int]:
    """utils.py ``turn_int_list``: ``int(item)`` for each item, items that fail are dropped."""
    out = []
    for item in items:
        try:
            out.append(int(item))
        except Exception:  # noqa: BLE001 - the official bare except
            continue
    return out


def count_list(prediction: str) -> list:
    """utils.py ``extract_cnt_list``: the last ``[digits, ...]`` as JSON; else the last ``[...]``
    as JSON with int() per item; else every digit run. Only JSONDecodeError falls through."""
    text = parse.normalize_with_punc(prediction)
    strict = _DIGIT_LIST.findall(text)
    if strict:
        try:
            return json.loads(strict[-1])
        except json.JSONDecodeError:
            pass
    loose = parse.shortest_spans(text, "[", "]")  # the official ``\[.*?\]``, in linear time
    if loose:
        try:
            return _ints_kept(json.loads(loose[-1]))
        except json.JSONDecodeError:
            pass
    return [int(x) for x in _DIGITS.findall(text)]


_DIGIT_LIST = re.compile(r"\[[\d\s,]+\]", re.IGNORECASE | re.DOTALL)
_DIGITS = re.compile(r"\d+")


def count_acc(prediction: str, gold: list[int], prefix: str, first_line: bool = False) -> float:
    """``soft_acc`` (MMLongBench's replacement): sums equal, max over raw and parsed output."""
    return raw_and_parsed_max(prediction, lambda text: float(sum(count_list(text)) == sum(gold)), prefix,
                              first_line)


def choice_index(prediction: str) -> int:
    """utils.py ``extract_choice_letter``: "answer is (X)", then ``[aA]nswer:\\s*X`` (no word
    boundary), then the last standalone A-J; -1 when none."""
    text = parse.white_space_fix(prediction)
    for pattern in _CHOICE:
        match = pattern.search(text)
        if match:
            return ord(match.group(1)) - ord("A")
    letter = last_match(_STANDALONE_AJ, text)
    return ord(letter) - ord("A") if letter else -1


_CHOICE = (re.compile(r"answer is \(?([A-J])\)?", re.DOTALL), re.compile(r"[aA]nswer:\s*([A-J])", re.DOTALL))
_STANDALONE_AJ = re.compile(r"\b[A-J]\b")
_STANDALONE_NUMBER = re.compile(r"\b(\d+)\b")
_LABEL = re.compile(r"label:\s*(\d+)", re.IGNORECASE)


def mc_acc(prediction: str, gold_index: int, prefix: str, first_line: bool = False) -> float:
    return raw_and_parsed_max(prediction, lambda text: float(choice_index(text) == gold_index), prefix,
                              first_line)


def class_number(prediction: str) -> int:
    """utils.py ``extract_class_num``: ``label: N``, else the last standalone number, else the
    first digit run anywhere (``class3`` -> 3); -1 when none."""
    text = parse.white_space_fix(prediction)
    match = _LABEL.search(text)
    if match:
        return int(match.group(1))
    last = last_match(_STANDALONE_NUMBER, text, 1)
    if last:
        return int(last)
    numbers = _DIGITS.findall(text)
    return int(numbers[0]) if numbers else -1


def cls_acc(prediction: str, gold: int, prefix: str, first_line: bool = False) -> float:
    """``load_icl_er``'s post_process: ``prefix`` is its system_template (``label:``)."""
    return raw_and_parsed_max(prediction, lambda text: float(class_number(text) == gold), prefix=prefix,
                              first_line=first_line)


def rouge(prediction: str, golds: list[str], scorer, prefix: str, first_line: bool = False) -> dict[str, float]:
    """utils.py ``rouge`` + ``default_post_process``: per rouge type, max over golds, then max
    of raw vs ``prefix``-parsed output (the summaries' system_template, ``Summary:``) taken per
    key (rougeL and rougeLsum may come from different candidates)."""
    def per_key(text):
        scores = [scorer.score(target=g, prediction=text) for g in golds]
        return {k: max(s[k].fmeasure for s in scores) for k in ("rougeL", "rougeLsum")}

    raw, parsed = per_key(prediction), per_key(mmlb_parse_output(prediction, prefix, first_line))
    return {k: max(raw[k], parsed[k]) for k in raw}


# --- MMLongBench utils.py eval_docqa_score -----------------------------------------------------

_DOCQA_SUFFIXES = ("kg", "meters", "acres", "minutes", "miles", "mile", "feet",
                   "million", "thousand", "billion", "mm", "m")
_DOCQA_EM = (
    r"https://", r".*\.(py|ipynb)$", r"^page", r"^\d+(-\d+|\s\d+)?$", r"(a\.m\.|p\.m\.)",
    r"^\d{4}[-/\s]\d{1,2}[-/\s]\d{1,2}$", r"^\d{1,2}[-/\s]\d{1,2}[-/\s]\d{2,4}$", r"^\d{4}[-/\s]\d{1,2}$",
    r"^[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\.[a-zA-Z]{2,}$",
)


_DOCQA_SUFFIX_PATTERNS = tuple(re.compile(re.escape(suffix) + "$") for suffix in _DOCQA_SUFFIXES)
_DOCQA_EM_PATTERNS = tuple(re.compile(p) for p in _DOCQA_EM)
_QUOTES = re.compile(r"^['\"]|['\"]$")


def docqa_clean(value) -> str:
    """utils.py ``get_docqa_clean_string``: lowercase, no commas, each unit suffix in turn,
    quotes, then $, £ and % at either end."""
    text = str(value).lower().strip().replace(",", "")
    for suffix in _DOCQA_SUFFIX_PATTERNS:
        text = suffix.sub("", text).strip()
    text = _QUOTES.sub("", text).strip()
    for symbol in "$£%":
        text = text.strip().strip(symbol).strip()
    return text


def docqa_needs_em(value) -> bool:
    """utils.py ``need_exact_match_check`` (raises TypeError on a non-string, as officially)."""
    return any(p.search(value) for p in _DOCQA_EM_PATTERNS)


def docqa_numbers(text: str) -> list[float]:
    """utils.py ``extract_number_list``: finite numbers, commas dropped first."""
    return parse.extract_numbers(text)


def docqa_str_type(value) -> str:
    """utils.py ``get_str_type``: Integer / Float / String (any exception -> String)."""
    try:
        number = float(docqa_clean(value))
        return "Integer" if number == int(number) and "%" not in value else "Float"
    except Exception:  # noqa: BLE001 - the official bare except
        return "String"


def docqa_score(gold, pred: str, answer_type: str) -> float:
    """utils.py ``eval_docqa_score`` for one gold of ``answer_type``."""
    if answer_type == "Integer":
        value = float(docqa_clean(str(gold)))
        if int(value) != value:
            raise AssertionError("Integer gold is not an integer")
        return float(any(int(n) == int(value) for n in docqa_numbers(docqa_clean(str(pred))) if int(n) == n))
    if answer_type == "Float":
        value = float(docqa_clean(str(gold)))
        return float(any(isclose(ref, n, rel_tol=0.01) for n in docqa_numbers(docqa_clean(str(pred)))
                         for ref in (value / 100, value, value * 100)))
    if answer_type in ("String", "None"):
        return float(gold in pred) if docqa_needs_em(gold) else parse.token_f1(pred, gold)[0]
    if answer_type == "List":
        return _docqa_list(gold, pred)
    raise KeyError(f"Wrong answer type: {answer_type}")


def _docqa_list(gold, pred: str) -> float:
    items = docqa_list_gold(gold)
    merge = [isinstance(i, str) and docqa_str_type(i) == "String" and not docqa_needs_em(i) for i in items]
    merged = " ".join(i for i, m in zip(items, merge) if m).strip()
    if merged:
        items = [merged] + [i for i, m in zip(items, merge) if not m]
    scores = []
    for item in items:
        if isinstance(item, list):
            raise AssertionError("nested list in a List gold")
        kind = ("Integer" if isinstance(item, int) else "Float" if isinstance(item, float)
                else docqa_str_type(item))
        scores.append(docqa_score(item, pred, kind))
    return sum(scores) / len(items)


def docqa_list_gold(gold) -> list:
    """The official ``json.loads(gt)``; this project stores list golds as Python literals
    (``['a', 'b']``), which are read with ``ast.literal_eval`` when JSON fails."""
    if isinstance(gold, list):
        return gold
    try:
        return json.loads(gold)
    except json.JSONDecodeError:
        value = parse.safe_literal(gold)
        if not isinstance(value, list):
            raise
        return value


# --- MMLongBench-Doc eval/eval_score.py ---------------------------------------------------------

def doc_clean(value) -> str:
    """eval_score.py ``get_clean_string``: its unit stripping discards its result, so units stay;
    parentheses, surrounding quotes, a leading $ and trailing % are removed."""
    text = str(value).lower().strip()
    text = parse.drop_parenthesised(text).strip()
    text = _QUOTES.sub("", text).strip()
    text = text.strip().lstrip("$").strip()
    return text.strip().rstrip("%").strip()


def doc_anls(gold: str, pred: str, threshold: float = 0.5) -> float:
    """eval_score.py ``anls_compute``: the distance over ``max(len(g.upper()), len(p.upper()))``
    (``"ß".upper()`` is two characters)."""
    length = max(len(gold.upper()), len(pred.upper()))
    value = 1.0 - (parse.levenshtein(gold, pred) / length if length else 0.0)
    return 0.0 if value <= threshold else value


def decimals(value) -> int:
    """eval_score.py ``get_precision``: digits after the "." of ``str(value)``, else 3."""
    text = str(value)
    return len(text.split(".")[-1]) if "." in text else 3


def doc_float_equal(reference, prediction) -> bool:
    """eval_score.py ``is_float_equal(include_percentage=True, is_close=True)``: the reference
    re-read as a float (a non-number gold raises); a non-number prediction is False."""
    reference = float(str(reference).strip().rstrip("%").strip())
    try:
        prediction = float(str(prediction).strip().rstrip("%").strip())
    except Exception:  # noqa: BLE001
        return False
    for item in (reference / 100, reference, reference * 100):
        try:
            if isclose(item, prediction, rel_tol=0.01):
                return True
            digits = max(min(decimals(prediction), decimals(item)), 2)
            if round(prediction, digits) == round(item, digits):
                return True
        except Exception:  # noqa: BLE001
            continue
    return False


def doc_exact_match(text: str) -> bool:
    """eval_score.py ``is_exact_match``."""
    return bool("https://" in text or text.endswith(".py") or text.endswith("ipynb")
                or text.startswith("page") or "a.m." in text or "p.m." in text
                or any(p.fullmatch(text) for p in _DOC_EXACT))


_DOC_EXACT = tuple(re.compile(p) for p in (r"\b\d+(-\d+|\s\d+)?\b", r"\b\d{4}[-\s]\d{2}[-\s]\d{2}\b",
                                           r"\b\d{4}[-\s]\d{2}\b", r"[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\.[a-zA-Z]{2,}"))


def _as_official_list(value) -> list:
    """``eval(s)`` for a string starting with "[" (here a literal only: prediction text is never
    executed; an expression that is not a literal raises, like a malformed list), else [value]."""
    if isinstance(value, str) and value.startswith("["):
        value = parse.safe_literal(value, strict=True)
    return value if isinstance(value, list) else [value]


def mmlongbench_doc(gold, pred, answer_type: str) -> float:
    """eval_score.py ``eval_score``."""
    if answer_type == "Int":
        try:
            return float(int(gold) == int(float(pred)))
        except Exception:  # noqa: BLE001 - official: pred becomes "", gold keeps its value
            return float(gold == "")
    if answer_type == "Float":
        try:
            gold_value = float(doc_clean(str(gold)))
        except Exception:  # noqa: BLE001
            return float(doc_float_equal(gold, ""))
        try:
            pred_value = float(doc_clean(str(pred)))
        except Exception:  # noqa: BLE001
            pred_value = ""
        return float(doc_float_equal(gold_value, pred_value))
    if answer_type in ("Str", "None"):
        gold, pred = doc_clean(gold), doc_clean(pred)
        return float(gold == pred) if doc_exact_match(gold) else doc_anls(gold, pred)
    gold_list, pred_list = _as_official_list(gold), _as_official_list(pred)
    if len(gold_list) != len(pred_list):
        return 0.0
    gold_list = sorted(doc_clean(a) for a in gold_list)
    pred_list = sorted(doc_clean(a) for a in pred_list)
    first = gold_list[0]  # IndexError for [] vs []: 0 officially
    if parse.is_float_text(first) or doc_exact_match(first):
        return float("-".join(gold_list) == "-".join(pred_list))
    return min(doc_anls(g, p) for g, p in zip(gold_list, pred_list))


# --- MMNeedle evaluate.py / evaluate_multi.py ---------------------------------------------------

def _needle_clean(pred: str) -> str:
    """Both files' cleaning of a response (evaluate.py L44-46, evaluate_multi.py L34-36)."""
    return pred.replace("\n", "").strip().strip(".").strip()


def negative_gold(gold_index: list[str]) -> bool:
    """Officially a negative gold has index 0; the paper's (and this project's) ``-1`` too."""
    return gold_index[0] in ("0", "-1")


def needle_single(gold: str, prediction: str) -> dict:
    """evaluate.py's loop for one needle (L44-53): the response cleaned, then exact string equality
    with the gold (with "-1" for a negative gold); the index is the text before the first ", ";
    only the bare "-1" says "no needle"."""
    cleaned = _needle_clean(prediction)
    index = gold.split(", ", 1)[0]
    negative = negative_gold([index])
    return {"positive": not negative, "exist": float(negative == (cleaned == "-1")),
            "index": float(index == cleaned.split(", ", 1)[0]),
            "exact": float(("-1" if negative else gold) == cleaned), "multi": False}


def needle_multi(gold: str, prediction: str, k) -> dict:
    """evaluate_multi.py's loop: parts split on "; " and stripped; five spellings of "no needle" (K
    from the gold, or ``k`` for a negative gold written as the bare ``-1``). A ``k`` the official
    expressions cannot use (meta's "2", 2.0, a list), or a prediction that is no text, crashes
    them: 0.0, the exception in ``official_crash``."""
    gold_indexes = [part.split(", ", 1)[0] for part in gold.split("; ")]
    negative = negative_gold(gold_indexes)
    try:
        spellings = no_needle_spellings(k if (negative and k) else len(gold_indexes))
        parts = [part.strip() for part in _needle_clean(prediction).split("; ")]
    except CRASHES as exc:  # noqa: B902 - the official run would stop here
        return {"official_crash": crash_text(exc), "positive": not negative,
                "exist": 0.0, "index": 0.0, "exact": 0.0, "multi": True}
    cleaned = "; ".join(parts)
    return {"positive": not negative, "exist": float(negative == (cleaned in spellings)),
            "index": float(gold_indexes == [part.split(", ", 1)[0] for part in parts]),
            "exact": float(("-1" if negative else gold) == cleaned), "multi": True}


def no_needle_spellings(n) -> frozenset:
    """The five spellings of "no needle" for ``n`` needles (``n``: the gold's count, or meta's
    ``k``, any JSON value: one the official expressions cannot use raises as they would)."""
    return frozenset({"-1", "-1" + "; -1" * (n - 1), "-1" + ", -1" * (n - 1),
                      "-1, -1, -1" + "; -1, -1, -1" * (n - 1), "-1" * n})


# --- ReadBench run_eval.py -------------------------------------------------------------------------

#: ``.*[Aa]nswer:\s*([A-J])`` finds the rightmost such spot; a lookahead makes matches overlap
#: ("answer: Answer: C") so the last one is that spot, in linear time
_COLON = re.compile(r"(?=[Aa]nswer:\s*([A-J]))")
_IS = re.compile(r"answer is[:\s]*\(?([A-J])\)?", re.S)
_LAST = re.compile(r"\b([A-J])\b", re.IGNORECASE)
_ANY = re.compile(r"[A-K]", re.DOTALL)


def readbench_letter(text: str) -> str | None:
    """run_eval.py ``_extract_answer_mmlu``: the last ``answer: X`` (no boundary: "Answer: BF"
    -> B), "answer is (X)", the last standalone letter in either case, the last capital A-K in
    the final 10 characters; None (officially then a random letter)."""
    if not text:
        return None
    for letter in (last_match(_COLON, text, 1), _first_group(_IS, text), last_match(_LAST, text, 1)):
        if letter:
            return letter.upper()
    tail = _ANY.findall(text[-10:])
    if tail:
        return tail[-1].upper()
    letter = last_match(_LAST, text[-300:], 1)
    return letter.upper() if letter else None


def _first_group(pattern: re.Pattern, text: str) -> str | None:
    match = pattern.search(text)
    return match.group(1) if match else None


_DIGIT_WORDS = dict(zip("123456789", ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine")))


_BABI_DIGIT = re.compile(r"\b[1-9]\b")


def _digit_word(match: re.Match) -> str:
    return _DIGIT_WORDS[match.group(0)]


def babi_preprocess(out: str) -> str:
    """run_eval.py ``babi_preprocess``: first sentence, cut at <context>/<example>/"question"
    (after lowercasing), $ stripped, standalone digits 1-9 spelled out."""
    out = out.lower().split(".")[0]
    out = out.split("<context>")[0].split("<example>")[0].split("question")[0]
    out = out.strip("$").strip().lower()
    out = _BABI_DIGIT.sub(_digit_word, out)
    return out.strip().lower()


def eval_babi(pred: str, gold: str, question: str, labels: list[str]) -> bool:
    """run_eval.py ``eval_babi`` (non-CoT): labels found as substrings in the answer, minus those
    in the question (except "none"); "one" dropped when "none" is found; a comma gold (over 3
    characters) needs every part and nothing else."""
    processed = babi_preprocess(pred)
    gold = gold.lower()
    labels = {label.lower() for label in labels}
    in_question = {label for label in labels if label in question.lower()} - {"none"}
    found = {label for label in labels if label in processed} - in_question
    if "none" in found and "one" in found:
        found.discard("one")
    if "," in gold and len(gold) > 3:
        parts = gold.split(",")
        return all(p in found for p in parts) and len(found) == len(parts)
    return gold in found and len(found) == 1


def longbench_qa_f1(pred: str, golds: list[str], subset: str) -> float:
    """run_eval.py ``eval_longbench`` with LongBench's ``qa_f1_score``: the first line only for
    the exact subset names trec/triviaqa/samsum/lsht; best F1 over golds, from 0."""
    if subset in {"trec", "triviaqa", "samsum", "lsht"}:
        pred = pred.lstrip("\n").split("\n")[0]
    best = 0.0
    for gold in golds:
        best = max(best, parse.token_f1(pred, gold)[0])
    return best


# --- MMLongBench scripts/eval_gpt4_summ.py -------------------------------------------------------

def summ_parse_json(text: str):
    """eval_gpt4_summ.py ``parse_json``: the last ``{...}``; if it is not JSON, the last
    ```json fence (greedy); None when the reply has no braces. Raises when neither parses."""
    matches = parse.shortest_spans(text, "{", "}")  # the official ``\{.*?\}``, in linear time
    if not matches:
        return None
    try:
        return json.loads(matches[-1])
    except json.JSONDecodeError:
        fences = re.findall(r"(?:```json)(.+)(?:```)", text, re.DOTALL)
        return json.loads(fences[-1])


def summ_score(fluency: dict, recall: dict, precision: dict, n_keypoints: int) -> dict:
    """eval_gpt4_summ.py ``check_metrics``: recall/keypoints, precision/sentences, F1 x fluency
    (values used as the judge wrote them; a missing key or non-number raises)."""
    rec = recall["recall"] / n_keypoints if n_keypoints > 0 else 0
    prec = precision["precision"] / precision["sentence_count"] if precision["sentence_count"] > 0 else 0
    f1 = 2 * (rec * prec) / (rec + prec) if rec + prec > 0 else 0
    return {"fluency": float(fluency["fluency"]), "recall": float(rec), "precision": float(prec),
            "f1": float(f1), "score": float(f1 * fluency["fluency"])}
