"""Answer parsing shared by every metric: prefixes, normalisation, letters, numbers, lists.

Each benchmark's scorer differs in small, documented ways; the pieces live here once so that a
fix (for example to the letter parser) reaches every family that uses it.
"""
from __future__ import annotations

import json
import math
import random
import re
import string
from collections import Counter
from typing import Sequence

from rapidfuzz.distance import Levenshtein

PREFIXES = ("Answer:", "label:", "Summary:")


def strip_prefix(text: str, prefixes: Sequence[str] = PREFIXES) -> str | None:
    """Text after the first answer prefix (case-insensitive), or None when no prefix occurs.

    MMLongBench/HELMET's ``parse_output``: the prefix may be repeated by chat models, so a
    second copy at the start of the remainder is dropped too.
    """
    best = None
    for prefix in prefixes:
        match = re.search(re.escape(prefix), text, flags=re.IGNORECASE)
        if match and (best is None or match.start() < best[0]):
            best = (match.start(), match.end(), prefix)
    if best is None:
        return None
    rest = text[best[1]:].strip()
    rest = re.sub("^" + re.escape(best[2]), "", rest, flags=re.IGNORECASE)
    return rest.strip()


def candidates(prediction: str) -> list[str]:
    """The raw output and, when it has an answer prefix, the parsed one (scored, max kept)."""
    prediction = prediction or ""
    parsed = strip_prefix(prediction)
    return [prediction] if parsed is None or parsed == prediction else [prediction, parsed]


def white_space_fix(text: str) -> str:
    return " ".join(text.split())


_ARTICLES = re.compile(r"\b(a|an|the)\b")


def remove_articles(text: str) -> str:
    return _ARTICLES.sub(" ", text)


_PUNCT = set(string.punctuation)


def remove_punc(text: str) -> str:
    return "".join(ch for ch in text if ch not in _PUNCT)


def normalize_answer(text: str) -> str:
    """SQuAD normalisation: lowercase, strip punctuation, drop a/an/the, collapse spaces."""
    return white_space_fix(remove_articles(remove_punc(text.lower())))


def normalize_with_punc(text: str) -> str:
    """Like ``normalize_answer`` but punctuation kept (used before yes/no and list parsing)."""
    return white_space_fix(remove_articles(text.lower()))


def token_f1(prediction: str, gold: str) -> tuple[float, float, float]:
    """(F1, precision, recall) over normalised whitespace tokens; zeros when nothing overlaps."""
    pred_tokens = normalize_answer(prediction).split()
    gold_tokens = normalize_answer(gold).split()
    same = sum((Counter(pred_tokens) & Counter(gold_tokens)).values())
    if same == 0:
        return 0.0, 0.0, 0.0
    precision = same / len(pred_tokens)
    recall = same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall), precision, recall


def levenshtein(a: str, b: str) -> int:
    """Edit distance of two texts (insert, delete, substitute: 1 each), per code point as the
    official ``anls`` tables count it: rapidfuzz's ``Levenshtein.distance``."""
    return Levenshtein.distance(a, b)


def anls(gold: str, prediction: str, threshold: float = 0.5) -> float:
    """Normalised Levenshtein similarity; values at or below ``threshold`` count as 0."""
    length = max(len(gold), len(prediction))
    value = 1.0 - (levenshtein(gold, prediction) / length if length else 0.0)
    return 0.0 if value <= threshold else value


_NUMBER = re.compile(r"-?\d+(?:\.\d*)?|-?\.\d+")


def extract_numbers(text: str) -> list[float]:
    """Every finite number in ``text`` (commas dropped first, so "1,234" is 1234)."""
    out = []
    for match in _NUMBER.findall(text.replace(",", "")):
        try:
            value = float(match)
        except ValueError:
            continue
        if math.isfinite(value):
            out.append(value)
    return out


def extract_yes_no(text: str) -> str | None:
    """The last standalone yes/no in the output (Visual Haystack), or None."""
    found = re.findall(r"\b(yes|no)\b", normalize_with_punc(text))
    return found[-1] if found else None


def to_int(text: str) -> int | None:
    """``int(text)``, or None past Python's 4,300-digit limit for converting text."""
    try:
        return int(text)
    except ValueError:
        return None


def ints_of(texts) -> list[int]:
    """The integers among ``texts`` (those past the digit limit dropped)."""
    return [v for v in (to_int(t) for t in texts) if v is not None]


def extract_int_list(text: str) -> list[int]:
    """The counting answer: last bracketed list of integers, else the last bracketed list
    (non-integers dropped), else every integer in the text (a bare comma list)."""
    text = normalize_with_punc(text)
    for raw in reversed(re.findall(r"\[[\d\s,]+\]", text)):
        value = safe_json(raw)
        if isinstance(value, list):
            return [int(x) for x in value]
    brackets = re.findall(r"\[[^\[\]]*\]", text)
    if brackets:
        items = [item.strip().strip("'\"") for item in brackets[-1][1:-1].split(",")]
        ints = ints_of(item for item in items if re.fullmatch(r"-?\d+", item))
        if ints:
            return ints
    return ints_of(re.findall(r"-?\d+", text))


def extract_class_label(text: str) -> int | None:
    """ICL label: ``label: N`` first, else the last number in the text."""
    text = white_space_fix(text)
    match = re.search(r"label:\s*(\d+)", text, flags=re.IGNORECASE)
    if match:
        return to_int(match.group(1))
    numbers = re.findall(r"\b\d+\b", text)
    return to_int(numbers[-1]) if numbers else None


# --- the one letter parser -------------------------------------------------------------------
# Each benchmark is a list of rules tried in order; a rule is (pattern, which match to take).
# The letter group is always group 1. Patterns are compiled per letter set.

# A capital letter standing alone, not used as a word ("I think", "A cat": followed by a
# lowercase word), so the pronoun I and the article A are not read as options.
_STANDALONE = r"(?<![A-Za-z'])([{L}])(?![A-Za-z'])(?!\s+[a-z])"

LETTER_RULES = {
    # MMLongBench / HELMET extract_choice_letter (case-sensitive letters).
    "mmlongbench": [
        (r"answer is \(?([{L}])\)?", "first", 0),
        (r"[aA]nswer:\s*\(?([{L}])\b", "first", 0),
        (r"\b([{L}])\b", "last", 0),
    ],
    # ReadBench (MMLU-Pro style): last "answer: X", then "answer is (X)", then the last
    # standalone letter. Case-insensitive on the words, letters upper or lower case.
    "readbench": [
        (r"answer\s*:\s*\**\(?([{L}])\)?\**(?![A-Za-z])", "last", re.IGNORECASE),
        (r"answer is\s*:?\s*\**\(?([{L}])\)?\**(?![A-Za-z])", "last", re.IGNORECASE),
        (_STANDALONE, "last", 0),
    ],
    # LongVideoBench: drop answer preambles, then the first standalone letter.
    "lvb": [
        (_STANDALONE, "first", 0),
    ],
}

LVB_PREAMBLES = (
    r"the (?:best |correct )?answer is:?",
    r"the (?:best |correct )?option is:?",
    r"best option:?",
    r"answer:",
    r"option:",
)


def _strip_preambles(text: str) -> str:
    for preamble in LVB_PREAMBLES:
        text = re.sub(preamble, " ", text, flags=re.IGNORECASE)
    return text


def extract_letter(text: str, letters: str = "ABCDEFGHIJ", rules: str = "mmlongbench",
                   random_fallback: bool = False, seed: int | str = 0) -> str | None:
    """The chosen option letter by a benchmark's rule list, or None when there is none.

    ``random_fallback`` (off by default) reproduces MMLU-Pro/ReadBench/LVB parity scripts that
    pick a random letter when nothing parses; ``seed`` makes that pick reproducible.
    """
    text = white_space_fix(text or "")
    if rules == "lvb":
        text = _strip_preambles(text)
    for pattern, which, flags in LETTER_RULES[rules]:
        found = re.findall(pattern.format(L=re.escape(letters)), text, flags=flags)
        found = [f.upper() for f in found if f.upper() in letters]
        if found:
            return found[0] if which == "first" else found[-1]
    if random_fallback:
        return random.Random(str(seed)).choice(letters)
    return None


def letter_of(gold: str, letters: str = "ABCDEFGHIJ") -> str | None:
    """A gold answer as a letter: "B", "(B)", "B. text" or a 0-based index "1"."""
    gold = str(gold).strip()
    if re.fullmatch(r"\d+", gold):
        index = int(gold)
        return letters[index] if index < len(letters) else None
    match = re.match(r"\(?([A-Za-z])\)?(?:[.:)\s]|$)", gold)
    return match.group(1).upper() if match else None


#: Python's parser refuses more than 200 nested brackets; json's decoder recurses per level
MAX_NESTING = 200
#: a run of unary signs this long makes ``ast.literal_eval`` recurse (RecursionError, then
#: MemoryError from about 10,000 signs)
MAX_SIGN_RUN = 200
_SIGN_RUN = re.compile(r"[-+~](?:\s*[-+~]){%d,}" % MAX_SIGN_RUN)


def too_deep(text: str) -> bool:
    """True when ``text`` nests brackets deeper than MAX_NESTING or has a long run of unary
    signs: the inputs that make json/ast recurse until RecursionError or MemoryError."""
    depth = 0
    for ch in text:
        if ch in "[({":
            depth += 1
            if depth > MAX_NESTING:
                return True
        elif ch in "])}":
            depth = max(depth - 1, 0)
    return _SIGN_RUN.search(text) is not None


def safe_literal(text: str, strict: bool = False):
    """``ast.literal_eval`` that never crashes the scorer: None when the text is not a literal,
    is nested too deeply or is a pathological sign run (``strict=True``: ValueError instead)."""
    import ast

    problem = "nested too deeply or a long run of signs" if too_deep(text) else None
    if problem is None:
        try:
            return ast.literal_eval(text)
        except (ValueError, SyntaxError, TypeError, RecursionError, MemoryError) as exc:
            problem = f"not a Python literal ({type(exc).__name__})"
    if strict:
        raise ValueError(problem)
    return None


def safe_json(text: str):
    """``json.loads`` or None (malformed, too deep, or an integer over Python's digit limit)."""
    if too_deep(text):
        return None
    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # JSONDecodeError and the int digit limit are ValueErrors
        return None


def is_float_text(text: str) -> bool:
    """``float(text)`` succeeds (inf and nan included), as MMLongBench-Doc's ``isfloat``."""
    try:
        float(text)
        return True
    except ValueError:
        return False


def _load(text: str, loaders=("json",)):
    """The first loader ("json", "python") that parses ``text``, else None."""
    for loader in loaders:
        value = safe_json(text) if loader == "json" else safe_literal(text)
        if value is not None:
            return value
    return None


def as_list(value) -> list:
    """A gold answer that may be a Python/JSON list literal in a string, as a list."""
    if isinstance(value, (list, tuple)):
        return list(value)
    text = str(value).strip()
    if text.startswith("["):
        parsed = _load(text, ("python", "json"))
        if isinstance(parsed, (list, tuple)):
            return list(parsed)
    return [value]


def shortest_spans(text: str, opening: str, closing: str) -> list[str]:
    """What ``re.findall(r"\\{.*?\\}", text, re.DOTALL)`` finds (with these two characters),
    by scanning: each span runs from an ``opening`` to the first ``closing`` after it, the next
    search starting after that ``closing``. Linear, where the regex is quadratic on a long run
    of openings with no closing."""
    spans, start = [], text.find(opening)
    while start >= 0:
        end = text.find(closing, start)
        if end < 0:
            break
        spans.append(text[start:end + 1])
        start = text.find(opening, end + 1)
    return spans


_PARENTHESISED = re.compile(r"(?<!\s)\s*\([^)]*\)")


def drop_parenthesised(text: str) -> str:
    """``re.sub(r"\\s*\\([^)]*\\)", "", text)`` (MMLongBench-Doc's cleaning) in linear time.

    No match can end after the last ")", so the text after it is left as it is rather than
    searched. Inside a whitespace run the official pattern retries ``\\s*`` from every space (quadratic
    on a long run not followed by "("); a match found from inside a run is also found from the run's
    start, which the scan reaches first, so ``(?<!\\s)`` lets a match start only there: same output."""
    last = text.rfind(")")
    if last < 0:
        return text
    return _PARENTHESISED.sub("", text[:last + 1]) + text[last + 1:]


def last_json_object(text: str) -> dict | None:
    """The last parseable ``{...}`` object in a judge reply (or in a ```json fence)."""
    text = text or ""
    raws = list(reversed(shortest_spans(text, "{", "}")))
    raws += list(reversed(re.findall(r"```json(.+?)```", text, flags=re.DOTALL)))
    for raw in raws:
        value = _load(raw)
        if isinstance(value, dict):
            return value
    return None
