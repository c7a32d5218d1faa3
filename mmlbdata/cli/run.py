"""``mmlb run --backend hf|vllm|openai --model M --data DIR --config NAME --out preds.jsonl``."""
from __future__ import annotations

import logging
import sys
from typing import Optional

from mmlbdata.cli._common import dataset_problem, local_configs_problem, positive_int

log = logging.getLogger(__name__)


def register(subparsers) -> None:
    p = subparsers.add_parser("run", help="generate predictions for built configs with a model",
                              description=__doc__)
    p.add_argument("--backend", choices=["hf", "vllm", "openai"], default="hf")
    p.add_argument("--model", required=True, help="model path/name (hf, vllm) or served model name (openai)")
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
    p.add_argument("--base-url", default=None, help="openai backend: server URL, e.g. http://127.0.0.1:8000/v1")
    p.add_argument("--api-key-env", default="OPENAI_API_KEY", help="openai backend: env var with the key")
    p.add_argument("--concurrency", type=int, default=8,
                   help="openai backend: requests in flight (with --ray: per replica)")
    p.add_argument("--max-model-len", type=int, default=None, help="vllm: context length")
    p.add_argument("--tensor-parallel-size", type=int, default=1, help="vllm")
    p.add_argument("--trust-remote-code", action="store_true",
                   help="hf, vllm: run the Python code a model repository ships (custom architectures). "
                        "Off by default: only pass it for a model whose code you trust")
    add_profile_arguments(p)
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
    from mmlbdata.runner.profiles import PROFILES

    g = p.add_argument_group("MMLongBench profiles", "Feed a model what MMLongBench's eval.py feeds it: the "
                             "family's wrapper (vlm_model/*.py @22b9f27) picked from the model name as its "
                             "load_LLM picks it, and each dataset's settings from its configs/*.yaml "
                             "(docs/runner.md: what each profile reproduces).")
    g.add_argument("--model-profile", default="auto", choices=["auto", "generic", *sorted(PROFILES)],
                   help="hf: the family profile (auto: from the model name; generic: the chat template, batched; "
                        "--profile FILE is the timing profile)")
    g.add_argument("--settings", default="official", choices=["official", "generic"],
                   help="official: each MMLongBench config's generation_max_length and max_image_num from its "
                        "configs/*.yaml; generic: per-metric budgets (128, 384 for summaries)")
    g.add_argument("--use-yarn", action="store_true",
                   help="Qwen2.5-VL: YaRN rope scaling (factor 4 from 32K), as the paper's 64K/128K runs")
    g.add_argument("--image-resize", type=float, default=None, metavar="F",
                   help="Idefics: scale each image's sides by F; LLaVA-OneVision: at most 4*F^2 crops "
                        "(MMLongBench's --image_resize)")
    g.add_argument("--do-image-splitting", choices=["true", "false"], default=None,
                   help="Idefics: the processor's image splitting (default: the model's own)")
    g.add_argument("--stop-newline", action="store_true", help="also stop at newline tokens")
    g.add_argument("--do-sample", action="store_true", help="sample instead of greedy decoding")
    g.add_argument("--temperature", type=float, default=1.0, help="with --do-sample")
    g.add_argument("--top-p", type=float, default=1.0, help="with --do-sample")


def profile_options(args):
    from mmlbdata.runner.profiles import ProfileOptions

    splitting = None if args.do_image_splitting is None else args.do_image_splitting == "true"
    return ProfileOptions(use_yarn=args.use_yarn, image_resize=args.image_resize, do_image_splitting=splitting,
                          stop_newline=args.stop_newline, do_sample=args.do_sample, temperature=args.temperature,
                          top_p=args.top_p)


def backend_options(args):
    from mmlbdata.runner.backends import BackendOptions

    return BackendOptions(args.backend, args.model, device=args.device, dtype=args.dtype,
                          max_images=args.max_images, max_model_len=args.max_model_len,
                          tensor_parallel_size=args.tensor_parallel_size, base_url=args.base_url,
                          api_key_env=args.api_key_env, concurrency=args.concurrency,
                          trust_remote_code=args.trust_remote_code, profile=args.model_profile,
                          profile_options=profile_options(args))


def pipeline_options(args):
    from mmlbdata.runner.core import PipelineOptions

    return PipelineOptions(workers=max(args.workers, 0), depth=args.prefetch, sort_window=max(args.sort_window, 0),
                           profile=args.profile)


def make_backend(args):
    from mmlbdata.runner.backends import make_backend as build

    return build(backend_options(args))


def run(args) -> int:
    from mmlbdata.runner.backends import describe_profile
    from mmlbdata.runner.core import run as run_configs

    # per-config throughput lines even when the CLI logs warnings only
    logging.getLogger("mmlbdata.runner").setLevel(logging.INFO)
    problem = dataset_problem(args.data) or local_configs_problem(args.data, args.config)  # before a model is loaded
    if problem:
        print(f"mmlb run: {problem}", file=sys.stderr)
        return 2
    print(f"mmlb run: {describe_profile(backend_options(args))}", file=sys.stderr)  # which inputs the model gets
    if args.ray is not None:  # the replicas load the model, never this process
        return run_ray(args)
    try:
        backend = make_backend(args)
    except (ImportError, RuntimeError, ValueError) as exc:
        print(f"mmlb run: {exc}", file=sys.stderr)
        return 2
    batch = args.batch_size if args.backend != "openai" else max(args.batch_size, args.concurrency)
    stats = run_configs(backend, args.data, args.config, args.out, batch_size=batch, max_images=args.max_images,
                        max_new_tokens=args.max_new_tokens, prefill=not args.no_prefill, limit=args.limit,
                        as_text=args.text_context, pipeline=pipeline_options(args), label_images=args.label_images,
                        settings=args.settings)
    print(stats.line())
    return 0 if stats.errors == 0 else 1


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

    if args.backend == "openai" and not args.base_url:
        print("mmlb run: --backend openai needs --base-url", file=sys.stderr)
        return 2
    requests = RequestOptions(max_images=args.max_images, max_new_tokens=args.max_new_tokens,
                              prefill=not args.no_prefill, as_text=args.text_context, label_images=args.label_images,
                              settings=args.settings)
    batch = args.batch_size if args.backend != "openai" else max(args.batch_size, args.concurrency)
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
