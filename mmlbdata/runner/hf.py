"""transformers backend: ``AutoModelForImageTextToText`` + the processor's chat template.

Greedy decoding, left padding for batches, the assistant turn prefilled by appending the
answer prefix after the generation prompt. torch/transformers are imported lazily.

Split in two for the runner's pipeline: :meth:`HFBackend.prepare` (CPU: chat template, image
decoding, the processor) runs in background threads, each with its own copy of the processor
(a fast tokenizer's padding state is not safe to share between threads), while
:meth:`HFBackend.generate` runs the model on the previous batch.
"""
from __future__ import annotations

import copy
import logging
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

from mmlbdata.core.extras import require
from mmlbdata.runner.chat import to_pil
from mmlbdata.runner.core import Generation, Request
from mmlbdata.runner.pipeline import BatchProfile, stage

if TYPE_CHECKING:
    from mmlbdata.runner.profiles import Profile

log = logging.getLogger(__name__)


def pick_device(device: str = "auto") -> str:
    torch = require("torch", "runner", "the hf backend of `mmlb run`")

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise RuntimeError("--device cuda requested but torch sees no CUDA device")
    return device


class HFBackend:
    def __init__(self, model: str, device: str = "auto", dtype: str = "auto",
                 attn_implementation: str | None = None, trust_remote_code: bool = False,
                 profile: "Profile | None" = None):
        """``trust_remote_code`` (off unless asked for) lets the repository's own code run.
        ``profile`` (:mod:`.profiles`): load, prepare and generate as MMLongBench's wrapper for
        the family does; None: the generic path (the chat template, batched)."""
        torch = require("torch", "runner", "the hf backend of `mmlb run`")
        transformers = require("transformers", "runner", "the hf backend of `mmlb run`")
        AutoModelForImageTextToText, AutoProcessor = (transformers.AutoModelForImageTextToText,
                                                      transformers.AutoProcessor)

        self.device = pick_device(device)
        if dtype == "auto":
            torch_dtype = torch.bfloat16 if self.device.startswith("cuda") else torch.float32
        else:
            torch_dtype = getattr(torch, dtype)
        self.profile = profile
        self.processor = AutoProcessor.from_pretrained(model, trust_remote_code=trust_remote_code,
                                                       **(profile.processor_kwargs() if profile else {}))
        tokenizer = getattr(self.processor, "tokenizer", self.processor)
        tokenizer.padding_side = "left"
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        if profile:
            profile.prepare_processor(self.processor)
        self.tokenizer = tokenizer
        self._owner = threading.get_ident()
        self._local = threading.local()
        kwargs = {"dtype": torch_dtype, "trust_remote_code": trust_remote_code}
        if attn_implementation:
            kwargs["attn_implementation"] = attn_implementation
        if profile:
            config = transformers.AutoConfig.from_pretrained(model, trust_remote_code=trust_remote_code)
            profile.prepare_config(config)
            kwargs["config"] = config
        self.model = AutoModelForImageTextToText.from_pretrained(model, **kwargs).to(self.device).eval()
        self.stop_ids = profile.stop_token_ids(self.model.generation_config, tokenizer) if profile else None
        if profile:
            profile.dtype = self.model.dtype
        self._seeded_config = None  # the config the random state was last seeded for (profiles)
        log.info("loaded %s on %s (%s)", model, self.device, torch_dtype)

    def _processor(self):
        """The processor for this thread: the loaded one in the thread that built the backend, a
        copy (made once) in each pipeline worker."""
        if threading.get_ident() == self._owner:
            return self.processor
        if getattr(self._local, "processor", None) is None:
            self._local.processor = copy.deepcopy(self.processor)
        return self._local.processor

    def _text(self, processor, req: Request) -> str:
        turns = req.messages if req.messages is not None else [{"role": "user", "content": req.content}]
        messages = [{"role": t["role"], "content": [{"type": "text", "text": c["text"]} if c["type"] == "text"
                                                    else {"type": "image"} for c in t["content"]]} for t in turns]
        text = processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        return text + req.prefix

    def prepare(self, requests: Sequence[Request], profile: BatchProfile | None = None) -> "HFPrepared":
        """CPU work for one batch: prompts through the chat template, images decoded, the
        processor's tensors (on CPU; :meth:`generate` moves them)."""
        processor = self._processor()
        if self.profile is not None:  # one request at a time, as the official DataLoader (batch size 1)
            with stage(profile, "preprocess"):
                inputs = [self.profile.inputs(processor, r.content, r.images, r.prefix, turns=r.messages)
                          for r in requests]
            return HFPrepared(list(requests), inputs)
        with stage(profile, "preprocess"):
            texts = [self._text(processor, r) for r in requests]
        with stage(profile, "decode"):
            images = [to_pil(r.images[c["index"]]) for r in requests for c in r.content if c["type"] == "image"]
        with stage(profile, "preprocess"):
            inputs = processor(text=texts, images=images or None, return_tensors="pt", padding=True)
        return HFPrepared(list(requests), inputs)

    def generate(self, prepared: "HFPrepared | Sequence[Request]") -> list[Generation]:
        import torch

        if not isinstance(prepared, HFPrepared):  # called with requests: prepare here
            prepared = self.prepare(prepared)
        requests = prepared.requests
        if self.profile is not None:
            return [self._generate_one(r, inputs) for r, inputs in zip(requests, prepared.inputs)]
        inputs = prepared.inputs.to(self.device)
        if "pixel_values" in inputs and inputs["pixel_values"].is_floating_point():
            inputs["pixel_values"] = inputs["pixel_values"].to(self.model.dtype)
        with torch.inference_mode():
            out = self.model.generate(**inputs, do_sample=False, max_new_tokens=requests[0].max_new_tokens,
                                      pad_token_id=self.tokenizer.pad_token_id)
        prompt_len = inputs["input_ids"].shape[1]
        mask = inputs["attention_mask"]
        gens = []
        for i in range(len(requests)):
            new = out[i, prompt_len:]
            eos = self.tokenizer.eos_token_id
            n_new = int((new != self.tokenizer.pad_token_id).sum()) if eos is None else _until_eos(new, eos)
            gens.append(Generation(self.tokenizer.decode(new, skip_special_tokens=True),
                                   int(mask[i].sum()), n_new))
        return gens


    def generation_kwargs(self, request: Request) -> dict:
        """What the profile's official ``generate`` passes besides the inputs."""
        return self.profile.generate_kwargs(request.max_new_tokens, self.stop_ids, self.tokenizer.pad_token_id)

    def _seed(self, request: Request) -> int:
        """eval.py's ``set_seed(args.seed)`` at the start of each dataset (``run_test`` L37 @22b9f27),
        then the one number its ``DataLoader`` draws from torch's CPU generator as its iteration starts
        (the workers' base seed): here before the first generation of each config, so ``--do-sample``
        draws what the official run draws."""
        seed = self.profile.options.seed
        if request.config != self._seeded_config:
            import torch
            from transformers import set_seed

            set_seed(seed)
            torch.empty((), dtype=torch.int64).random_()  # torch.utils.data's _BaseDataLoaderIter: _base_seed
            self._seeded_config = request.config
        return seed

    def _generate_one(self, request: Request, inputs) -> Generation:
        import torch

        seed = self._seed(request)
        inputs = inputs.to(self.device)  # pixel values as the processor made them (the model casts them)
        prompt_len = inputs["input_ids"].shape[1]
        with torch.inference_mode():
            out = self.model.generate(**inputs, **self.generation_kwargs(request))
        new = out["sequences"][0, prompt_len:]
        return Generation(self.tokenizer.decode(new, skip_special_tokens=True), int(prompt_len),
                          int(new.shape[0]), seed=seed)


@dataclass
class HFPrepared:
    """One batch ready for the model: its requests and the processor's output (CPU tensors)."""
    requests: list[Request]
    inputs: object


def _until_eos(tokens, eos_id: int) -> int:
    """Generated length up to and including the first EOS (padding after it not counted)."""
    hits = (tokens == eos_id).nonzero()
    return int(hits[0, 0]) + 1 if len(hits) else int(tokens.shape[0])
