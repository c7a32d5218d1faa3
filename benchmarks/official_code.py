"""The benchmarks' own scoring code, run unchanged from fetched mirrors (for side-by-side timing).

Nothing of the official code lives in this repository: each function is read at its pinned commit
from a bare mirror (``git show COMMIT:FILE``, the mirrors the ``fetch`` tool writes under
``$MMLB_MIRRORS``, else the ``.mirror`` folder nearest above this checkout) and executed as written. Three ways in, by what the
file allows:

* ``module``: the whole file executed as a module (MMLongBench ``utils.py``/``data.py``,
  MMLongBench-Doc ``eval_score.py``, ReadBench ``longbench_metrics.py`` with its Chinese/ROUGE
  imports stubbed: the English QA F1 never calls them);
* ``lift``: selected top-level definitions only (ReadBench ``run_eval.py`` imports API clients);
* ``inner``: a function nested in a loader (``data.py``'s ``vh_post_process`` and
  ``docqa_post_process`` close over the loader's ``default_answer_generator``/``system_template``),
  compiled at module level with those free names given;
* ``loop``: MMNeedle's ``evaluate.py``/``evaluate_multi.py`` score inside ``main()``, which reads
  result files and plots; the statements from the accumulators to the end of the per-response
  loop are compiled as a function of ``responses`` (and the file name's fields).
"""
from __future__ import annotations

import ast
import os
import subprocess
import sys
import types
from functools import lru_cache, partial
from pathlib import Path


def _mirrors() -> Path:
    """``$MMLB_MIRRORS``, else the nearest ``.mirror`` folder above this checkout (where the fetch
    tool puts repositories), else ``.mirror`` (then every official path is reported Missing)."""
    if os.environ.get("MMLB_MIRRORS"):
        return Path(os.environ["MMLB_MIRRORS"])
    return next((f / ".mirror" for f in Path(__file__).resolve().parents if (f / ".mirror").is_dir()), Path(".mirror"))


MIRRORS = _mirrors()

MMLONGBENCH = ("EdinburghNLP/MMLongBench", "22b9f27")
MMLONGBENCH_DOC = ("mayubo2333/MMLongBench-Doc", "d73f0dc0")
MMNEEDLE = ("Wang-ML-Lab/multimodal-needle-in-a-haystack", "debcaae1")
READBENCH = ("AnswerDotAI/readbench", "b6546cb")


class Missing(RuntimeError):
    """An official repository is not mirrored here (fetch it first)."""


def source(repo_commit: tuple[str, str], path: str) -> str:
    repo, commit = repo_commit
    git_dir = MIRRORS / repo.replace("/", "+") / "repo"
    if not git_dir.is_dir():
        raise Missing(f"{repo} is not mirrored at {git_dir} (fetch github:{repo})")
    done = subprocess.run(["git", f"--git-dir={git_dir}", "show", f"{commit}:{path}"], capture_output=True, text=True)
    if done.returncode:
        raise Missing(f"{repo}@{commit}:{path}: {done.stderr.strip()}")
    return done.stdout


def module(name: str, text: str, filename: str) -> types.ModuleType:
    """``text`` executed as module ``name`` (registered in sys.modules for its importers)."""
    mod = types.ModuleType(name)
    mod.__file__ = filename
    sys.modules[name] = mod
    exec(compile(text, filename, "exec"), mod.__dict__)
    return mod


def lift(text: str, filename: str, names: set[str], namespace: dict) -> dict:
    """The top-level functions/assignments of ``text`` named in ``names``, executed in ``namespace``."""
    tree = ast.parse(text, filename)
    keep = [node for node in tree.body if _defines(node) & names]
    exec(compile(ast.Module(keep, []), filename, "exec"), namespace)
    return namespace


def _defines(node: ast.stmt) -> set[str]:
    if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return {t.id for t in targets if isinstance(t, ast.Name)}
    return set()


def inner(text: str, filename: str, outer: str, name: str, namespace: dict):
    """Function ``name`` defined inside top-level function ``outer``, compiled on its own in
    ``namespace`` (which supplies the names it closed over)."""
    tree = ast.parse(text, filename)
    [outer_def] = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == outer]
    [fn] = [n for n in outer_def.body if isinstance(n, ast.FunctionDef) and n.name == name]
    exec(compile(ast.Module([fn], []), filename, "exec"), namespace)
    return namespace[name]


def loop(text: str, filename: str, first: str, results: list[str], namespace: dict):
    """``main()``'s statements from the assignment to ``first`` to the end of the loop over
    ``responses`` (inside its loop over result files), as ``f(responses, SEQUENCE_LENGTH, N_ROW)``
    returning the lists named in ``results``."""
    tree = ast.parse(text, filename)
    [main] = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "main"]
    files = next(n for n in main.body if isinstance(n, ast.For))  # the loop over result files
    body = files.body
    start = next(i for i, n in enumerate(body) if _defines(n) == {first})
    end = next(i for i, n in enumerate(body) if isinstance(n, ast.For) and i > start)
    ret = ast.Return(ast.Tuple([ast.Name(r, ast.Load()) for r in results], ast.Load()))
    args = ast.arguments(posonlyargs=[], args=[ast.arg(a) for a in ("responses", "SEQUENCE_LENGTH", "N_ROW")],
                         kwonlyargs=[], kw_defaults=[], defaults=[])
    fn = ast.FunctionDef("official_loop", args, body[start:end + 1] + [ret], [], None, type_params=[])
    exec(compile(ast.fix_missing_locations(ast.Module([fn], [])), filename, "exec"), namespace)
    return namespace["official_loop"]


@lru_cache(maxsize=None)
def mmlongbench():
    """``utils`` and ``data`` of MMLongBench at the pinned commit (torch, rouge_score, datasets
    imported as the files do)."""
    module("utils_prompt", source(MMLONGBENCH, "utils_prompt.py"), "MMLongBench/utils_prompt.py")
    judge = types.ModuleType("vlm_model.model_utils")  # the LLM judge's client: not on a rules path
    judge.call_api = None
    sys.modules.setdefault("vlm_model", types.ModuleType("vlm_model"))
    sys.modules.setdefault("vlm_model.model_utils", judge)
    utils = module("utils", source(MMLONGBENCH, "utils.py"), "MMLongBench/utils.py")
    data_text = source(MMLONGBENCH, "data.py")
    data = module("mmlb_official_data", data_text, "MMLongBench/data.py")
    return utils, data, data_text


def mmlb_post_process(kind: str):
    """A fresh ``post_process`` as the loader of ``kind`` returns it (what eval.py calls per example)."""
    utils, data, text = mmlongbench()
    if kind == "vh":
        ns = {**data.__dict__, "default_answer_generator": data.DefaultAnswerGenerator()}
        return inner(text, "MMLongBench/data.py", "load_visual_haystack", "vh_post_process", ns)
    if kind == "docqa":
        ns = {**data.__dict__, "system_template": "Answer:"}
        return inner(text, "MMLongBench/data.py", "load_doc_qa", "docqa_post_process", ns)
    metric, prefix = {"sub_em": ("sub_em", "Answer:"), "count": ("soft_acc", "Answer:"), "mc": ("mc_acc", "Answer:"),
                      "cls": ("cls_acc", "label:"), "rouge": ("rouge", "Summary:")}[kind]
    return partial(data.default_post_process, metrics=metric, prefix=prefix)


@lru_cache(maxsize=None)
def mmlongbench_doc():
    """MMLongBench-Doc's ``eval/eval_score.py`` (``eval_score``, ``eval_acc_and_f1``)."""
    return module("mmlb_official_eval_score", source(MMLONGBENCH_DOC, "eval/eval_score.py"),
                  "MMLongBench-Doc/eval_score.py")


def mmlongbench_doc_eval_score():
    return mmlongbench_doc().eval_score


@lru_cache(maxsize=None)
def mmneedle_loops():
    """(single-needle loop of evaluate.py, multi-needle loop of evaluate_multi.py)."""
    import json

    single_text = source(MMNEEDLE, "evaluate.py")
    multi_text = source(MMNEEDLE, "evaluate_multi.py")
    single = loop(single_text, "MMNeedle/evaluate.py", "index_match", ["index_match", "exact_match", "exist_match"],
                  {"json": json, "os": os})
    multi = loop(multi_text, "MMNeedle/evaluate_multi.py", "index_match", ["index_match", "exact_match", "exist_match"],
                 {"json": json, "os": os})
    return single, multi


@lru_cache(maxsize=None)
def readbench():
    """ReadBench's ``eval_mmlu``, ``eval_babi`` and ``eval_longbench`` (lifted from run_eval.py)."""
    import random
    import re

    for stub in ("jieba", "fuzzywuzzy", "rouge"):  # only its Chinese / ROUGE / code scorers use them
        sys.modules.setdefault(stub, types.ModuleType(stub))
    sys.modules["fuzzywuzzy"].fuzz = None
    sys.modules["rouge"].Rouge = None
    lbm = module("longbench_metrics", source(READBENCH, "longbench_metrics.py"), "readbench/longbench_metrics.py")
    names = {"ANSWER_RE", "LAST_LETTER_RE", "ANSWER_IS_RE", "ANSWER_COLON_RE", "_extract_answer_mmlu", "eval_mmlu",
             "TASK_LABELS", "babi_preprocess", "babi_preprocess_cot", "eval_babi", "eval_longbench"}
    ns = lift(source(READBENCH, "run_eval.py"), "readbench/run_eval.py", names,
              {"re": re, "random": random, "lbm": lbm, "__name__": "readbench_run_eval"})
    return ns["eval_mmlu"], ns["eval_babi"], ns["eval_longbench"]
