"""Generated prediction/gold pairs for checking ``--parity official`` against the official scorers.

    python -m benchmarks.parity_pairs [--n 2000] [--seed parity] [--protocol v1.1] --out pairs.jsonl

Writes one JSON object per pair: the metric path, the protocol, the prediction, the example as
``mmlb eval`` shapes it (``answers``, ``meta``, ``question``, ``_row``), ``official`` (the arguments
the benchmark's own function takes for the same pair: the gold in its official type, the answer
format, the example's position for binary_acc's cycling default, and for MMLongBench's metrics the
loader's ``system_template``, which the official runners prepend to the prediction before
``post_process``) and this library's result under ``parity="official"`` (``ours``: score, parsed
answer, extra). Anyone with the official code
checked out can score ``prediction`` + ``official`` with it and compare with ``ours``; the table
this produced is in docs/evaluation.md. No official code is here: only the inputs.

Pairs are realistic answers and adversarial ones (answer prefixes, yes/no variants, lists, floats
near the metrics' thresholds, unicode digits and letters, empty output, bracket junk), chosen by a
SHA-256-seeded generator (``mmlbdata.core.seeding.rng``): the same --seed and --n give the same file.
"""
from __future__ import annotations

import argparse
import json
import math
import random
import sys
from typing import Callable, Iterator

from mmlbdata.evaluation.metrics import get_metric
from mmlbdata.core.seeding import rng as seeded_rng

PREFIXES = ("", "", "", "Answer: ", "answer:", "ANSWER: ", "Answer: Answer: ", "The answer is ", "label: ",
            "Summary: ", "**Answer:** ", "Final answer: ", "Answer:\n", "answer is: ")
#: text before the answer (a chain of thought), so the prefix that follows is mid-text: the official
#: runners prepend the loader's own prefix, which then comes first (``official.runner_output``)
LEADS = ("Let me think. ", "Looking at the images,\n", "The document says 5 and 7.\n", "I think it is A or B. ",
         "Reasoning: see page 3.\n\n", "Because of the caption, ", "label: 2\n", "Summary of my reading: ")
SUFFIXES = ("", "", "", ".", "\n", " ", "!", ")", "\nExplanation: the document says so.", " (see page 3)",
            "...", "]", "\n\nQuestion: next?")
JUNK = ("", "", "[", "]", "{}", "é", "ß", "İ", "—", "\u200b", "１２", "٣", "🙂", "Ω", "(", "\n", "  ", "$", "%")
ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJK0123456789 ,.;:-[]()'\"\n\t$%£ßİé١２Ω"


def wrap(core: str, rng: random.Random) -> str:
    """``core`` with a random answer prefix (a quarter of them after a lead-in, so mid-text), suffix
    and sometimes junk on either side."""
    lead = rng.choice(LEADS) if rng.random() < 0.25 else ""
    text = lead + rng.choice(PREFIXES) + core + rng.choice(SUFFIXES)
    if rng.random() < 0.2:
        text = rng.choice(JUNK) + text + rng.choice(JUNK)
    if rng.random() < 0.05:
        text = text.upper() if rng.random() < 0.5 else text.lower()
    return text


def noise(rng: random.Random, longest: int = 40) -> str:
    """Random characters (digits, letters, brackets, unicode), or an empty/blank output."""
    if rng.random() < 0.15:
        return rng.choice(("", " ", "\n", "\t \n"))
    return "".join(rng.choice(ALPHABET) for _ in range(rng.randrange(1, longest)))


def pick(rng: random.Random, realistic: Callable[[], str], adversarial: tuple[str, ...]) -> str:
    """Half realistic answers, a third fixed adversarial spellings, the rest random text."""
    roll = rng.random()
    if roll < 0.5:
        return wrap(realistic(), rng)
    if roll < 0.85:
        return wrap(rng.choice(adversarial), rng)
    return noise(rng)


# --- MMLongBench utils.py metrics -----------------------------------------------------------------

ENTITIES = ("Paris", "New York City", "the Beatles", "1984", "U.S. Navy", "Zürich", "Straße", "Mount Everest",
            "an apple", "J. R. R. Tolkien", "3 March 2010", "Ω-3", "42")
BLANK_GOLDS = ("", " ", "the", ".", "a")


def sub_em_pairs(rng):
    for _ in range(SIZE):
        golds = [rng.choice(ENTITIES) for _ in range(rng.randrange(1, 4))]
        if rng.random() < 0.05:
            golds.append(rng.choice(BLANK_GOLDS))
        gold = rng.choice(golds)
        variants = (gold, gold.lower(), gold.upper(), f"It is {gold}.", gold[: max(1, len(gold) // 2)],
                    gold.replace(" ", ""), rng.choice(ENTITIES), f"Not {gold} but something else")
        pred = pick(rng, lambda: rng.choice(variants), ("Answer: Because", "none", "I don't know", "[]", "N/A"))
        yield pred, {"answers": golds}, {"answers": golds}


def binary_pairs(rng):
    for row in range(SIZE):
        gold = rng.choice(("Yes", "No", "yes", "no"))
        adversarial = ("1", "0", "2", " 1 ", "10", "yes no", "no, yes", "noyes", "Nope", "know", "yeſ", "YES!",
                       "Yes.", "not sure", "the answer: no", "Yes\nNo", "Answer: 1", "٣", "１", "²", "1²", "9" * 5000)
        pred = pick(rng, lambda: rng.choice(("Yes", "No", "yes", "no", f"I think {gold.lower()}", "Yes, it is.")),
                    adversarial)
        yield pred, {"answers": [gold], "_row": row}, {"answer": gold, "position": row}


def count_pairs(rng):
    for _ in range(SIZE):
        gold = [rng.randrange(0, 4) for _ in range(rng.randrange(1, 5))]
        if rng.random() < 0.1:
            gold = [0] * len(gold)
        near = list(gold)
        if near and rng.random() < 0.5:
            near[rng.randrange(len(near))] += rng.choice((-1, 1))
        adversarial = ("[2.5]", "[true]", "[true, 1]", "[]", "none", "[1, 2] [3,]", "[1e400]", "[NaN]", "[-1, 2]",
                       '["3"]', "[[1], [2]]", "[1, null]", "There are 3 cats", "[ ]", "[1 2]", "[1,,2]", "[0]",
                       "[１, 2]", "[٣]", "[Infinity]", "[1.0, 2.0]", "[-0]", "1, 2, and 3", "[1, 2]\n[3, 4]", "[" + "9" * 5000 + "]",
                       "9" * 5000, '["9' + "9" * 5000 + '"]', "[²]", "[{}]", "[1, [2, 3]]")
        pred = pick(rng, lambda: rng.choice((json.dumps(gold), json.dumps(near), str(gold).replace(" ", ""),
                                             ", ".join(map(str, gold)), f"The counts are {gold}.")), adversarial)
        yield pred, {"answers": [json.dumps(gold)]}, {"answer": gold}


LETTERS = "ABCDEFGHIJ"


def mc_pairs(rng):
    for _ in range(SIZE):
        gold = rng.choice(LETTERS)
        other = rng.choice(LETTERS)
        adversarial = ("Answer: Because", "Answer: (B)", "answer is B", "The answer is (C)", "a", "b)", "B and C",
                       "I think D.", "K", "option 2", "Answer: BF", "answer: c", "A.", "(J)", "AB", "Answer:  \nE")
        pred = pick(rng, lambda: rng.choice((gold, f"({gold})", f"{gold}. because", f"The answer is ({gold})",
                                             f"{other}", f"{gold} or {other}", f"Answer: {gold}")), adversarial)
        yield pred, {"answers": [gold]}, {"answer": LETTERS.index(gold)}


def cls_pairs(rng):
    for _ in range(SIZE):
        gold = rng.randrange(0, 25)
        adversarial = ("class3", "7th", "label:12", "Label: 4", "the label is 5 not 6", "label: -2", "1.5", "３",
                       "٣", "label: ３", "label 3", "3rd and 4th", "no idea", "label:", "-1", "007", "1e2", "²",
                       "label: " + "9" * 5000, "9" * 5000, "x9" + "9" * 5000)
        pred = pick(rng, lambda: rng.choice((f"label: {gold}", str(gold), f"label: {gold + 1}",
                                             f"I think it is {gold}", f"label: {gold} (class {gold + 2})")),
                    adversarial)
        yield pred, {"answers": [str(gold)]}, {"answer": gold}


WORDS = ("the agency found that costs rose by 12 percent while oversight lagged behind and the court ruled for "
         "plaintiffs in the class action over prison conditions summary report recommends").split()


def rouge_pairs(rng):
    for _ in range(SIZE):
        golds = [" ".join(rng.choice(WORDS) for _ in range(rng.randrange(3, 25))) for _ in range(rng.randrange(1, 3))]
        base = golds[0].split()
        rng.shuffle(base)
        body = " ".join(base[: rng.randrange(0, len(base) + 1)])
        pred = pick(rng, lambda: rng.choice((body, golds[0], f"{body}\n\n{golds[-1]}", f"Summary: {body}")),
                    ("Summary:", "Answer: " + golds[0], "summary: " + golds[0], "", "Summary: Summary: x"))
        yield pred, {"answers": golds}, {"answers": golds}


# --- document QA ----------------------------------------------------------------------------------

def near_numbers(value: float, rng: random.Random) -> list[str]:
    """Spellings of ``value`` and numbers just inside/outside 1% and the x100 / /100 readings."""
    out = [repr(value), f"{value:,.2f}", str(value * 1.009), str(value * 1.011), str(value / 100), str(value * 100),
           f"{value}%", f"${value}", f"{value} million", str(round(value)), str(-value), f"about {value} miles"]
    return out + [str(round(value * rng.uniform(0.98, 1.02), 4))]


DOCQA_STRINGS = ("annual report", "https://example.com/a", "main.py", "page 12", "555-1234", "9 a.m.", "2019-03-01",
                 "03/01/2019", "2019-03", "ops@example.com", "Groß", "Not answerable", "(a) left panel",
                 "12 miles", "$5", "'quoted'")
DOCQA_NUMBER_TEXT = ("inf", "nan", "1e999", "Infinity", "-0", "1,234", "0.0", "12.", ".5", "9" * 400, "1e308",
                     "-.5", "1.2.3", "٣", "１２")


def docqa_pairs(rng):
    for _ in range(SIZE):
        fmt = rng.choice(("Integer", "Float", "String", "None", "List"))
        if fmt == "Integer":
            gold = rng.choice((str(rng.randrange(0, 3000)), "1,200", "12 miles", "$5", "3.0", "42 kg", "7%"))
            cores = near_numbers(float(gold.replace(",", "").strip("$%").split()[0]), rng)
        elif fmt == "Float":
            gold = rng.choice((f"{rng.uniform(0, 100):.2f}", "12.5%", "0.33", "2.5", "$3.75", "1.5 million"))
            cores = near_numbers(float(gold.strip("$%").split()[0]), rng)
        elif fmt in ("String", "None"):
            gold = rng.choice(DOCQA_STRINGS) if fmt == "String" else "Not answerable"
            cores = [gold, gold.upper(), f"It is {gold}", gold[:-1], "Not answerable", rng.choice(DOCQA_STRINGS)]
        else:
            items = rng.sample(["apple", "pear", 12, 2.0, "3.5%", "page 4", "1,200", "x@y.org", "nan", "inf"],
                               rng.randrange(0, 4))
            gold = json.dumps(items)
            cores = [", ".join(map(str, items)), json.dumps(list(reversed(items))), str(items), "apple pear 12",
                     "200", "350", "1200"]
        pred = pick(rng, lambda: rng.choice(cores), DOCQA_NUMBER_TEXT + ("Answer:", "Not answerable."))
        # the builders store MMLongBench-Doc's spellings (Int, Str); the metric maps them to utils.py's
        stored = {"Integer": "Int", "String": "Str"}.get(fmt, fmt) if rng.random() < 0.5 else fmt
        yield pred, {"answers": [gold], "meta": {"answer_format": stored}}, {"answer": gold, "answer_format": fmt}


#: List items as MMLongBench-Doc's 151 List answers have them: strings, ints, one float (1.4); 2.0 is rarer still
RELEASE_LIST_ITEMS = ("White", "10%", "Circle", "Google Play store", "1.3", 1500, 8000, 16, 25, "38", "F1", 53, 1.4,
                      2.0, "2019-03", "page 4", "x@y.org")


def docqa_release_list_pairs(rng):
    """List golds as the release files them (JSON, typed items) for the official code, and as this
    library stores release rows (``mmlb_release.list_answer``: the Python literal of the items as
    strings, the release's JSON kept in ``meta["answer_json"]``)."""
    from mmlbdata.sources.mmlb_release import list_answer

    for _ in range(SIZE):
        items = rng.sample(RELEASE_LIST_ITEMS, rng.randrange(2, 5))
        gold = json.dumps(items)
        cores = [", ".join(map(str, items)), " and ".join(map(str, reversed(items))), str(items[0]), "200", "140",
                 "1.4%", "0.014", "53 and 1.4", "1500 8,000"]
        pred = pick(rng, lambda: rng.choice(cores), DOCQA_NUMBER_TEXT)
        meta = {"answer_format": "List", "answer_json": gold}  # what mmlb_release.gold keeps beside it
        yield pred, {"answers": [list_answer(gold)], "meta": meta}, {"answer": gold, "answer_format": "List"}


DOC_STRINGS = ("less well-off", "Groß", "12 miles", "5 million", "(a) left", "$5", "page 3", "2019-03-01",
               "2019-03", "https://x.org", "run.py", "3 p.m.", "555 1234", "a@b.co", "Not answerable", "'quoted'")


def mmlongbench_doc_pairs(rng):
    for _ in range(SIZE):
        fmt = rng.choice(("Int", "Float", "Str", "None", "List"))
        if fmt == "Int":
            gold = rng.choice((str(rng.randrange(-5, 3000)), "0", "12"))
            cores = [gold, f"{gold}.0", f"{gold}.7", str(int(gold) + 1), f" {gold} ", f"{gold} people"]
        elif fmt == "Float":
            gold = rng.choice((f"{rng.uniform(0, 100):.2f}", "12.5%", "0.25", "1.0", "3.14159", "$2.5"))
            cores = near_numbers(float(gold.strip("$%")), rng)
        elif fmt in ("Str", "None"):
            gold = rng.choice(DOC_STRINGS) if fmt == "Str" else "Not answerable"
            cores = [gold, gold.upper(), gold + "s", gold[:-1], "GROSS", "Not answerable", rng.choice(DOC_STRINGS)]
        else:
            items = rng.sample(["a", "b", "12", "3.5", "Groß", "page 2", "2019-03", "x (y)"], rng.randrange(0, 4))
            gold = repr(items)
            cores = [repr(list(reversed(items))), repr(items), json.dumps(items), ", ".join(items),
                     repr(items[:-1]), "[]"]
        adversarial = ("inf", "Infinity", "1e999", "nan", "-inf", "[1, 2", "[1]+[2]", "[1, 2][0]", "['b', 'a']",
                       "Failed to extract", "", "[]", "[None]", "(1, 2)", "[[1]]", "9" * 400, "1e308", "١٢",
                       "GROß", "groß", "(x)", "['a'", "[1, 2, 3]", "$1,200", "12%", "0.1%", "1_000")
        pred = pick(rng, lambda: rng.choice(cores), adversarial).strip()  # extraction output is stripped
        yield pred, {"answers": [gold], "meta": {"answer_format": fmt}}, {"answer": gold, "answer_format": fmt}


# --- MMNeedle ---------------------------------------------------------------------------------------

def needle_spelling(needles, rng):
    sep = rng.choice(("; ", ";", " ; ", "; "))
    return sep.join(rng.choice(("{}, {}, {}", "{},{},{}", "({}, {}, {})", "{}, {}, {}")).format(*n) for n in needles)


def needle_pairs(rng, k: int):
    for _ in range(SIZE):
        negative = rng.random() < 0.3
        needles = [(0 if negative else rng.randrange(1, 11), rng.randrange(1, 5), rng.randrange(1, 5))
                   for _ in range(k)]
        gold = "; ".join(f"{i}, {r}, {c}" for i, r, c in needles)
        near = [(i, r, c + rng.choice((0, 1))) for i, r, c in needles]
        adversarial = ("-1", "-1, -1, -1", "-1; -1", "-1, -1", "-1-1", "-1; -1; -1; -1; -1", "", "None", "0",
                       "-1, -1, -1; -1, -1, -1", "Answer: -1", "-1.", "-1\n", " -1 ")
        pred = pick(rng, lambda: rng.choice((gold, needle_spelling(needles, rng), needle_spelling(near, rng),
                                             gold + ".", gold.replace("; ", ";\n"))), adversarial)
        # a negative gold as this library builds it by default (the paper's -1) or as the official code spells it
        ours = "-1" if negative and rng.random() < 0.5 else gold
        yield pred, {"answers": [ours], "meta": {"k": k}}, {"answer": gold, "k": k}


# --- ReadBench ----------------------------------------------------------------------------------------

def readbench_mc_pairs(rng):
    for _ in range(SIZE):
        gold = rng.choice(LETTERS)
        adversarial = ("Answer: BF", "answer: Because", "a", "the answer is c", "It is OK", "... is OK", "",
                       "Answer: (D)", "answer is: (E)", "I pick K", "b", "Answer: B\nAnswer: C", "none of them",
                       "x" * 400 + " A", "The answer is J.", "answer is j")
        pred = pick(rng, lambda: rng.choice((f"Answer: {gold}", f"The answer is ({gold})", gold, f"{gold}.",
                                             f"I think {rng.choice(LETTERS)}")), adversarial)
        yield pred, {"answers": [gold]}, {"answer": gold}


BABI = {  # task -> (questions, gold choices)
    "qa1": (("Where is Mary?", "Where is the office worker?"), ("bathroom", "kitchen", "office", "garden")),
    "qa2": (("Where is the football?",), ("hallway", "bedroom", "office")),
    "qa5": (("What did Fred give to Bill?", "Who gave the milk?"), ("milk", "apple", "Bill", "Jeff")),
    "qa6": (("Is John in the kitchen?",), ("yes", "no")),
    "qa7": (("How many objects is Mary carrying?",), ("none", "one", "two", "three")),
    "qa8": (("What is Mary carrying?",), ("apple", "milk", "nothing", "apple,milk", "football,milk")),
    "qa10": (("Is Bill in the park?",), ("yes", "no", "maybe")),
}


def babilong_pairs(rng):
    for _ in range(SIZE):
        task = rng.choice(sorted(BABI))
        questions, choices = BABI[task]
        question, gold = rng.choice(questions), rng.choice(choices)
        adversarial = ("2", "1", "none", "one", "nothing", "someone is in the north", "no one", "$kitchen$",
                       "kitchen <context> office", "Question: kitchen", "In the Kitchen question office",
                       "apple, milk", "apple and milk.", "Mary is carrying 1 apple", "there is none", "Bill. Fred")
        pred = pick(rng, lambda: rng.choice((gold, f"The answer is {gold}.", f"{gold} and {rng.choice(choices)}",
                                             gold.replace(",", " and "), f"It is in the {gold}")), adversarial)
        yield pred, {"answers": [gold], "question": question, "meta": {"task": task}}, \
            {"answer": gold, "question": question, "task": task}


def longbench_pairs(rng):
    subsets = ("2wikimqa_e", "hotpotqa_e", "triviaqa_e", "narrativeqa", "triviaqa", "hotpotqa")
    for _ in range(SIZE):
        subset = rng.choice(subsets)
        golds = [rng.choice(ENTITIES) for _ in range(rng.randrange(1, 4))]
        gold = golds[0]
        pred = pick(rng, lambda: rng.choice((gold, f"\n{gold}\nmore text", f"Answer: {gold}", f"first line\n{gold}",
                                             f"It was {gold} in 1990", rng.choice(ENTITIES))),
                    ("", "\n\n", "the a an", "Answer:", "..."))
        yield pred, {"answers": golds, "meta": {"subset": subset}}, {"answers": golds, "subset": subset}


JUDGE_REPLIES = {
    "fluency": ('{"fluency": 1}', '{"fluency": 0}', 'Reasoning... Output: {"fluency": 1}', "no json here",
                '{"fluency": 1} then {"bad": }', '```json\n{"fluency": 1}\n``` and {oops}', '{"fluency": "1"}',
                '{"other": 1}', "", '{"fluency": 1.0}'),
    "recall": ('{"recall": 3}', '{"supported_key_points": [1, 2], "recall": 2}', '{"recall": 0}', "none",
               '{"recall": "2"}', '{"recall": 7}', '{"a": 1} {"recall": 1}', '{"recall": 1} {"recall": }',
               '{"recall": 2.5}', '{}'),
    "precision": ('{"precision": 2, "sentence_count": 6}', '{"precision": 0, "sentence_count": 0}',
                  '{"precision": 3, "sentence_count": 3}', '{"precision": 1}', "nothing",
                  '{"precision": 5, "sentence_count": 4}', '```json\n{"precision": 1, "sentence_count": 2}\n``` {x}',
                  '{"precision": -1, "sentence_count": 2}'),
}


class CannedJudge:
    """Stands in for the judge endpoint: returns the replies it was given, in order."""

    def __init__(self, replies):
        self._next = iter(replies).__next__

    def complete_many(self, requests, **params):
        return [self._next() for _ in requests]


def summ_judge_pairs(rng):
    for _ in range(SIZE):
        replies = [rng.choice(JUDGE_REPLIES[k]) for k in ("fluency", "recall", "precision")]
        keypoints = [f"point {i}" for i in range(rng.choice((0, 1, 3, 5)))]
        summary = pick(rng, lambda: "Summary: " + " ".join(rng.choice(WORDS) for _ in range(20)), ("",))
        yield summary, {"answers": ["expert summary"], "meta": {"keypoints": keypoints}, "_judge": replies}, \
            {"replies": replies, "n_keypoints": len(keypoints)}


#: metric path -> (registered metric, pair generator)
PATHS: dict[str, tuple[str, Callable[[random.Random], Iterator]]] = {
    "sub_em": ("sub_em", sub_em_pairs),
    "binary_acc": ("binary_acc", binary_pairs),
    "count_acc": ("count_acc", count_pairs),
    "mc_acc": ("mc_acc", mc_pairs),
    "cls_acc": ("cls_acc", cls_pairs),
    "rouge_l": ("rouge_l", rouge_pairs),
    "docqa": ("docqa", docqa_pairs),
    "docqa_release_lists": ("docqa", docqa_release_list_pairs),
    "mmlongbench_doc": ("mmlongbench_doc", mmlongbench_doc_pairs),
    "mmneedle_single": ("mmneedle", lambda rng: needle_pairs(rng, 1)),
    "mmneedle_multi2": ("mmneedle", lambda rng: needle_pairs(rng, 2)),
    "mmneedle_multi5": ("mmneedle", lambda rng: needle_pairs(rng, 5)),
    "readbench_mc": ("readbench_mc", readbench_mc_pairs),
    "babilong": ("babilong", babilong_pairs),
    "longbench_f1": ("longbench_f1", longbench_pairs),
    "summ_judge": ("summ_judge", summ_judge_pairs),
}
SIZE = 2000


def _plain(value):
    """JSON-safe extras (NaN/inf as text)."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def generate(seed: str = "parity", n: int = 2000, paths=None, protocol: str = "v1.1") -> Iterator[dict]:
    """Every pair of every path (or of ``paths``), with this library's official-parity result under
    MMLongBench's ``protocol``. For MMLongBench's metrics ``official`` also names the loader's
    ``system_template``: the official side scores ``system_template + prediction``, as its runners
    hand that text to ``post_process`` (eval.py L73-74)."""
    global SIZE
    SIZE = n
    for path in paths or PATHS:
        metric_name, pairs = PATHS[path]
        metric = get_metric(metric_name, parity="official", protocol=protocol)
        template = getattr(metric, "system_template", None)
        for index, (prediction, example, official) in enumerate(pairs(seeded_rng("parity_pairs", seed, path))):
            example = {"id": f"{path}-{index}", **example}
            if "meta" in example:
                example["meta"] = json.dumps(example["meta"])
            if template is not None:
                official = {**official, "system_template": template}
            replies = example.pop("_judge", None)
            if replies is not None:  # judge-backed: a fresh metric answered by the canned replies
                metric = get_metric(metric_name, parity="official", protocol=protocol, judge=CannedJudge(replies))
            result = metric.score(prediction, example)
            yield {"path": path, "metric": metric_name, "index": index, "protocol": protocol, "prediction": prediction,
                   "example": example, "official": official,
                   "ours": {"score": result.score, "parsed": result.parsed, "extra": _plain(result.extra)}}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=2000, help="pairs per metric path (default 2000)")
    parser.add_argument("--seed", default="parity", help="generator seed (default 'parity')")
    parser.add_argument("--path", action="append", choices=sorted(PATHS), help="only these metric paths")
    parser.add_argument("--protocol", default="v1.1", choices=("v1.1", "v1.0"),
                        help="MMLongBench protocol of the official side (default v1.1: utils.py @22b9f27)")
    parser.add_argument("--out", default="-", help="JSONL file to write ('-': stdout)")
    args = parser.parse_args(argv)
    out = sys.stdout if args.out == "-" else open(args.out, "w", encoding="utf-8")
    try:
        count = 0
        for record in generate(args.seed, args.n, args.path, args.protocol):
            out.write(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n")
            count += 1
    finally:
        if out is not sys.stdout:
            out.close()
    print(f"{count} pairs written to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
