"""The official MemLens code (xrenaf/MEMLENS @fd4c8d7), checked out of the fetched repository at test
time and imported unchanged; only the model client (``openai``) is stubbed, unless a test asks for
the real one (``load(..., stub_openai=False)``: the judge's requests then reach a loopback server).

The repository is found at ``$MMLB_MEMLENS_REPO`` (a git directory), else where the ``fetch`` tool
puts it; tests that need it are skipped without it. Nothing of it is copied into the project.
"""
from __future__ import annotations

import importlib
import sys
import types
from pathlib import Path

from tests.mirrors import mirror_git, show_or_skip

COMMIT = "fd4c8d70538ee40758b4825372d46b717e6db346"
MIRROR = "xrenaf+MEMLENS"  # where the fetch tool puts it: .mirror/<owner+repo>/repo above the checkout
FILES = ("data.py", "utils.py", "parse_utils.py", "llm_judge.py", "judge_prompts/__init__.py",
         "judge_prompts/base.py", "judge_prompts/information_extraction.py", "judge_prompts/knowledge_update.py",
         "judge_prompts/temporal_reasoning.py", "judge_prompts/multi_session_reasoning.py",
         "judge_prompts/answer_refusal.py", "eval_api.py", "vlm_models/__init__.py", "vlm_models/model_utils.py")
MODULES = ("data", "utils", "parse_utils", "llm_judge", "judge_prompts", "eval_api", "vlm_models",
           "vlm_models.model_utils")


def _official(name: str) -> bool:
    return name in MODULES or name.startswith(("judge_prompts.", "vlm_models."))


def repo() -> Path | None:
    """The fetched repository's git directory, None when it is not here."""
    return mirror_git("MMLB_MEMLENS_REPO", MIRROR)


def checkout(dest: Path) -> Path:
    """The official files at :data:`COMMIT` written under ``dest`` (skips the test without the repo)."""
    for name in FILES:
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        (dest / name).write_bytes(show_or_skip("MMLB_MEMLENS_REPO", MIRROR, COMMIT, name))
    return dest


class StubOpenAI:
    """Stands in for ``openai.OpenAI`` in ``llm_judge``: ``create`` answers from ``reply(prompt)``."""

    reply = staticmethod(lambda prompt: "")
    calls: list = []

    def __init__(self, **kwargs):
        self.chat = types.SimpleNamespace(completions=types.SimpleNamespace(create=self._create))

    def _create(self, **kwargs):
        StubOpenAI.calls.append(kwargs)
        text = StubOpenAI.reply(kwargs["messages"][0]["content"])
        if isinstance(text, BaseException):
            raise text
        message = types.SimpleNamespace(content=text)
        return types.SimpleNamespace(choices=[types.SimpleNamespace(message=message)])


def load(dest: Path, monkeypatch, stub_openai: bool = True) -> types.SimpleNamespace:
    """The official modules imported from a checkout under ``dest`` (fresh; ``openai`` stubbed unless
    ``stub_openai`` is False). ``vlm_models.model_utils`` is there as ``model_utils``."""
    root = checkout(dest)
    monkeypatch.syspath_prepend(str(root))
    if stub_openai:
        monkeypatch.setitem(sys.modules, "openai", types.SimpleNamespace(OpenAI=StubOpenAI))
    for name in list(sys.modules):
        if _official(name):
            monkeypatch.delitem(sys.modules, name)
    loaded = {name.split(".")[-1]: importlib.import_module(name) for name in MODULES}
    for name in list(sys.modules):  # leave no official module behind for other tests
        if _official(name):
            monkeypatch.setitem(sys.modules, name, sys.modules[name])
    return types.SimpleNamespace(**loaded, root=root)
