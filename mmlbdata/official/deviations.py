"""Every difference between ``--parity default`` and ``--parity official``, as data.

One table, kept here once: ``docs/evaluation.md`` and every dataset card render it (a test keeps
the docs copy equal to :func:`render_markdown`). Each row: the metric, the class of input where
the two modes differ, what the official code returns (or does), what the default returns, and
why the default differs. Rows are hand-derived from the official code; the tests in
``tests/test_eval_parity.py`` check each of them in both modes.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable


@dataclass(frozen=True)
class Deviation:
    metric: str
    input: str
    official: str
    default: str
    why: str


D = Deviation
DEVIATIONS: tuple[Deviation, ...] = (
    D("*", "input on which the official code raises (crashes the official run)", "no score (the run stops); "
      "parity mode returns 0 and records the exception in `extra.official_crash`", "a score from the fixed rule",
      "one bad prediction must not stop an evaluation; 0 is what ReadBench's own runner gives a crash"),
    D("sub_em, binary_acc, mc_acc, cls_acc, count_acc, rouge_l, docqa, summ_judge", "any output: what is "
      "scored", "the runner's text, the loader's system_template + the output (`eval.py` L73-74, `eval_api.py` "
      "L91-92, `eval_api_batch.py` L83-84, at 26197d2 and 22b9f27), before parsing and before every raw-text "
      "score: the prepended prefix is the first one, so a chain of thought's own `Answer: Paris` is not what "
      "`parse_output` keeps (`Let me think. Answer: Paris` parses to the whole output; v1.0: its first line) and "
      "a repeated prefix is dropped once only (`Answer: Answer: Paris` -> `Answer: Paris`); the prefix's word "
      "counts in raw scores (`Summary:` + `of the case`: ROUGE-L 1 against `summary of the case`; `label:` + "
      "`7 - example 2` reads label 7; `Answer:` + `Because ...` reads choice B)", "the output as the model "
      "wrote it: the raw output and the text after its own first prefix", "the prefix is the prompt's, not "
      "the model's: prepending it hides a chain of thought's final answer behind the prompt's prefix and "
      "lets the prompt's word score"),
    D("sub_em, mc_acc, cls_acc, count_acc, rouge_l", "answer prefix", "only the task's own prefix "
      "(`Answer:`, `label:` for ICL, `Summary:` for summaries) is parsed", "any of the three prefixes",
      "chat models mix prefixes; scoring the raw output too keeps the max, so this only adds credit"),
    D("sub_em", "gold that normalises to nothing (`\"\"`, `\" \"`, `the`, `.`)", "1 for any prediction",
      "the gold is ignored", "an empty gold is a substring of everything"),
    D("binary_acc", "output with no yes/no (a bare `1` or `0` too: the runner scores `Answer:1`, which "
      "`extract_binary_label`'s `isdigit()` does not read)", "a default label cycling 0,1,1,0 over the examples "
      "in order", "0", "the official score of a non-answer depends on the example's position"),
    D("count_acc", "non-integers in the list (`[2.5]`, `[true]`)", "`int()` per item: 2.5 -> 2, true -> 1",
      "dropped", "truncation turns wrong counts right"),
    D("count_acc", "a malformed last list after a good one (`[1, 2] [3,]`)", "every number in the text "
      "([1, 2, 3])", "the last well-formed list ([1, 2])", "the model's list is the well-formed one"),
    D("count_acc", "no count (`[]`, `none`, empty) against a gold whose sum is 0", "1 (sum 0 == 0)", "0",
      "giving no answer is not counting"),
    D("count_acc", "negative numbers outside brackets (`-1`, `I count -1`)", "the sign is dropped (1): only the "
      "last fallback, every `\\d+` in the text, reads them; inside brackets (`[-1]`) the sign is kept", "-1 in "
      "both forms", "`\\d+` drops the sign"),
    D("mc_acc", "a word right after `Answer:`: the output's first word (`Because ...`, `I think C`: the "
      "runner scores `Answer:Because ...`) or one after the model's own `Answer:`", "its first letter if A-J "
      "(B; I; and `Answer: ...` itself reads as A)", "needs a standalone letter",
      "no word boundary in `[aA]nswer:\\s*([A-J])`"),
    D("mc_acc", "`Answer: (B) since A is wrong`", "the parenthesis blocks the model's `Answer:`; the raw text "
      "reads the `A` of `Answer` after the prepended prefix, the parsed text its last standalone letter (A)",
      "B", "the parenthesised form is a common answer style"),
    D("cls_acc", "number glued to letters (`class3`, `7th`) and nothing else", "that number (first digit run)",
      "0", "the first-number fallback reads numbers that are not labels"),
    D("rouge_l", "rougeLsum (reported in `extra`)", "max over raw/parsed output taken per rouge type",
      "rougeLsum of the candidate with the best rougeL", "both numbers describe one summary"),
    D("docqa", "output with text before its answer (`Let me think. Answer: Paris`)", "only `parse_output`'s "
      "text is scored, which on the runner's `Answer:` + output is the whole output (v1.0: its first line); no "
      "raw-text score beside it", "max of the raw output and the text after the model's own first prefix "
      "(the v1.1 judge: it reads the text after the model's own first prefix only)",
      "as every other MMLongBench metric does"),
    D("docqa", "Integer or Float gold that is not a number (`ten`)", "`float(gt)` raises (0 in parity mode)",
      "scored by the String rules", "a mislabelled format should not void a question"),
    D("docqa", "List gold that is not a list literal (`paris`)", "`json.loads` raises (0 in parity mode)",
      "scored as a one-item list", "a single answer is a list of one"),
    D("docqa", "several gold answers", "only `answers[0]` is scored", "the best over all golds (the rules; "
      "the v1.1 judge is sent `answers[0]` in both modes)",
      "every gold is a right answer"),
    D("docqa", "unknown `answer_format`", "KeyError (0 in parity mode)", "String rules",
      "a format spelling should not void a question"),
    D("sub_em, mc_acc, cls_acc, count_acc, rouge_l, docqa", "`--protocol v1.0` output that goes on after a "
      "newline (`Let me think.\nAnswer: Paris`, `Answer:\nParis`)", "utils.py @26197d2 `parse_output` of the "
      "runner's text reads the output's first line only (`Let me think.`; `\"\"`)", "the parsed candidate is everything after the "
      "prefix in both protocols (v1.1's reading), scored beside the raw output", "the answer is the model's "
      "whatever line it starts on"),
    D("sub_em, mc_acc, cls_acc, count_acc, rouge_l, docqa, summ_judge", "output whose parsed answer is empty (`\"\"`, "
      "spaces, the prefix alone; under v1.0 also an output starting with a newline)", "left out of every average (`eval_api.py`, "
      "`eval_api_batch.py` at 26197d2 and 22b9f27; the local-model `eval.py` counts it; `eval_gpt4_summ.py` "
      "judges only the saved results, which leave it out, so it is never sent to the judge); the report gives "
      "`left_out`", "counted, scoring 0", "saying nothing is a wrong answer; leaving it out inflates the mean"),
    D("docqa", "`--protocol v1.1` without a judge (`--extractor none`, no endpoint)", "the run stops (`LLM "
      "Judge Key is missing`)", "the rule-based score (`eval_docqa_score`), in both modes; the report's "
      "`scorer` and `note` say so", "a score without a judge is still useful when it says what it is"),
    D("docqa", "v1.1 judge score outside the 0/1 rubric (`[Score]: 3 points`, `{\"answer_score\": \"1\"}`)",
      "averaged as given (3); a non-number stops the run at `np.mean` (0 in parity mode)", "a number "
      "clipped to [0, 1]; a number in a string read; anything else 0", "the rubric has two levels"),
    D("docqa", "v1.1 list judge with `student_answer_count` 0 (or not a number) and `covered_count` > 0",
      "ZeroDivisionError / TypeError: the run stops (0 in parity mode)", "0; counts written as strings "
      "read as numbers", "a judge slip must not stop an evaluation"),
    D("mmlongbench_doc", "units (`12 miles` vs `12`)", "kept (its `rstrip` result is discarded): ANLS < 1",
      "mile(s)/million stripped: 1", "the official code meant to strip them"),
    D("mmlongbench_doc, longdocurl", "ANLS length with case-expanding letters (`Groß`)", "`max(len(g.upper()), "
      "len(p.upper()))`", "`max(len(g), len(p))`", "the distance is over the original strings"),
    D("mmlongbench_doc", "List gold `[]` and prediction `[]`", "IndexError: 0", "1",
      "an empty list is a right answer to an empty list"),
    D("mmlongbench_doc", "malformed list prediction (`[1, 2`)", "`eval` raises: 0", "read as one item",
      "a near-list still says something"),
    D("mmlongbench_doc", "list prediction that is an expression, not a literal (`[1]+[2]`)", "`eval` runs it",
      "read as one item; parity mode: 0", "prediction text is never executed"),
    D("mmlongbench_doc, longdocurl", "Int gold `\"\"` with a non-number prediction", "1 (`gt == \"\"` after the "
      "failed conversion)", "0", "an accident of the bare except"),
    D("longdocurl", "units (`12 miles` vs `12`)", "kept (MMLongBench-Doc's `get_clean_string`)",
      "stripped", "as mmlongbench_doc"),
    D("mmneedle", "one needle, `-1, -1, -1` or other spellings of \"no needle\"", "only the exact `-1` "
      "means no needle", "any all-minus-one answer", "the model said there is none"),
    D("mmneedle", "formatting (`2,1,3`, `(2, 1, 3)`, `Answer: 2, 1, 3`)", "exact string after "
      "newline/period stripping: 0", "numbers read: 1", "the position is what is measured"),
    D("mmneedle", "numbers after the third of a needle (`2, 1, 3, 4`)", "exact string: 0 (the index still "
      "counts)", "the first three numbers are compared: 1", "image, row and column are what is asked; a stray "
      "number does not move the needle"),
    D("mmneedle", "negative gold (both modes)", "official golds spell it `0, r, c`", "this project's "
      "gold is the paper's `-1`; both modes treat `-1` and index 0 as negative", "the gold spelling is a "
      "build option, not a scoring rule"),
    D("readbench_mc", "several `answer is X` (`the answer is (A) ... the answer is (C)`) and no `answer:`",
      "the first (A)", "the last (C)", "a model that corrects itself ends with its answer"),
    D("readbench_mc", "no letter found", "a random letter (unseeded `random.choice`); parity mode seeds it "
      "by example id", "0", "a guess is not an answer and must be reproducible"),
    D("readbench_mc", "`Answer:` followed by letters (`Answer: BF`, `Answer: Because`)", "its first letter "
      "(B)", "needs a standalone letter", "no word boundary in `.*[Aa]nswer:\\s*([A-J])`"),
    D("readbench_mc", "lowercase standalone letter (`a`, `the answer is c`)", "read as a letter "
      "(IGNORECASE)", "capitals only, not followed by a lowercase word", "the article `a` is not option A"),
    D("readbench_mc", "a capital A-K in the last 10 characters (`... is OK`)", "that letter (K included)",
      "0", "letters inside words are not answers"),
    D("babilong", "labels inside other words (`no` in `north`, `one` in `someone`)", "substring matches "
      "count", "whole words only", "substrings find labels that are not there"),
    D("babilong", "`none` in the output", "`none` is never dropped as a question label, and when `none` "
      "is found `one` is dropped", "`none` is dropped when the question names it; `one` only counts as "
      "the word `one`", "labels are whole words, so `none` does not contain `one`; a label the question names "
      "is not an answer"),
    D("babilong", "comma gold with spaces (`apple, milk`)", "parts split on `,` unstripped (` milk` is no "
      "label): 0", "parts stripped: 1", "the spaces are formatting of the gold"),
    D("longbench_f1", "subsets trec, triviaqa, samsum, lsht (exact names)", "F1 on the first line only "
      "(leading newlines skipped)", "F1 on the whole output", "an answer on a later line is still the "
      "model's answer"),
    D("longbench_f1", "output with an `Answer:` prefix", "F1 on the raw output only",
      "best of raw and after-prefix F1", "as MMLongBench's metrics do"),
    D("summ_judge", "judge reply with no parseable JSON (or missing keys), or no key points", "the example "
      "is left out of "
      "the averages", "scores 0 and counts", "leaving failures out inflates the mean"),
    D("summ_judge", "judge JSON with numbers as strings (`{\"recall\": \"3\"}`)", "`\"3\" / n` raises: the "
      "example is left out of the averages", "read as numbers", "the judge's value is the same number"),
    D("summ_judge", "judge reply whose last `{...}` is not JSON", "only the last object, then a ```json "
      "fence", "each object from the last back", "an earlier valid object is still the judge's verdict"),
    D("summ_judge", "a `Summary:` the model writes itself (`Summary: x`, `\" Summary: x\"`)", "kept: "
      "`eval_gpt4_summ.py` L348-349 drops the 8 characters of the runner's prepended `Summary:` only, then "
      "strips, so the judge reads `Summary: x`", "the model's own leading `Summary:` dropped after stripping: "
      "the judge reads `x`", "a repeated prefix is formatting, not part of the summary"),
    D("memlens_judge", "a reference answer released as a number (`7`, `2.5`; `0` does not raise)",
      "`sub_em` raises (`parse_utils.py` L91-93 @fd4c8d7: `s.lower()`) and `eval_api.py` drops the item "
      "(L251-255): left out of every average, rule metrics and judge alike; the report gives `left_out`",
      "scored against the number's text (`7`), by the judge and the rules", "a number is a valid reference; "
      "the drop is a crash of the official scorer, not a rule"),
    D("memlens_judge", "a reply that used 2048 generated tokens (the prediction line's `generated_tokens`)",
      "`compute_metrics` (`parse_utils.py` L341-342 @fd4c8d7) scores it as \"\" for SubEM, F1 and the refusal "
      "check (its `output_len` reached `--generation_max_length`); the judge reads the reply", "the rule metrics "
      "read the reply as written", "a reply cut at the cap may still hold the answer; the judge, the paper's "
      "score, reads it in both"),
    D("lvb_mc", "any", "no official scorer in the pinned LongVideoBench code", "same in both modes "
      "(`--random-fallback` adds a seeded random letter)", "nothing to reproduce"),
)


def rows_for(metrics: Iterable[str] | None = None) -> list[Deviation]:
    """The rows that concern ``metrics`` (all rows for None; "*" rows always)."""
    if metrics is None:
        return list(DEVIATIONS)
    wanted = set(metrics)
    return [d for d in DEVIATIONS
            if d.metric == "*" or wanted & {m.strip() for m in d.metric.split(",")}]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(metrics: Iterable[str] | None = None) -> str:
    """The table in Markdown (what docs/evaluation.md and the cards show)."""
    lines = ["| metric | input | official | default | why |", "|---|---|---|---|---|"]
    lines += [f"| `{_cell(d.metric)}` | {_cell(d.input)} | {_cell(d.official)} | {_cell(d.default)} | {_cell(d.why)} |"
              for d in rows_for(metrics)]
    return "\n".join(lines)


if __name__ == "__main__":  # python -m mmlbdata.official.deviations > the table for docs/evaluation.md
    print(render_markdown())
