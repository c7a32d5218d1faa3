"""MMLongBench v1.1's LLM judge for document QA (``mmlongdoc``, ``longdocurl``, ``slidevqa``).

Since commit 476fe86 the official ``data.py`` scores document QA with an LLM judge by default
(``--docqa_llm_judge True``): ``utils.py`` ``eval_docqa_score_with_llm_judge`` (Integer, Float,
String and None answers: a 0/1 point score) and ``eval_docqa_list_score_with_llm_judge`` (List
answers: an F1 from the judge's ``student_answer_count`` and ``covered_count``). This module
reproduces what happens around the judge call, written from reading that code:

* the prompts are **not** in this project: they are read at run time from the official
  ``utils_prompt.py`` at the pinned commit, fetched like any source (``mmlb fetch
  mmlb_judge_prompts``; registry key :data:`SOURCE_KEY`), parsed with :mod:`ast` (never executed);
  its origin (repository, commit, md5) goes into the eval report;
* a request is ``<JUDGE_PROMPT> + <CASE_PROMPT>.format(question=, reference=, prediction=)``, one
  user message, ``max_tokens=256``, no temperature (the API's default), as the official call;
* reply parsing (``parse_judge_output``, ``parse_list_judge_output``, ``robust_json_extraction``),
  the list F1 and the fallbacks (an unparseable reply scores 0) follow the official lines.
"""
from __future__ import annotations

import ast
import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Union

SOURCE_KEY = "mmlb_judge_prompts"
PROMPT_FILE = "utils_prompt.py"
#: the module-level strings of utils_prompt.py that the judge functions of utils.py use
SINGLE, SINGLE_CASE = "DOC_QA_JUDGE_PROMPT", "CURRENT_CASE_PROMPT"
LIST, LIST_CASE = "DOC_QA_LIST_F1_JUDGE_PROMPT", "CURRENT_LIST_CASE_PROMPT"
#: utils.py ``eval_docqa_score_with_llm_judge``: ``max_tokens=256`` and no temperature
JUDGE_PARAMS = {"max_tokens": 256, "temperature": None}
LIST_KEYS = ("student_answer_count", "covered_count")


class JudgePromptsError(ValueError):
    """The judge prompt file is missing or not in utils_prompt.py's form (the message names it)."""


@dataclass(frozen=True)
class JudgePrompts:
    texts: dict[str, str]
    origin: dict[str, Any] = field(default_factory=dict)

    def request(self, question: str, reference: str, prediction: str, is_list: bool) -> str:
        """The judge prompt for one answer: the instructions, then the case filled in."""
        head, case = (LIST, LIST_CASE) if is_list else (SINGLE, SINGLE_CASE)
        return self.texts[head] + self.texts[case].format(question=question, reference=reference,
                                                          prediction=prediction)


def prompt_file(path: str | Path) -> Path:
    """``utils_prompt.py`` itself, or the folder ``mmlb fetch`` filled (DEST or DEST/KEY)."""
    path = Path(path)
    for candidate in (path, path / PROMPT_FILE, path / SOURCE_KEY / PROMPT_FILE):
        if candidate.is_file():
            return candidate
    raise JudgePromptsError(f"{path}: no {PROMPT_FILE} there; get it with `mmlb fetch {SOURCE_KEY} --dest DIR` "
                            f"and pass --judge-prompts DIR/{SOURCE_KEY}/{PROMPT_FILE}")


def pinned_origin() -> dict[str, Any]:
    """Where the registry says the official file comes from: repository, commit, md5, size."""
    from mmlbdata.sources.fetch import load_registry

    [part] = load_registry()[SOURCE_KEY].parts
    match = re.search(r"githubusercontent\.com/([^/]+/[^/]+)/([0-9a-f]{40})/", part.url or "")
    return {"repository": match.group(1) if match else None, "commit": match.group(2) if match else None,
            "url": part.url, "md5": part.md5, "size": part.size}


def load_prompts(path: str | Path) -> JudgePrompts:
    """The four judge strings of ``utils_prompt.py``, read from its syntax tree (top-level
    ``NAME = "..."`` assignments; the file is never executed). ``origin`` records the file, its
    md5 and whether that md5 is the pinned official file's."""
    file = prompt_file(path)
    data = file.read_bytes()
    try:
        tree = ast.parse(data.decode("utf-8"), filename=str(file))
    except (SyntaxError, ValueError) as err:  # ValueError: UnicodeDecodeError, NUL bytes
        raise JudgePromptsError(f"{file}: not a readable Python file ({type(err).__name__}: {err})") from err
    texts = {}
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):
            texts[node.targets[0].id] = node.value.value
    missing = [name for name in (SINGLE, SINGLE_CASE, LIST, LIST_CASE) if name not in texts]
    if missing:
        raise JudgePromptsError(f"{file}: no string assignment for {', '.join(missing)}")
    for name in (SINGLE_CASE, LIST_CASE):
        try:
            texts[name].format(question="", reference="", prediction="")
        except (KeyError, IndexError, ValueError) as err:
            raise JudgePromptsError(f"{file}: {name} is not a template of question/reference/prediction "
                                    f"({type(err).__name__}: {err})") from err
    pinned = pinned_origin()
    md5 = hashlib.md5(data).hexdigest()
    origin = {"file": str(file), "md5": md5, "repository": pinned["repository"], "commit": pinned["commit"],
              "official": md5 == pinned["md5"]}
    return JudgePrompts({k: texts[k] for k in (SINGLE, SINGLE_CASE, LIST, LIST_CASE)}, origin)


def prepare(metric_options: dict, protocol) -> Optional[dict]:
    """Load the judge prompts of ``metric_options["docqa"]`` once (in place) when the protocol
    judges document QA and a judge is configured; what the report records about the judge
    (model, the prompt file's origin), else None."""
    options = metric_options.get("docqa") or {}
    judge, prompts = options.get("judge"), options.get("judge_prompts")
    if not protocol.docqa_judge or judge is None or prompts is None:
        return None
    if not isinstance(prompts, JudgePrompts):
        prompts = load_prompts(prompts)
        metric_options["docqa"] = {**options, "judge_prompts": prompts}
    return {"model": getattr(judge, "model", None), "prompts": prompts.origin}


# -- reading a reply (utils.py @476fe86) -----------------------------------------------------------------

_JSON_MARKER = re.compile(r"\[JSON\]:.*?(\{)", re.DOTALL)
_SCORE = re.compile(r"\[Score\]:\s*(\d+)\s*points?")


def json_after_marker(text: Optional[str], keys) -> dict:
    """``robust_json_extraction``: the JSON value that starts at the first ``{`` after the first
    ``[JSON]:``; when there is none or it does not decode, each key's first ``"key": number``
    anywhere in the text, as a float (keys not found are absent)."""
    if not isinstance(text, str):
        return {}  # re.search(None) raises TypeError inside the official try blocks: {}
    match = _JSON_MARKER.search(text)
    if match:
        try:
            value, _end = json.JSONDecoder().raw_decode(text[match.start(1):])
            return value
        except (ValueError, RecursionError):
            pass
    found = {}
    for key in keys:
        hit = re.search(rf'"{re.escape(key)}"\s*:\s*(-?\d+(?:\.\d+)?)', text)
        if hit:
            found[key] = float(hit.group(1))
    return found


def single_score(reply: Optional[str]) -> tuple[Any, str]:
    """``eval_docqa_score_with_llm_judge`` after the call: ``[Score]: N point(s)`` as an int,
    else the JSON ``answer_score`` (whatever type it has), else 0.0; with which of the three it read
    ("score line", "json", "none")."""
    text = reply if isinstance(reply, str) else ""
    hit = _SCORE.search(text)
    if hit:
        try:
            return int(hit.group(1)), "score line"
        except ValueError:  # over Python's digit limit: the official try block leaves score None
            pass
    # the official code decodes the JSON of every reply but reads it only without a score line
    data = json_after_marker(reply, ["answer_score"])
    if isinstance(data, dict) and "answer_score" in data:
        return data["answer_score"], "json"
    return 0.0, "none"


def list_counts(reply: Optional[str]) -> Optional[dict]:
    """``parse_list_judge_output`` + ``cover_key``: the JSON object when it has both counts."""
    data = json_after_marker(reply, LIST_KEYS)
    return data if isinstance(data, dict) and all(k in data for k in LIST_KEYS) else None


def list_f1_official(counts: Optional[dict], num_gold: Union[int, Callable[[], int]]) -> float:
    """``eval_docqa_list_score_with_llm_judge``: 0 without both counts or when ``covered_count``
    is not positive; else F1 of recall = covered / gold items and precision = covered / the
    student's items, clipped to [0, 1]. Raises where the official code raises (no gold items,
    zero student items with covered > 0, a count that is not a number). ``num_gold`` may be a
    function: it is then called only past those two checks, as utils.py @22b9f27 L487 reads the
    gold (``len(json.loads(gt))``) only there, so a gold it cannot read raises nothing before."""
    if counts is None:
        return 0.0
    student, covered = counts["student_answer_count"], counts["covered_count"]
    if not covered > 0:
        return 0.0
    recall = covered / (num_gold() if callable(num_gold) else num_gold)
    precision = covered / student
    return max(min((2 * recall * precision) / (recall + precision), 1.0), 0.0)


def _number(value: Any) -> Optional[float]:
    if isinstance(value, (int, float)):  # bool included (True -> 1.0)
        return float(value)
    try:
        return float(str(value).strip())
    except ValueError:
        return None


def list_f1(counts: Optional[dict], num_gold: int) -> float:
    """The default: the official F1 where it is defined; 0 where the official code raises
    (counts that are not numbers, zero or negative item counts)."""
    if counts is None:
        return 0.0
    student, covered = _number(counts["student_answer_count"]), _number(counts["covered_count"])
    if student is None or covered is None or covered <= 0 or student <= 0 or num_gold <= 0:
        return 0.0
    recall, precision = covered / num_gold, covered / student
    return max(min(2 * recall * precision / (recall + precision), 1.0), 0.0)


def clamp_score(value: Any) -> float:
    """The default reading of a single-answer score: a number in [0, 1] (the rubric has 0 and 1
    point); anything else 0."""
    number = _number(value)
    if number is None or number != number:
        return 0.0
    return max(0.0, min(1.0, number))


def official_score(value: Any) -> float:
    """The official score as averaged: a number passes through (``np.mean`` of the list);
    anything else stops the official run when the metrics are averaged."""
    if isinstance(value, (int, float)):
        return float(value)
    raise TypeError(f"judge score {value!r} is not a number (np.mean fails)")
