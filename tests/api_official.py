"""MMLongBench's API runners (``eval_api.py``, ``eval_api_batch.py`` with ``vlm_model/openai_model.py``,
``gemini.py``, ``vllm_models.py`` @22b9f27) run unchanged in this process against loopback stand-ins of
the providers (tests/mmlb_official.py checks the files out; nothing of them is kept here).

What is changed around the official code, never in it:

- ``time`` as its modules see it: no real pause (``call_api``'s 5 s, ``api_sleep``'s 0.1 s at least);
- ``openai`` as ``openai_model.py`` and ``vllm_models.py`` see it: a ``base_url`` they hard-code
  (Anthropic's for Claude, ``http://localhost:8000/v1`` for vLLM) is sent to the loopback server
  instead, and recorded in :data:`CLIENT_URLS`; the client reads ``OPENAI_BASE_URL`` otherwise;
- ``google.genai.Client``: :class:`FakeGenAI`, which records uploads and ``generate_content`` calls;
- ``gemini.py`` imports ``model_type`` from transformers' ``image_processing_auto`` (unused there;
  transformers 5 no longer has it): a placeholder is set first;
- ``gemini.py``'s uploads call ``call_api(func, limit=3, pause=5, return_rate_limit=True)``, which
  ``model_utils.call_api`` at 22b9f27 does not accept: every image raises TypeError and
  ``eval_api.py`` skips the dataset. The same commit's ``scripts/eval_gpt4_summ.py`` has the
  ``call_api`` that takes it (its own loop, the same tries and pauses); it stands in for gemini.py's
  ``call_api``, read from that file and executed unchanged.
"""
from __future__ import annotations

import ast
import contextlib
import hashlib
import os
import sys
import threading
import time
import types
from pathlib import Path

CLIENT_URLS: list = []  # the base_url each official openai.OpenAI(...) asked for


def _no_sleep_time() -> types.SimpleNamespace:
    return types.SimpleNamespace(time=time.time, sleep=lambda seconds: None)


def _redirecting_openai(real, server_url: str) -> types.SimpleNamespace:
    def OpenAI(**kwargs):  # noqa: N802 - stands in for the class
        CLIENT_URLS.append(kwargs.get("base_url"))
        if kwargs.get("base_url"):
            kwargs["base_url"] = server_url
        return real.OpenAI(**kwargs)

    return types.SimpleNamespace(OpenAI=OpenAI)


def _summ_call_api(root: Path):
    """``call_api`` of scripts/eval_gpt4_summ.py (the one that takes ``return_rate_limit``)."""
    source = (root / "scripts" / "eval_gpt4_summ.py").read_text()
    node = next(n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == "call_api")
    namespace = {"time": _no_sleep_time()}
    exec(compile(ast.Module([node], []), "scripts/eval_gpt4_summ.py", "exec"), namespace)  # noqa: S102 - pinned upstream
    return namespace["call_api"]


@contextlib.contextmanager
def patched(root: Path, server_url: str | None = None):
    """The official modules with the stand-ins above (restored after)."""
    import openai
    import transformers.models.auto.image_processing_auto as auto

    if not hasattr(auto, "model_type"):
        auto.model_type = None
    import vlm_model.model_utils as model_utils
    import vlm_model.openai_model as openai_model
    import vlm_model.vllm_models as vllm_models

    saved = [(m, "time", m.time) for m in (model_utils, openai_model, vllm_models)]
    saved += [(m, "openai", m.openai) for m in (openai_model, vllm_models)]
    for module in (model_utils, openai_model, vllm_models):
        module.time = _no_sleep_time()
    if server_url:
        openai_model.openai = vllm_models.openai = _redirecting_openai(openai, server_url)
    try:
        import vlm_model.gemini as gemini
    except ImportError:  # google-genai not installed: the Gemini tests skip
        gemini = None
    if gemini is not None:
        saved += [(gemini, "time", gemini.time), (gemini, "call_api", gemini.call_api)]
        gemini.time = _no_sleep_time()
        gemini.call_api = _summ_call_api(root)
    try:
        yield
    finally:
        for module, name, value in saved:
            setattr(module, name, value)


def run_eval_api(root: Path, argv: list[str], script: str = "eval_api") -> None:
    """``python <script>.py ARGV`` from the checkout (its main(), in this process)."""
    import importlib

    module = importlib.import_module(script)
    saved_argv, cwd = sys.argv, os.getcwd()
    sys.argv = [f"{script}.py", *argv]
    try:
        os.chdir(root)
        module.main()
    finally:
        sys.argv = saved_argv
        os.chdir(cwd)


# -- google-genai ---------------------------------------------------------------------------------------
class FakeGenAI:
    """``google.genai.Client`` for tests: ``files.upload`` keeps the bytes and returns a ``File``
    named by their SHA-256; ``models.generate_content`` records (model, contents, config) and
    replies with ``responder(contents)``. Calls of every client land in the class's ``calls``."""

    calls: list = []
    uploads: dict = {}
    responder = staticmethod(lambda contents: "yes")
    _lock = threading.Lock()

    def __init__(self, api_key=None, **kwargs):
        self.api_key = api_key
        self.files = types.SimpleNamespace(upload=self._upload)
        self.models = types.SimpleNamespace(generate_content=self._generate)

    @classmethod
    def reset(cls, responder=None):
        cls.calls, cls.uploads = [], {}
        cls.responder = staticmethod(responder or (lambda contents: "yes"))

    def _upload(self, file, config=None):
        from google.genai import types as genai_types

        data = file.read()
        digest = hashlib.sha256(data).hexdigest()
        with self._lock:
            self.uploads[digest] = (data, dict(config or {}))
        return genai_types.File(name=f"files/{digest[:16]}", uri=f"https://files.test/{digest}",
                                mime_type=(config or {}).get("mime_type"))

    def _generate(self, model, contents, config=None):
        with self._lock:
            self.calls.append({"model": model, "contents": list(contents), "config": config})
        text = self.responder(contents)
        usage = types.SimpleNamespace(prompt_token_count=len(contents), candidates_token_count=len(text.split()))
        return types.SimpleNamespace(text=text, usage_metadata=usage)


def gemini_call(call: dict) -> dict:
    """A recorded ``generate_content`` call, comparable: each file as the SHA-256 of what was uploaded."""
    contents = [piece if isinstance(piece, str) else ("file", piece.uri.rsplit("/", 1)[1], piece.mime_type)
                for piece in call["contents"]]
    config = call["config"].model_dump(exclude_none=True) if call["config"] is not None else None
    return {"model": call["model"], "contents": contents, "config": config}
