"""An API run's wall time: ``mmlb run`` against MMLongBench's ``eval_api.py`` and ``eval_api_batch.py``.

    python -m benchmarks.bench_api_run [--rows 100] [--images 8] [--latency 2] [--concurrency 8,32]

The same ``--rows`` Visual Haystack rows (``--images`` real COCO photos each, ``$MMLB_TEST_DATA``),
written as an official release file and built from it (``mmlb build --source mmlb_release``), are
sent to GPT-4o's request profile on a loopback server that answers each request after a fixed
``--latency`` seconds (tests/fake_openai.py). Each runner is a process, as a user starts it:

* ``eval_api.py`` as scripts/run_api.sh runs it (``--api_sleep 3 --num_workers 16
  --preprocessing_num_workers 1``): one request at a time, each followed by a sleep of
  ``max(api_sleep - elapsed, 0.1)``;
* ``eval_api_batch.py`` as run_api.sh runs it beside (its default ``--batch_size 4``: 4 threads);
* ``mmlb run --backend openai --model gpt-4o-2024-11-20`` at each ``--concurrency``.

The official files are run unchanged from the fetched mirror (benchmarks/official_code.py), with
``OPENAI_BASE_URL`` pointing their client at the server. The table gives each runner's wall time,
seconds per row, and how many times faster ``mmlb run`` is than each official script.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import official_code
from benchmarks._util import table, test_data

ROOT = Path(__file__).resolve().parents[1]
MODEL = "gpt-4o-2024-11-20"
RELEASE_FILE = "NIAH/vh_single_test_1000_K8_dep6.jsonl"
OFFICIAL_FILES = ("arguments.py", "data.py", "utils.py", "utils_prompt.py", "eval_api.py", "eval_api_batch.py",
                  "vlm_model/__init__.py", "vlm_model/model_utils.py", "vlm_model/openai_model.py",
                  "configs/vh_all.yaml")


def write_release(root: Path, rows: int, images: int) -> None:
    """``rows`` Visual Haystack records of ``images`` photos each, in the release's layout."""
    photos = sorted((test_data() / "coco_mini" / "val2017").glob("*.jpg"))
    (root / "mmlb_image" / "coco").mkdir(parents=True)
    for photo in photos:
        shutil.copy(photo, root / "mmlb_image" / "coco" / photo.name)
    path = root / "mmlb_data" / RELEASE_FILE
    path.parent.mkdir(parents=True)
    with path.open("w") as out:
        for i in range(rows):
            ctxs = [f"coco/{photos[(i * images + j) % len(photos)].name}" for j in range(images)]
            out.write(json.dumps({"id": i, "question": f"For the image with a dog ({i}), is there a cat?",
                                  "answer": "Yes" if i % 2 else "No", "ctxs": ctxs}) + "\n")


def checkout(dest: Path) -> Path:
    for name in OFFICIAL_FILES:
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        (dest / name).write_text(official_code.source(official_code.MMLONGBENCH, name))
    return dest


def timed(argv: list[str], env: dict, cwd: Path) -> float:
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode:
        sys.exit(f"{' '.join(argv[:3])} failed:\n{done.stderr[-3000:]}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100, help="rows of one config (the vh yaml's max_test_samples: 100)")
    parser.add_argument("--images", type=int, default=8)
    parser.add_argument("--latency", type=float, default=2.0, help="seconds the server takes per request")
    parser.add_argument("--concurrency", default="8,32", help="mmlb run --concurrency values (comma-separated)")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "tests"))  # the loopback server of the tests
    from fake_openai import FakeOpenAI

    from mmlbdata.dataset.build import build_all

    work = Path(tempfile.mkdtemp(prefix="bench_api_run_"))
    try:
        write_release(work / "release", args.rows, args.images)
        [built] = build_all(["vh_single_8k"], {"mmlb_release": work / "release"}, work / "built",
                            store_root=work / "store", tokenizer=test_data() / "llama2" / "tokenizer.model",
                            progress=False)
        assert built.status == "built", built.error
        code = checkout(work / "official")
        answered = []
        with FakeOpenAI(lambda body: answered.append(1) or "Yes", delay=args.latency) as server:
            env = {**os.environ, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-bench",
                   "LLM_JUDGE_KEY": "unused", "LLM_JUDGE_ENDPOINT": "http://127.0.0.1:9",
                   "HF_DATASETS_CACHE": str(work / "hf"), "PYTHONPATH": str(ROOT), "TQDM_DISABLE": "1"}
            official = [sys.executable, "{script}", "--config", "configs/vh_all.yaml", "--model_name_or_path", MODEL,
                        "--datasets", "vh_single", "--test_files", RELEASE_FILE, "--input_max_length", "8192",
                        "--generation_max_length", "128", "--test_length", "8", "--max_test_samples", str(args.rows),
                        "--test_file_root", str(work / "release" / "mmlb_data"), "--image_file_root",
                        str(work / "release" / "mmlb_image"), "--num_workers", "16", "--api_sleep", "3",
                        "--preprocessing_num_workers", "1"]
            rows = []
            for script in ("eval_api.py", "eval_api_batch.py"):
                argv = [a.replace("{script}", script) for a in official] + ["--output_dir", str(work / script)]
                rows.append({"runner": script + (" (4 threads)" if "batch" in script else ""),
                             "seconds": timed(argv, env, code)})
            for concurrency in [int(c) for c in args.concurrency.split(",")]:
                argv = [sys.executable, "-m", "mmlbdata.cli", "run", "--backend", "openai", "--model", MODEL, "--data",
                        str(work / "built"), "--config", "vh_single_8k", "--out", str(work / f"p{concurrency}.jsonl"),
                        "--concurrency", str(concurrency), "--no-progress"]
                rows.append({"runner": f"mmlb run --concurrency {concurrency}", "seconds": timed(argv, env, ROOT)})
        assert len(answered) == args.rows * len(rows), (len(answered), args.rows, len(rows))
        sequential, batch = rows[0]["seconds"], rows[1]["seconds"]
        for r in rows:
            r.update(s_per_row=f"{r['seconds'] / args.rows:.2f}", vs_eval_api=f"{sequential / r['seconds']:.1f}x",
                     vs_eval_api_batch=f"{batch / r['seconds']:.1f}x", seconds=f"{r['seconds']:.1f}")
        print(f"{args.rows} rows of {args.images} images, {args.latency:g} s per request (loopback), "
              f"{os.cpu_count()} CPUs")
        print(table(rows, ["runner", "seconds", "s_per_row", "vs_eval_api", "vs_eval_api_batch"]))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
