"""The offline vLLM backend: ``vllm.LLM.chat`` (a vLLM *server* is the openai backend, runner/api.py).

``vllm`` is imported only when the backend is built (it is not a dependency of this package;
install it on the GPU machine). Its ``prepare`` runs ahead in the pipeline's background threads:
the chat messages with every image read and base64-encoded, so ``generate`` only runs the engine.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

from mmlbdata.core.extras import require
from mmlbdata.runner.chat import openai_messages
from mmlbdata.runner.core import Generation, Request
from mmlbdata.runner.pipeline import BatchProfile, stage
from mmlbdata.runner.profiles import ProfileOptions


@dataclass
class PreparedChats:
    """One batch's requests and their OpenAI-format messages (images as data URIs)."""
    requests: list[Request]
    messages: list[list[dict]]


def prepare_chats(requests: Sequence[Request], profile: BatchProfile | None = None) -> PreparedChats:
    """Messages for each request, images read and encoded (the ``decode`` stage)."""
    with stage(profile, "decode"):
        return PreparedChats(list(requests), [openai_messages(r.content, r.images, r.prefix, r.messages)
                                              for r in requests])


class VLLMBackend:
    """Offline engine. ``engine_kwargs`` go to ``vllm.LLM`` (e.g. max_model_len,
    limit_mm_per_prompt={"image": N}, tensor_parallel_size).

    A model repository's own Python code runs only with ``trust_remote_code=True``, which the
    caller must ask for (``mmlb run --trust-remote-code``): a model name is not a reason to run code.
    """

    def __init__(self, model: str, *, trust_remote_code: bool = False, options: Optional[ProfileOptions] = None,
                 **engine_kwargs):
        vllm = require("vllm", "runner", "the vllm backend of `mmlb run`",
                       install="pip install vllm (on a CUDA machine, matched to its driver)")

        self._vllm = vllm
        self.options = options or ProfileOptions()
        self.llm = vllm.LLM(model=model, trust_remote_code=trust_remote_code, **engine_kwargs)

    def prepare(self, requests: Sequence[Request], profile: BatchProfile | None = None) -> PreparedChats:
        return prepare_chats(requests, profile)

    def generate(self, prepared: PreparedChats | Sequence[Request]) -> list[Generation]:
        if not isinstance(prepared, PreparedChats):
            prepared = self.prepare(prepared)
        requests = prepared.requests
        sampling = {"temperature": 0.0}  # greedy unless --do-sample, as every MMLongBench wrapper
        if self.options.do_sample:
            sampling = {"temperature": self.options.temperature, "top_p": self.options.top_p}
        params = self._vllm.SamplingParams(**sampling, max_tokens=requests[0].max_new_tokens)
        prefilled = bool(requests[0].prefix)
        outputs = self.llm.chat(prepared.messages, params, use_tqdm=False,
                                add_generation_prompt=not prefilled, continue_final_message=prefilled)
        return [Generation(o.outputs[0].text, len(o.prompt_token_ids or []), len(o.outputs[0].token_ids))
                for o in outputs]
