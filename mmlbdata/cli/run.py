"""``mmlb run --backend hf|vllm|openai|gemini --model M --data DIR --config NAME --out preds.jsonl``.

API models (--backend openai, gemini) get what MMLongBench's eval_api.py sent them, picked from the
model name as its load_LLM picks a wrapper: "gpt" -> OpenAI, "claude" -> Anthropic's OpenAI-compatible
endpoint, "gemini" -> google-genai; any other name is a server of your own (--base-url, e.g. vLLM).
A progress bar shows the examples left, the rate, the ETA and tokens/s (--no-progress hides it)."""
from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Optional

from mmlbdata.cli._common import dataset_problem, local_configs_problem, positive_int

log = logging.getLogger(__name__)


def register(subparsers) -> None:
    p = subparsers.add_parser("run", help="generate predictions for built configs with a model",
                              description=__doc__)
    p.add_argument("--backend", choices=["hf", "vllm", "openai", "gemini"], default="hf",
                   help="hf: transformers; vllm: offline vLLM; openai: an OpenAI-compatible chat API (OpenAI, "
                        "Anthropic, a vLLM server); gemini: Google's google-genai (pip install 'mmlbdata[gemini]')")
    p.add_argument("--model", required=True, help="model path/name (hf, vllm) or API model name (openai, gemini)")
    p.add_argument("--data", required=True, help="built dataset folder")
    p.add_argument("--config", action="append", required=True, help="config name (repeatable)")
    p.add_argument("--out", required=True, help="predictions JSONL (appended; existing ids are skipped)")
    p.add_argument("--device", default="auto", help="hf: cpu, cuda, cuda:1 or auto")
    p.add_argument("--dtype", default="auto", help="hf: float32, bfloat16, float16 or auto")
    p.add_argument("--batch-size", type=int, default=1)
    p.add_argument("--max-images", type=int, default=None, help="keep only the last N images of each example")
    p.add_argument("--max-new-tokens", type=int, default=None, help="override the per-family budget (128/384)")
    p.add_argument("--no-prefill", action="store_true", help="do not prefill the assistant turn with the answer prefix")
    p.add_argument("--text-context", action="store_true",
                   help="ReadBench text baseline: page images replaced by meta['context'] (compare with "
                        "mmlb eval --baseline)")
    p.add_argument("--label-images", action="store_true",
                   help="MemLens (rows with a conversation): [Image k] before each image, as the official "
                        "--label_images")
    p.add_argument("--limit", type=positive_int, default=None, metavar="N",
                   help="first N examples per config (N >= 1)")
    p.add_argument("--base-url", default=None,
                   help="openai backend: server URL, e.g. http://127.0.0.1:8000/v1 (default: $OPENAI_BASE_URL or "
                        "OpenAI's; Anthropic's for a claude model, as MMLongBench's openai_model.py)")
    p.add_argument("--api-key-env", default=None, metavar="VAR",
                   help="env var with the API key (default: the one MMLongBench's wrapper reads: OPENAI_API_KEY, "
                        "also for Claude; GEMINI_API_KEY)")
    p.add_argument("--concurrency", type=positive_int, default=8, metavar="N",
                   help="openai, gemini: requests in flight; lower it to stay within your provider's rate limit "
                        "(with --ray: per replica)")
    p.add_argument("--max-model-len", type=int, default=None, help="vllm: context length")
    p.add_argument("--tensor-parallel-size", type=int, default=1, help="vllm")
    p.add_argument("--no-progress", action="store_true",
                   help="no progress bar (by default one on stderr: examples left, rate, ETA, tokens/s)")
    p.add_argument("--trust-remote-code", action="store_true",
                   help="hf, vllm: run the Python code a model repository ships (custom architectures). "
                        "Off by default: only pass it for a model whose code you trust")
    add_profile_arguments(p)
    add_api_arguments(p)
    pipe = p.add_argument_group("pipeline", "Read, decode and preprocess the next batches in background "
                                "threads while the model generates; the summary line says where time went. "
                                "With --ray each replica prepares one batch while it generates another.")
    pipe.add_argument("--workers", type=int, default=2,
                      help="threads preparing batches (decode + processor); 0: the serial path, one stage "
                           "after the other (same predictions)")
    pipe.add_argument("--prefetch", type=positive_int, default=4, metavar="N",
                      help="batches read and prepared ahead of generation (memory: N + workers batches)")
    pipe.add_argument("--sort-window", type=int, default=0, metavar="N",
                      help="sort each window of N batches by length so a batch pads less (same ids, other "
                           "batches and output order; 0: off, batches as read)")
    pipe.add_argument("--profile", default=None, metavar="FILE",
                      help="append one JSON line per batch: ids, seconds per stage, wait, padding, GPU memory")
    ray = p.add_argument_group("Ray (pip install 'mmlbdata[ray]')", "Run model replicas on a Ray cluster "
                               "(or a local Ray): same predictions JSONL, resumable, lines in any order.")
    ray.add_argument("--ray", nargs="?", const="", default=None, metavar="ADDRESS",
                     help="run on Ray: the cluster at ADDRESS (e.g. auto, ray://head:10001), else "
                          "$RAY_ADDRESS or a new local Ray; --data may then also be a Hub dataset repo id")
    ray.add_argument("--replicas", type=int, default=1, help="model replicas (Ray actors) running at once")
    ray.add_argument("--gpus-per-replica", type=float, default=None,
                     help="GPUs each replica holds (default: --tensor-parallel-size for vllm, 1 for hf on "
                          "cuda, else 0)")
    ray.add_argument("--cpus-per-replica", type=float, default=1, help="CPUs each replica holds")
    p.set_defaults(func=run)


def add_profile_arguments(p) -> None:
    """MMLongBench's own per-family and per-dataset settings (its eval.py, vlm_model/, configs/)."""
    from mmlbdata.runner.api_profiles import API_PROFILES
    from mmlbdata.runner.profiles import PROFILES

    g = p.add_argument_group("MMLongBench profiles", "Feed a model what MMLongBench's eval.py feeds it: the "
                             "family's wrapper (vlm_model/*.py @22b9f27) picked from the model name as its "
                             "load_LLM picks it, and each dataset's settings from its configs/*.yaml "
                             "(docs/runner.md: what each profile reproduces).")
    g.add_argument("--model-profile", default="auto", choices=["auto", "generic", *sorted(PROFILES), *API_PROFILES],
                   help="the wrapper whose inputs the model gets (auto: from the model name, API names first, as "
                        "load_LLM; generic: the chat template, batched, or for a server the continued prefix; "
                        "vllm_server: vllm_models.py's request; --profile FILE is the timing profile)")
    g.add_argument("--settings", default="official", choices=["official", "generic"],
                   help="official: each MMLongBench config's generation_max_length and max_image_num from its "
                        "configs/*.yaml; generic: per-metric budgets (128, 384 for summaries)")
    g.add_argument("--use-yarn", action="store_true",
                   help="Qwen2.5-VL: YaRN rope scaling (factor 4 from 32K), as the paper's 64K/128K runs")
    g.add_argument("--image-resize", type=float, default=None, metavar="F",
                   help="Idefics, OpenAI/Claude: scale each image's sides by F; LLaVA-OneVision: at most 4*F^2 crops "
                        "(MMLongBench's --image_resize)")
    g.add_argument("--do-image-splitting", choices=["true", "false"], default=None,
                   help="Idefics: the processor's image splitting (default: the model's own)")
    g.add_argument("--stop-newline", action="store_true", help="also stop at newline tokens")
    g.add_argument("--do-sample", action="store_true", help="sample instead of greedy decoding")
    g.add_argument("--temperature", type=float, default=1.0, help="with --do-sample (Gemini: always, as gemini.py)")
    g.add_argument("--top-p", type=float, default=1.0,
                   help="with --do-sample (API models: always sent, as their wrappers send it)")
    g.add_argument("--generation-min-length", type=int, default=0, metavar="N",
                   help="hf profiles: generate at least N new tokens (MMLongBench's --generation_min_length)")
    g.add_argument("--seed", type=int, default=42,
                   help="hf profiles: transformers.set_seed(SEED) before each config's first generation, as "
                        "MMLongBench's eval.py before each dataset (recorded in each prediction line)")


def add_api_arguments(p) -> None:
    """MMLongBench's API flags (arguments.py, scripts/run_api.sh) and how failed requests are tried."""
    g = p.add_argument_group("API models (--backend openai, gemini)", "Each request as MMLongBench's API wrapper "
                             "builds it (vlm_model/openai_model.py, gemini.py, vllm_models.py @22b9f27), with the "
                             "per-length flags scripts/run_api.sh passed (--settings official); docs/runner.md.")
    g.add_argument("--image-detail", choices=["auto", "low", "high"], default=None,
                   help="OpenAI/Claude image detail (default: run_api.sh's, low for GPT-4o at 64K/128K, else auto)")
    g.add_argument("--max-image-size", type=positive_int, default=None, metavar="PX",
                   help="Gemini: images at most PX a side (default: run_api.sh's, 384 at 64K/128K)")
    g.add_argument("--image-urls", default=None, metavar="ROOT",
                   help="send each image as its URL in the repository `mmlb push` published --data to, not as "
                        "base64: ROOT is that repository's file root (https://huggingface.co/datasets/<repo>/"
                        "resolve/main), or 'hub' when --data is the Hub repository itself")
    g.add_argument("--tries", type=positive_int, default=5, metavar="N",
                   help="tries per request (MMLongBench's call_api: 5); one still failing is recorded as an empty "
                        "answer with its error, and tried again by the next run")
    g.add_argument("--retry-pause", type=float, default=5.0, metavar="S", help="seconds between tries (call_api: 5)")


def api_options(args):
    from pathlib import Path

    from mmlbdata.runner.api_profiles import APIOptions, ImageURLs

    urls = None
    if args.image_urls:
        folder = str(Path(args.data).resolve()) if Path(args.data).is_dir() else None
        urls = ImageURLs(args.image_urls, folder)
    return APIOptions(image_detail=args.image_detail, max_image_size=args.max_image_size, image_urls=urls,
                      settings=args.settings, tries=args.tries, pause=args.retry_pause)


def profile_options(args):
    from mmlbdata.runner.profiles import ProfileOptions

    splitting = None if args.do_image_splitting is None else args.do_image_splitting == "true"
    return ProfileOptions(use_yarn=args.use_yarn, image_resize=args.image_resize, do_image_splitting=splitting,
                          stop_newline=args.stop_newline, do_sample=args.do_sample, temperature=args.temperature,
                          top_p=args.top_p, generation_min_length=args.generation_min_length, seed=args.seed)


def backend_options(args):
    from mmlbdata.runner.backends import BackendOptions

    return BackendOptions(args.backend, args.model, device=args.device, dtype=args.dtype,
                          max_images=args.max_images, max_model_len=args.max_model_len,
                          tensor_parallel_size=args.tensor_parallel_size, base_url=args.base_url,
                          api_key_env=args.api_key_env, concurrency=args.concurrency,
                          trust_remote_code=args.trust_remote_code, profile=args.model_profile,
                          profile_options=profile_options(args), api=api_options(args))


def pipeline_options(args):
    from mmlbdata.runner.core import PipelineOptions

    return PipelineOptions(workers=max(args.workers, 0), depth=args.prefetch, sort_window=max(args.sort_window, 0),
                           profile=args.profile)


def make_backend(args):
    from mmlbdata.runner.backends import make_backend as build

    return build(backend_options(args))


def readme_predates_hint(data: str) -> str | None:
    """The run reads a local folder with ``datasets``, as a user does: a README written before the
    image-folder hint (issue 43) may make it read the whole folder as plain parquet (a CastError
    deep in the first batch); said up front, with the one command that mends it."""
    from mmlbdata.dataset.card import entries_without_hint

    if not Path(data).expanduser().is_dir() or not entries_without_hint(Path(data).expanduser()):
        return None
    return (f"the README of {data} was written by an earlier mmlbdata (its entries lack imagefolder-hint/), so "
            f"datasets may read the folder as plain parquet; `mmlb card {data}` rewrites it, then run again")


def run(args) -> int:
    from mmlbdata.runner.backends import describe_profile, server_url
    from mmlbdata.runner.core import run as run_configs

    # per-config throughput lines even when the CLI logs warnings only
    logging.getLogger("mmlbdata.runner").setLevel(logging.INFO)
    problem = dataset_problem(args.data) or local_configs_problem(args.data, args.config) \
        or readme_predates_hint(args.data)  # before a model is loaded
    if problem:
        print(f"mmlb run: {problem}", file=sys.stderr)
        return 2
    try:
        options = backend_options(args)
        if options.backend == "openai":
            server_url(options)
        print(f"mmlb run: {describe_profile(options)}", file=sys.stderr)  # which inputs the model gets
    except ValueError as exc:  # a profile the backend cannot send, a server without a URL
        print(f"mmlb run: {exc}", file=sys.stderr)
        return 2
    problem = image_url_problem(args)
    if problem:
        print(f"mmlb run: {problem}", file=sys.stderr)
        return 2
    if args.ray is not None:  # the replicas load the model, never this process
        return run_ray(args)
    try:
        backend = make_backend(args)
    except (ImportError, RuntimeError, ValueError) as exc:
        print(f"mmlb run: {exc}", file=sys.stderr)
        return 2
    stats = run_configs(backend, args.data, args.config, args.out, batch_size=args.batch_size,
                        max_images=args.max_images, max_new_tokens=args.max_new_tokens, prefill=not args.no_prefill,
                        limit=args.limit, as_text=args.text_context, pipeline=pipeline_options(args),
                        label_images=args.label_images, settings=args.settings, progress=not args.no_progress,
                        read_images=not args.image_urls)
    print(stats.line())  # the summary, once
    return 0 if stats.errors == 0 else 1


def image_url_problem(args) -> Optional[str]:
    """With --image-urls, why the first image of a config has no URL (embedded images, a local
    folder with 'hub'); None when it has one. Checked before any request."""
    from itertools import islice

    from mmlbdata.runner.core import iter_examples

    if not args.image_urls:
        return None
    urls = api_options(args).image_urls
    for config in args.config:
        rows = iter_examples(args.data, config, read_images=False)
        first = next((row["images"][0] for row in islice(rows, 10) if row.get("images")), None)
        rows.close()
        if first is not None:
            try:
                urls.url(first)
            except ValueError as exc:
                return f"{config}: {exc}"
    return None


def gpus_per_replica(args) -> Optional[float]:
    """GPUs each replica reserves; None (hf with --device auto): one if the cluster has GPUs."""
    if args.gpus_per_replica is not None:
        return args.gpus_per_replica
    if args.backend == "vllm":
        return args.tensor_parallel_size
    if args.backend == "hf" and args.device == "auto":
        return None
    return 1 if args.backend == "hf" and args.device.startswith("cuda") else 0


def run_ray(args) -> int:
    """``--ray``: the replicas build the backend themselves, so only its options leave here."""
    from mmlbdata.core.extras import MissingExtraError
    from mmlbdata.runner.ray_run import RequestOptions, run_on_ray

    requests = RequestOptions(max_images=args.max_images, max_new_tokens=args.max_new_tokens,
                              prefill=not args.no_prefill, as_text=args.text_context, label_images=args.label_images,
                              settings=args.settings)
    batch = args.batch_size if args.backend not in ("openai", "gemini") else max(args.batch_size, args.concurrency)
    try:
        stats = run_on_ray(backend_options(args), args.data, args.config, args.out, address=args.ray or None,
                           replicas=args.replicas, gpus_per_replica=gpus_per_replica(args),
                           cpus_per_replica=args.cpus_per_replica, batch_size=batch, requests=requests,
                           limit=args.limit, profile=args.profile)
    except (FileNotFoundError, ValueError) as exc:
        print(f"mmlb run: {exc}", file=sys.stderr)
        return 2
    except MissingExtraError:
        raise
    except Exception as exc:  # noqa: BLE001 - a replica that cannot load the model, a lost cluster
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        print(f"mmlb run --ray: stopped ({type(exc).__name__}: {first}); predictions written so far are "
              f"kept in {args.out}, run again to resume", file=sys.stderr)
        return 1
    print(stats.summary())
    return 0 if stats.errors == 0 else 1
