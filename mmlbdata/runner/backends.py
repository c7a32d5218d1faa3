"""Construct a backend from plain options, so the same settings build one in this process
(``mmlb run``) or in each Ray replica (``mmlb run --ray``, where the options travel pickled).

Which MMLongBench wrapper a run reproduces is chosen in ``load_LLM``'s order
(vlm_model/__init__.py @22b9f27): the API names first ("gpt"/"claude" -> openai_model.py,
"gemini" -> gemini.py, :func:`api_profiles.api_profile_for`), then the model families of
:mod:`.profiles`; a name the API test catches is never given a family profile by ``auto``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from mmlbdata.runner import api_profiles as ap
from mmlbdata.runner.profiles import ProfileOptions, resolve_profile

#: vLLM allows one image per prompt unless told otherwise; the benchmarks need many
VLLM_DEFAULT_IMAGES = 128
BACKENDS = ("hf", "vllm", "openai", "gemini")


@dataclass(frozen=True)
class BackendOptions:
    backend: str  # hf, vllm, openai or gemini
    model: str
    device: str = "auto"
    dtype: str = "auto"
    max_images: Optional[int] = None
    max_model_len: Optional[int] = None
    tensor_parallel_size: int = 1
    base_url: Optional[str] = None
    api_key_env: Optional[str] = None  # None: the variable the profile's wrapper reads (OPENAI_API_KEY, GEMINI_API_KEY)
    concurrency: int = 8
    trust_remote_code: bool = False  # hf, vllm: run a model repository's own code only when asked
    profile: str = "auto"  # a runner/profiles.py or api_profiles.py name, "generic", or "auto" (from the model name)
    profile_options: Optional[ProfileOptions] = None
    api: Optional[ap.APIOptions] = None  # openai, gemini: image detail, sizes, URL mode, tries


def api_profile(opts: BackendOptions) -> str:
    """The request profile of an API backend: the one named, else from the model name in
    load_LLM's order (gpt/claude, then gemini), else ``generic`` (a server, the prefix continued).
    ValueError where the backend cannot send what the profile needs."""
    name = opts.profile if opts.profile != "auto" else ap.api_profile_for(opts.model) or "generic"
    if opts.backend == "gemini":
        if opts.profile not in ("auto", "gemini"):
            raise ValueError(f"--backend gemini sends gemini.py's requests; --model-profile {opts.profile} is for "
                             "another backend")
        return "gemini"
    if name == "gemini":
        raise ValueError(f"{opts.model}: MMLongBench's load_LLM sends a model name containing 'gemini' to "
                         "vlm_model/gemini.py (google-genai): run it with --backend gemini, or send it as an "
                         "OpenAI-compatible chat with --model-profile generic")
    if name not in ("generic", *ap.API_PROFILES):
        raise ValueError(f"--model-profile {name} is a transformers profile (--backend hf); the openai backend "
                         f"takes {', '.join(p for p in ap.API_PROFILES if p != 'gemini')} or generic")
    return name


def describe_profile(opts: BackendOptions) -> str:
    """The line a run prints to say which profile prepares its inputs."""
    api = opts.api or ap.APIOptions()
    if opts.backend in ("openai", "gemini"):
        name = api_profile(opts)
        if name == "generic":
            return ("profile: generic (an OpenAI-compatible server: one user message, images as their stored bytes, "
                    "the answer prefix prefilled and continued with continue_final_message, a vLLM option; "
                    "MMLongBench's vllm_models.py sends the prefix as a closed turn: --model-profile vllm_server)")
        return f"profile: {ap.describe(name, opts.model, api)}"
    if opts.backend != "hf":
        return f"profile: generic ({opts.backend} backend: MMLongBench's wrappers are transformers code)"
    profile, why = hf_profile(opts)
    return f"profile: {profile.describe() if profile else why}"


def hf_profile(opts: BackendOptions):
    """(profile or None, why) for the transformers backend, in load_LLM's order: a model path that
    its API test catches gets no family profile from ``auto``."""
    api = ap.api_profile_for(opts.model) if opts.profile == "auto" else None
    if api is not None:
        return None, (f"generic: MMLongBench's load_LLM sends a model path containing "
                      f"{'claude' if api == 'claude' else 'gemini' if api == 'gemini' else 'gpt'!r} to "
                      f"vlm_model/{ap.API_WRAPPERS[api]} before any model family (vlm_model/__init__.py); "
                      f"name the family with --model-profile, or run an API model with --backend "
                      f"{'gemini' if api == 'gemini' else 'openai'}")
    return resolve_profile(opts.model, opts.profile, opts.profile_options)


def make_backend(opts: BackendOptions):
    """The backend ``opts`` names; ValueError for an incomplete choice (a server without a URL)."""
    if opts.backend == "hf":
        from mmlbdata.runner.hf import HFBackend

        profile, _why = hf_profile(opts)
        return HFBackend(opts.model, device=opts.device, dtype=opts.dtype,
                         trust_remote_code=opts.trust_remote_code, profile=profile)
    if opts.backend == "vllm":
        from mmlbdata.runner.vllm import VLLMBackend

        kwargs = {"tensor_parallel_size": opts.tensor_parallel_size, "trust_remote_code": opts.trust_remote_code,
                  "limit_mm_per_prompt": {"image": opts.max_images or VLLM_DEFAULT_IMAGES}}
        if opts.max_model_len:
            kwargs["max_model_len"] = opts.max_model_len
        return VLLMBackend(opts.model, options=opts.profile_options, **kwargs)
    if opts.backend not in BACKENDS:
        raise ValueError(f"unknown backend {opts.backend!r} ({', '.join(BACKENDS)})")
    from mmlbdata.runner.api import ChatAPIBackend, GeminiBackend, api_key

    profile = api_profile(opts)
    common = {"concurrency": opts.concurrency, "options": opts.profile_options, "api": opts.api}
    key = api_key(opts.api_key_env, profile)
    if key is None and profile in ("openai", "claude", "gemini"):  # the wrappers read os.environ[...] too
        raise ValueError(f"{profile} needs an API key: set {opts.api_key_env or ap.API_KEY_ENV[profile]} "
                         "(or name another variable with --api-key-env)")
    if profile == "gemini":
        return GeminiBackend(opts.model, api_key=key, **common)
    return ChatAPIBackend(opts.model, profile, base_url=server_url(opts), api_key=key, **common)


def server_url(opts: BackendOptions) -> Optional[str]:
    """Where the openai backend sends: --base-url, else the wrapper's own (Anthropic's for Claude,
    localhost:8000 for vllm_server; None: the client's, $OPENAI_BASE_URL or OpenAI's). ValueError
    for a server of one's own without a URL."""
    profile = api_profile(opts)
    url = opts.base_url or {"claude": ap.ANTHROPIC_BASE_URL, "vllm_server": ap.VLLM_BASE_URL}.get(profile)
    if profile == "generic" and not url:
        raise ValueError("--backend openai needs --base-url for a model served by your own server (a model name "
                         "with 'gpt' or 'claude' in it goes to OpenAI's or Anthropic's API)")
    return url
