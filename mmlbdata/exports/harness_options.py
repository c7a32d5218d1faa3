"""What ``mmlb eval``'s scoring flags become inside a harness run (lmms-eval, VLMEvalKit).

A harness calls our hooks or dataset class with no options of ours, so the flags are read from the
environment, the same names for both harnesses (README "Harness exports"):

==========================  =============================================  ======================
variable                    ``mmlb eval`` flag                             default
==========================  =============================================  ======================
``MMLB_PARITY``             ``--parity default|official``                  ``default``
``MMLB_PROTOCOL``           ``--protocol v1.1|v1.0``                       ``v1.1``
``MMLB_JUDGE_BASE_URL``     ``--judge-base-url`` (or ``OPENAI_BASE_URL``)  no judge
``MMLB_JUDGE_MODEL``        ``--judge-model``                              the client's default
``MMLB_JUDGE_API_KEY``      the key (or ``OPENAI_API_KEY``)                ``EMPTY``
``MMLB_JUDGE_PROMPTS``      ``--judge-prompts`` (v1.1 document-QA judge)   the rules
``MMLB_JUDGE_CACHE``        ``--judge-cache``                              no cache
==========================  =============================================  ======================

Without a judge, summaries are reported unscorable (``summ_judge``) and document QA is scored by
the rules with a note, as ``mmlb eval`` does.
"""
from __future__ import annotations

import os
from typing import Any, Optional

_JUDGES: dict[tuple, Any] = {}


def _env(name: str) -> str:
    return os.environ.get(name, "").strip()


def parity() -> str:
    """``official`` or ``default``, from ``$MMLB_PARITY``."""
    return _env("MMLB_PARITY") or "default"


def protocol() -> str:
    """MMLongBench's protocol, from ``$MMLB_PROTOCOL`` (default: ``mmlbdata.official.protocol.DEFAULT``)."""
    from mmlbdata.official.protocol import DEFAULT

    return _env("MMLB_PROTOCOL") or DEFAULT


def judge() -> Optional[Any]:
    """One ``JudgeClient`` per process and configuration when an endpoint or key is set (the rule of
    ``mmlb eval``'s ``build_judge``), else None."""
    base_url = _env("MMLB_JUDGE_BASE_URL") or _env("OPENAI_BASE_URL")
    key = _env("MMLB_JUDGE_API_KEY") or _env("OPENAI_API_KEY")
    if not base_url and not key:
        return None
    settings = (base_url, key, _env("MMLB_JUDGE_MODEL"), _env("MMLB_JUDGE_CACHE"))
    if settings not in _JUDGES:
        from mmlbdata.evaluation.judge import JudgeClient

        _JUDGES[settings] = JudgeClient(model=settings[2] or None, base_url=base_url or None,
                                        api_key=key or "EMPTY", cache_path=settings[3] or None)
    return _JUDGES[settings]


def judge_options() -> dict[str, dict]:
    """Per metric, the judge options ``mmlb eval`` passes (only what is configured)."""
    client, prompts = judge(), _env("MMLB_JUDGE_PROMPTS")
    options: dict[str, dict] = {}
    if client is not None:
        options["summ_judge"] = {"judge": client}
        if prompts:  # the v1.1 document-QA judge needs the official prompt file; without it, the rules
            options["docqa"] = {"judge": client, "judge_prompts": prompts}
    return options


def metric_options() -> dict[str, dict]:
    """``evaluate_config``'s ``metric_options``: parity and protocol for every metric, the judge's."""
    return {"*": {"parity": parity(), "protocol": protocol()}, **judge_options()}
