"""LLM judge client for any OpenAI-compatible endpoint, with a cache so reruns cost nothing.

Used by ``summ_judge`` (HELMET/MMLongBench fluency, recall, precision) and by the answer
extraction step of the document benchmarks. Configuration: flags, else the environment
(``MMLB_JUDGE_BASE_URL``/``OPENAI_BASE_URL``, ``MMLB_JUDGE_API_KEY``/``OPENAI_API_KEY``,
``MMLB_JUDGE_MODEL``). ``openai`` is imported lazily.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Sequence, Union

log = logging.getLogger(__name__)

Request = Union[str, Sequence[dict]]
AZURE_API_VERSION = "2024-03-01-preview"  # MMLongBench data.py get_llm_judge_client (@476fe86)


@dataclass
class Usage:
    calls: int = 0
    cache_hits: int = 0
    failures: int = 0
    retries: int = 0  # retries the answered calls took
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0


def _messages(request: Request) -> list[dict]:
    if isinstance(request, str):
        return [{"role": "user", "content": request}]
    return [dict(m) for m in request]


def cache_key(endpoint: dict, model: str, messages: list[dict], params: dict) -> str:
    """sha256 of everything that changes a judge's answer, in canonical JSON: the endpoint (its
    URL and API kind: the same model name behind another server is another judge), the model,
    the prompt messages and the sampling params."""
    blob = json.dumps([endpoint, model, messages, params], sort_keys=True, ensure_ascii=False)
    # surrogatepass: a prompt holding a lone surrogate (from a prediction) still has a key; every
    # other text hashes as before
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()


class JudgeCache:
    """Append-only JSONL file of {key, response, usage}; loaded once, safe across threads."""

    def __init__(self, path: str | Path | None):
        self.path = Path(path) if path else None
        self._lock = threading.Lock()
        self._data: dict[str, dict] = {}
        if self.path and self.path.is_file():
            with self.path.open(encoding="utf-8") as f:
                for line_no, line in enumerate(f, 1):
                    try:
                        row = json.loads(line)
                        self._data[row["key"]] = row
                    except (json.JSONDecodeError, KeyError):
                        log.warning("judge cache %s line %d unreadable; ignored", self.path, line_no)

    def get(self, key: str) -> dict | None:
        return self._data.get(key)

    def put(self, key: str, row: dict) -> None:
        row = {"key": key, **row}
        with self._lock:
            self._data[key] = row
            if self.path:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                # ASCII escapes: a reply with a lone surrogate (JSON allows "\ud800") is still
                # written and read back as it came, where UTF-8 text would refuse to encode it
                with self.path.open("a", encoding="utf-8") as f:
                    f.write(json.dumps(row) + "\n")


class JudgeClient:
    """Chat completions with a concurrency limit, retries (the ``openai`` client's: connection
    errors, 408, 409, 429 and 5xx, with exponential backoff and the server's Retry-After), a disk
    cache and a token/cost tally. ``price_in``/``price_out`` are USD per million tokens."""

    def __init__(self, model: str | None = None, base_url: str | None = None, api_key: str | None = None,
                 concurrency: int = 8, max_retries: int = 5,
                 cache_path: str | Path | None = None, timeout: float = 120.0,
                 price_in: float = 0.0, price_out: float = 0.0, api_type: str = "openai",
                 api_version: str | None = None):
        self.model = model or os.environ.get("MMLB_JUDGE_MODEL") or "gpt-4o-2024-11-20"
        self.base_url = base_url or os.environ.get("MMLB_JUDGE_BASE_URL") or os.environ.get("OPENAI_BASE_URL")
        self.api_key = api_key or os.environ.get("MMLB_JUDGE_API_KEY") or os.environ.get("OPENAI_API_KEY") or "EMPTY"
        self.concurrency = max(1, int(concurrency))
        self.max_retries = max_retries
        self.timeout = timeout
        self.price_in, self.price_out = price_in, price_out
        #: "azure": ``openai.AzureOpenAI`` with ``base_url`` as the Azure endpoint (MMLongBench's
        #: ``get_llm_judge_client`` default, api_version 2024-03-01-preview)
        if api_type not in ("openai", "azure"):
            raise ValueError(f"judge api_type must be 'openai' or 'azure', not {api_type!r}")
        self.api_type, self.api_version = api_type, api_version or AZURE_API_VERSION
        self.cache = JudgeCache(cache_path)
        self.usage = Usage()
        self._lock = threading.Lock()
        self._client = None

    def _openai(self):
        if self._client is None:
            from mmlbdata.core.extras import require

            openai = require("openai", "eval", "the LLM judge")

            if self.api_type == "azure":
                self._client = openai.AzureOpenAI(azure_endpoint=self.base_url, api_key=self.api_key,
                                                  api_version=self.api_version, max_retries=self.max_retries,
                                                  timeout=self.timeout)
            else:
                self._client = openai.OpenAI(base_url=self.base_url, api_key=self.api_key,
                                             max_retries=self.max_retries, timeout=self.timeout)
        return self._client

    def _call(self, messages: list[dict], params: dict):
        """The reply, and the retries the client took to get it."""
        raw = self._openai().chat.completions.with_raw_response.create(model=self.model, messages=messages, **params)
        return raw.parse(), raw.retries_taken

    def endpoint(self) -> dict:
        """Where the judge answers from, as the cache key reads it (never the API key)."""
        return {"base_url": self.base_url, "api_type": self.api_type,
                **({"api_version": self.api_version} if self.api_type == "azure" else {})}

    def complete(self, request: Request, max_tokens: int | None = 1024, temperature: float | None = 0.0,
                 **extra) -> str | None:
        """The reply text, from the cache when this (endpoint, model, prompt, params) was seen; None when
        the endpoint keeps failing (counted in ``usage.failures``, never raised).
        ``temperature=None`` / ``max_tokens=None`` send none (the endpoint's default, as MMLongBench's
        doc-QA judge); ``extra``: other parameters of the request as the openai client takes them
        (``max_completion_tokens``; ``extra_body``, merged into the JSON body: MemLens's
        ``chat_template_kwargs``), part of the cache key too."""
        messages = _messages(request)
        params = {**({} if max_tokens is None else {"max_tokens": max_tokens}),
                  **({} if temperature is None else {"temperature": temperature}), **extra}
        key = cache_key(self.endpoint(), self.model, messages, params)
        hit = self.cache.get(key)
        if hit is not None:
            with self._lock:
                self.usage.cache_hits += 1
            return hit["response"]
        try:
            reply, retries = self._call(messages, params)
        except Exception as exc:  # noqa: BLE001 - a judge outage must not kill a whole eval
            log.error("judge call failed for good: %s", exc)
            with self._lock:
                self.usage.failures += 1
            return None
        text = reply.choices[0].message.content or ""
        usage = getattr(reply, "usage", None)
        p_tok = getattr(usage, "prompt_tokens", 0) or 0
        c_tok = getattr(usage, "completion_tokens", 0) or 0
        with self._lock:
            self.usage.calls += 1
            self.usage.retries += retries
            self.usage.prompt_tokens += p_tok
            self.usage.completion_tokens += c_tok
            self.usage.cost_usd += (p_tok * self.price_in + c_tok * self.price_out) / 1e6
        self.cache.put(key, {"model": self.model, "response": text,
                             "usage": {"prompt_tokens": p_tok, "completion_tokens": c_tok}})
        return text

    def complete_many(self, requests: Sequence[Request], **params) -> list[str | None]:
        """Replies in request order, at most ``concurrency`` requests in flight."""
        if not requests:
            return []
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(requests))) as pool:
            return list(pool.map(lambda r: self.complete(r, **params), requests))

    def summary(self) -> dict:
        return {"model": self.model, "base_url": self.base_url, "api_type": self.api_type, **asdict(self.usage)}
