"""MemLens's official LLM judge (``llm_judge.py``, ``judge_prompts/``, ``parse_utils.py`` of xrenaf/MEMLENS @fd4c8d7).

The paper's scores are this judge's: one 0/1 point per answer, averaged per ability. What happens
around the judge call is reproduced here, written from reading that code:

* the prompts are **not** in this project: they are read at run time from the official
  ``judge_prompts/`` folder at the pinned commit, fetched like any source (``mmlb fetch
  memlens_judge_prompts``; registry key :data:`SOURCE_KEY`), parsed with :mod:`ast`, never executed:
  ``base.py``'s template, each ability file's ``CRITERIA`` / ``EXAMPLES`` tables, and from
  ``__init__.py``'s ``build_judge_prompt`` the three "current case" f-strings (knowledge update
  with its old answer, answer refusal, the rest) with the task key each is chosen for, and the
  closing text; the files' md5 go into the report;
* the task key (``get_task_key``): ability and subtype -> one of ten keys, :func:`task_key`;
* the answer the judge sees: the runner's output through ``parse_model_output`` (eval.py's
  post-processing, then again in ``normalize_for_judge``), tail-truncated past 6000 characters;
  more than 500 words after that scores 0 without a judge call (``PARSED_WORDS_THRESHOLD``);
* one user message, ``temperature=0``, and on the vLLM judge path (the default, the README's)
  ``max_tokens=2048`` and ``chat_template_kwargs={"enable_thinking": false}`` in the request body
  (``extra_body``), which turns a thinking judge model's reasoning off; on the API path
  (``llm_judge.py --api_model``) ``max_completion_tokens=256`` and nothing else;
* the reply read by ``_parse_judge_response``: ``"answer_score": N``, else ``deserves N point``,
  else ``[Score]: N``, clamped to 1; nothing readable (or a failed call) is 0.

Not reproduced: ``normalize_for_judge``'s degenerate-output diagnostics (hedging counts, 5-gram
ratio), which the official report prints but which change no score.
"""
from __future__ import annotations

import ast
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

SOURCE_KEY = "memlens_judge_prompts"
FOLDER = "judge_prompts"
#: judge_prompts/<file>.py holding each ability's CRITERIA and EXAMPLES (the index file merges them)
ABILITY_FILES = ("information_extraction", "knowledge_update", "temporal_reasoning", "multi_session_reasoning",
                 "answer_refusal")
BASE_FILE, BASE_NAME, INDEX_FILE, BUILDER = "base.py", "QA_BENCHMARK_JUDGE_PROMPT", "__init__.py", "build_judge_prompt"
#: llm_judge.py _judge_one (L154-167 @fd4c8d7), the vLLM judge (the README's): temperature 0.0,
#: max_tokens 2048, and in the body (the openai client's extra_body) the chat template's thinking off
JUDGE_PARAMS = {"max_tokens": 2048, "temperature": 0.0,
                "extra_body": {"chat_template_kwargs": {"enable_thinking": False}}}
#: the same call with --api_model (API mode): max_completion_tokens 256, no extra_body
API_JUDGE_PARAMS = {"max_tokens": None, "temperature": 0.0, "max_completion_tokens": 256}
#: --memlens-judge-path: which of the two official requests the judge is sent
JUDGE_PATHS = {"vllm": JUDGE_PARAMS, "api": API_JUDGE_PARAMS}
#: llm_judge.py evaluate: PARSED_WORDS_THRESHOLD
MAX_ANSWER_WORDS = 500
#: parse_utils.py normalize_for_judge: TAIL_CHAR_LIMIT, TAIL_FRACTION, MIN_LENGTH_FOR_TRUNCATION, the marker
TAIL_CHARS, TAIL_FRACTION, MIN_TRUNCATE_CHARS = 6000, 0.3, 3000
TRUNCATED_MARK = "[...truncated earlier reasoning...]\n"

#: get_task_key: (question_type, question_subtype) -> task key; then each type's key for any other subtype
_SUBTYPE_KEYS = {
    ("multi_session_reasoning", "arithmetic"): "MSR_Arithmetic",
    ("multi_session_reasoning", "counting"): "MSR_Counting",
    ("temporal_reasoning", "duration_comparison"): "TR_DurationComparison",
    ("temporal_reasoning", "order_ranking"): "TR_OrderRanking",
    ("temporal_reasoning", "temporal_info_extraction"): "TR_DateExtraction",
    ("information_extraction", "previnfo"): "IE_PreviousInfo",
}
_TYPE_KEYS = {"multi_session_reasoning": "MSR_Counting", "temporal_reasoning": "TR_DateExtraction",
              "knowledge_update": "KU_KnowledgeUpdate", "answer_refusal": "AR_AnswerRefusal",
              "information_extraction": "IE_Entity"}


class JudgePromptsError(ValueError):
    """The judge prompt folder is missing or not in the official files' form (the message names it)."""


def task_key(question_type: str, question_subtype: str, reference: str) -> str:
    """``get_task_key``: entity resolution is a yes/no question when the reference is ``Yes``/``No``,
    else counted; an unknown ability is scored as entity extraction."""
    if (question_type, question_subtype) == ("multi_session_reasoning", "entity_resolution"):
        return "MSR_YesNo" if reference.strip() in ("Yes", "No") else "MSR_Counting"
    return _SUBTYPE_KEYS.get((question_type, question_subtype)) or _TYPE_KEYS.get(question_type, "IE_Entity")


def _fstring_template(node: ast.JoinedStr) -> str:
    """An f-string as a ``str.format`` template (its literal braces doubled)."""
    parts = []
    for value in node.values:
        if isinstance(value, ast.Constant):
            parts.append(str(value.value).replace("{", "{{").replace("}", "}}"))
        elif isinstance(value, ast.FormattedValue) and isinstance(value.value, ast.Name):
            parts.append("{" + value.value.id + "}")
        else:
            raise JudgePromptsError(f"an f-string field that is not a plain name: {ast.dump(value)[:80]}")
    return "".join(parts)


def _compared_keys(test: ast.AST) -> set[str]:
    return {c.value for node in ast.walk(test) if isinstance(node, ast.Compare)
            for c in [node.left, *node.comparators] if isinstance(c, ast.Constant) and isinstance(c.value, str)}


@dataclass(frozen=True)
class JudgePrompts:
    """The official judge texts: the base template, each task key's criteria and examples, the
    current-case templates by task key (``""``: every other key) and the closing text."""

    base: str
    criteria: dict[str, str]
    examples: dict[str, str]
    cases: dict[str, str]
    closing: str
    origin: dict[str, Any] = field(default_factory=dict)

    def request(self, key: str, question: str, reference: str, prediction: str, old_answer: str = "") -> str:
        """``build_judge_prompt``: the base with the key's criteria and examples, the case, the closing.
        The knowledge-update case (with the old answer) only when there is an old answer."""
        head = self.base.format(task_criteria=self.criteria.get(key, ""), examples=self.examples.get(key, ""))
        case = self.cases.get(key)
        if case is None or ("{old_answer}" in case and not old_answer):
            case = self.cases[""]
        return head + case.format(question=question, reference=reference, prediction=prediction,
                                  old_answer=old_answer) + self.closing


def prompt_folder(path: str | Path) -> Path:
    """The ``judge_prompts/`` folder: itself, or under the folder ``mmlb fetch`` filled (DEST or DEST/KEY)."""
    path = Path(path)
    for candidate in (path, path / FOLDER, path / SOURCE_KEY / FOLDER):
        if (candidate / BASE_FILE).is_file() and (candidate / INDEX_FILE).is_file():
            return candidate
    raise JudgePromptsError(f"{path}: no {FOLDER}/ with {BASE_FILE} and {INDEX_FILE} there; get it with `mmlb fetch "
                            f"{SOURCE_KEY} --dest DIR` and pass --memlens-judge-prompts DIR/{SOURCE_KEY}")


def _parse(file: Path) -> ast.Module:
    try:
        return ast.parse(file.read_bytes().decode("utf-8"), filename=str(file))
    except (OSError, SyntaxError, ValueError) as err:
        raise JudgePromptsError(f"{file}: not a readable Python file ({type(err).__name__}: {err})") from err


def _assigned(tree: ast.Module, name: str, file: Path) -> Any:
    """The literal value of the top-level ``name = <literal>`` (read with literal_eval, never run)."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            try:
                return ast.literal_eval(node.value)
            except ValueError as err:
                raise JudgePromptsError(f"{file}: {name} is not a literal ({err})") from err
    raise JudgePromptsError(f"{file}: no assignment to {name}")


def _cases(tree: ast.Module, file: Path) -> tuple[dict[str, str], str]:
    """``build_judge_prompt``'s current-case f-strings by the task key their branch tests, and the
    text its return appends."""
    function = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == BUILDER), None)
    if function is None:
        raise JudgePromptsError(f"{file}: no function {BUILDER}")
    cases: dict[str, str] = {}
    for node in ast.walk(function):
        if isinstance(node, ast.If):
            for key in _compared_keys(node.test):
                cases.setdefault(key, _branch_template(node.body, file))
            if node.orelse and not isinstance(node.orelse[0], ast.If):
                cases[""] = _branch_template(node.orelse, file)
    closing = [n.value for r in ast.walk(function) if isinstance(r, ast.Return)
               for n in ast.walk(r) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    if "" not in cases or len(closing) != 1:
        raise JudgePromptsError(f"{file}: {BUILDER} is not in the official form (cases {sorted(cases)})")
    return cases, closing[0]


def _branch_template(body: list[ast.stmt], file: Path) -> str:
    strings = [n for stmt in body for n in ast.walk(stmt) if isinstance(n, ast.JoinedStr)]
    if len(strings) != 1:
        raise JudgePromptsError(f"{file}: a branch of {BUILDER} without exactly one f-string")
    return _fstring_template(strings[0])


def load_prompts(path: str | Path) -> JudgePrompts:
    """The official judge texts from ``judge_prompts/`` (see the module docstring); ``origin`` records
    the folder, each file's md5 and whether all match the pinned official files."""
    folder = prompt_folder(path)
    base = _assigned(_parse(folder / BASE_FILE), BASE_NAME, folder / BASE_FILE)
    criteria, examples = {}, {}
    for name in ABILITY_FILES:
        file = folder / f"{name}.py"
        tree = _parse(file)
        criteria.update(_assigned(tree, "CRITERIA", file))
        examples.update(_assigned(tree, "EXAMPLES", file))
    cases, closing = _cases(_parse(folder / INDEX_FILE), folder / INDEX_FILE)
    try:
        base.format(task_criteria="", examples="")
        for case in cases.values():
            case.format(question="", reference="", prediction="", old_answer="")
    except (KeyError, IndexError, ValueError) as err:
        raise JudgePromptsError(f"{folder}: a template with unknown fields ({type(err).__name__}: {err})") from err
    return JudgePrompts(base, criteria, examples, cases, closing, _origin(folder))


def _origin(folder: Path) -> dict[str, Any]:
    from mmlbdata.sources.fetch import load_registry

    parts = [p for p in load_registry()[SOURCE_KEY].parts if p.url]
    pinned = {Path(p.url).name: p.md5 for p in parts}
    md5 = {name: hashlib.md5((folder / name).read_bytes()).hexdigest() for name in sorted(pinned)
           if (folder / name).is_file()}
    commit = re.search(r"/([0-9a-f]{40})/", parts[0].url)
    return {"folder": str(folder), "repository": "xrenaf/MEMLENS", "commit": commit.group(1) if commit else None,
            "md5": md5, "official": md5 == pinned}


# -- the answer the judge sees (parse_utils.py) ---------------------------------------------------------

_SPECIAL = re.compile(r"<\|[^>]*\|>")
_BOX = re.compile(r"<\|begin_of_box\|>(.*?)<\|end_of_box\|>", re.DOTALL)


def parse_model_output(text: Optional[str]) -> str:
    """``parse_model_output``: the text after ``</think>``, special ``<|...|>`` tokens removed, a
    content-filter marker dropped, stripped."""
    if not text:
        return ""
    if "</think>" in text:
        text = text.split("</think>", 1)[1]
    text = _SPECIAL.sub("", text)
    text = _BOX.sub(r"\1", text).replace("<|begin_of_box|>", "").replace("<|end_of_box|>", "")
    return text.replace("[CONTENT_FILTER_REJECTED]", "").strip()


def judge_text(prediction: str) -> tuple[str, bool]:
    """``normalize_for_judge``'s text: parsed again, the last 30% kept behind a marker when longer
    than 6000 characters; and whether it was cut."""
    if not prediction:
        return "", False
    text = parse_model_output(prediction)
    if len(text) > MIN_TRUNCATE_CHARS and len(text) > TAIL_CHARS:
        return TRUNCATED_MARK + text[int(len(text) * (1 - TAIL_FRACTION)):], True
    return text, False


_REPLY_PATTERNS = (re.compile(r'"answer_score"\s*:\s*(\d+)'), re.compile(r"deserves\s+(\d+)\s+point", re.IGNORECASE),
                   re.compile(r"\[Score\]\s*:\s*(\d+)"))


def reply_score(reply: Optional[str]) -> tuple[int, str]:
    """``_parse_judge_response``: the first of the three patterns that matches, clamped to 1; 0 when
    none does (or the reply is empty, or the call failed: None). Returns which pattern read it."""
    if not reply:
        return 0, "none"
    for name, pattern in zip(("json", "deserves", "score line"), _REPLY_PATTERNS):
        hit = pattern.search(reply)
        if hit:
            try:
                return min(int(hit.group(1)), 1), name
            except ValueError:  # past Python's digit limit: the official call raises, is retried, scores 0
                return 0, "none"
    return 0, "none"
