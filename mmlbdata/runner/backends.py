"""Construct a backend from plain options, so the same settings build one in this process
(``mmlb run``) or in each Ray replica (``mmlb run --ray``, where the options travel pickled)."""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Optional

from mmlbdata.runner.profiles import ProfileOptions, resolve_profile

#: vLLM allows one image per prompt unless told otherwise; the benchmarks need many
VLLM_DEFAULT_IMAGES = 128


@dataclass(frozen=True)
class BackendOptions:
    backend: str  # hf, vllm or openai
    model: str
    device: str = "auto"
    dtype: str = "auto"
    max_images: Optional[int] = None
    max_model_len: Optional[int] = None
    tensor_parallel_size: int = 1
    base_url: Optional[str] = None
    api_key_env: str = "OPENAI_API_KEY"
    concurrency: int = 8
    trust_remote_code: bool = False  # hf, vllm: run a model repository's own code only when asked
    profile: str = "auto"  # hf: a runner/profiles.py name, "generic", or "auto" (from the model name)
    profile_options: Optional[ProfileOptions] = None


def describe_profile(opts: BackendOptions) -> str:
    """The line a run prints to say which profile prepares its inputs."""
    if opts.backend != "hf":
        return f"profile: generic ({opts.backend} backend: MMLongBench's wrappers are transformers code)"
    profile, why = resolve_profile(opts.model, opts.profile, opts.profile_options)
    return f"profile: {profile.describe() if profile else why}"


def make_backend(opts: BackendOptions):
    """The backend ``opts`` names; ValueError for an incomplete choice (openai without a URL)."""
    if opts.backend == "hf":
        from mmlbdata.runner.hf import HFBackend

        profile, _why = resolve_profile(opts.model, opts.profile, opts.profile_options)
        return HFBackend(opts.model, device=opts.device, dtype=opts.dtype,
                         trust_remote_code=opts.trust_remote_code, profile=profile)
    if opts.backend == "vllm":
        from mmlbdata.runner.vllm import VLLMBackend

        kwargs = {"tensor_parallel_size": opts.tensor_parallel_size, "trust_remote_code": opts.trust_remote_code,
                  "limit_mm_per_prompt": {"image": opts.max_images or VLLM_DEFAULT_IMAGES}}
        if opts.max_model_len:
            kwargs["max_model_len"] = opts.max_model_len
        return VLLMBackend(opts.model, **kwargs)
    if opts.backend != "openai":
        raise ValueError(f"unknown backend {opts.backend!r} (hf, vllm, openai)")
    from mmlbdata.runner.vllm import OpenAIServerBackend

    if not opts.base_url:
        raise ValueError("--backend openai needs --base-url")
    return OpenAIServerBackend(opts.model, opts.base_url, os.environ.get(opts.api_key_env) or "EMPTY",
                               concurrency=opts.concurrency)
