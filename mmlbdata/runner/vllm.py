"""vLLM backends: offline ``vllm.LLM.chat`` and any OpenAI-compatible server (vLLM serve).

``vllm`` is imported only when the offline backend is built (it is not a dependency of this
package; install it on the GPU machine). The server backend needs only ``openai``.

Both have a ``prepare`` the runner's pipeline runs ahead in background threads: the chat
messages with every image read and base64-encoded, so ``generate`` only sends them.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Sequence

from mmlbdata.core.extras import require
from mmlbdata.runner.chat import openai_messages
from mmlbdata.runner.core import Generation, Request
from mmlbdata.runner.pipeline import BatchProfile, stage


@dataclass
class PreparedChats:
    """One batch's requests and their OpenAI-format messages (images as data URIs)."""
    requests: list[Request]
    messages: list[list[dict]]


def prepare_chats(requests: Sequence[Request], profile: BatchProfile | None = None,
                  with_prefix: bool = True) -> PreparedChats:
    """Messages for each request, images read and encoded (the ``decode`` stage)."""
    with stage(profile, "decode"):
        return PreparedChats(list(requests), [openai_messages(r.content, r.images, r.prefix if with_prefix else "",
                                                              r.messages) for r in requests])


class VLLMBackend:
    """Offline engine. ``engine_kwargs`` go to ``vllm.LLM`` (e.g. max_model_len,
    limit_mm_per_prompt={"image": N}, tensor_parallel_size).

    A model repository's own Python code runs only with ``trust_remote_code=True``, which the
    caller must ask for (``mmlb run --trust-remote-code``): a model name is not a reason to run code.
    """

    def __init__(self, model: str, *, trust_remote_code: bool = False, **engine_kwargs):
        vllm = require("vllm", "runner", "the vllm backend of `mmlb run`",
                       install="pip install vllm (on a CUDA machine, matched to its driver)")

        self._vllm = vllm
        self.llm = vllm.LLM(model=model, trust_remote_code=trust_remote_code, **engine_kwargs)

    def prepare(self, requests: Sequence[Request], profile: BatchProfile | None = None) -> PreparedChats:
        return prepare_chats(requests, profile)

    def generate(self, prepared: PreparedChats | Sequence[Request]) -> list[Generation]:
        if not isinstance(prepared, PreparedChats):
            prepared = self.prepare(prepared)
        requests = prepared.requests
        params = self._vllm.SamplingParams(temperature=0.0, max_tokens=requests[0].max_new_tokens)
        prefilled = bool(requests[0].prefix)
        outputs = self.llm.chat(prepared.messages, params, use_tqdm=False,
                                add_generation_prompt=not prefilled, continue_final_message=prefilled)
        return [Generation(o.outputs[0].text, len(o.prompt_token_ids or []), len(o.outputs[0].token_ids))
                for o in outputs]


class OpenAIServerBackend:
    """Chat completions against a server (vLLM's continues a prefilled assistant turn via
    ``continue_final_message``); requests run ``concurrency`` at a time."""

    def __init__(self, model: str, base_url: str, api_key: str = "EMPTY", concurrency: int = 8,
                 timeout: float = 600.0, continue_final_message: bool = True):
        openai = require("openai", "eval", "the openai backend of `mmlb run`")

        self.client = openai.OpenAI(base_url=base_url, api_key=api_key, timeout=timeout, max_retries=3)
        self.model = model
        self.concurrency = concurrency
        self.continue_final_message = continue_final_message

    def prepare(self, requests: Sequence[Request], profile: BatchProfile | None = None) -> PreparedChats:
        return prepare_chats(requests, profile, with_prefix=self.continue_final_message)

    def _one(self, req: Request, messages: list[dict]) -> Generation:
        prefix = req.prefix if self.continue_final_message else ""
        extra = {"continue_final_message": True, "add_generation_prompt": False} if prefix else {}
        reply = self.client.chat.completions.create(
            model=self.model, messages=messages,
            temperature=0.0, max_tokens=req.max_new_tokens, extra_body=extra or None)
        usage = reply.usage
        return Generation(reply.choices[0].message.content or "",
                          getattr(usage, "prompt_tokens", 0) or 0, getattr(usage, "completion_tokens", 0) or 0)

    def generate(self, prepared: PreparedChats | Sequence[Request]) -> list[Generation]:
        if not isinstance(prepared, PreparedChats):
            prepared = self.prepare(prepared)
        with ThreadPoolExecutor(max_workers=max(1, min(self.concurrency, len(prepared.requests)))) as pool:
            return list(pool.map(self._one, prepared.requests, prepared.messages))
