"""Foundation benchmark: token counting speed and Visual Haystack build throughput / memory.

    python -m benchmarks.bench_core [--questions 4 16]

Prints one table. Image counting is header-only (no pixel decoding). The build rows run in fresh
subprocesses so their peak RSS is their own; building more questions must not raise peak memory
much (the writer streams, bounded by one row group).
"""
from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._util import table, test_data


def bench_image_tokens(files: list[Path], repeats: int = 20) -> dict:
    from mmlbdata.core.tokens import image_size, image_tokens

    start = time.perf_counter()
    for _ in range(repeats):
        for path in files:
            image_tokens(*image_size(path))
    elapsed = time.perf_counter() - start
    return {"stage": "image tokens (header-only, 1 core)", "rate": f"{len(files) * repeats / elapsed:,.0f} images/s"}


def bench_text_tokens(text: str, tokenizer: Path) -> list[dict]:
    from mmlbdata.core.tokens import TextTokenizer

    tok = TextTokenizer(tokenizer)
    mb = len(text.encode()) / 1e6
    start = time.perf_counter()
    tok.count(text)
    single = time.perf_counter() - start
    chunks = [text[i:i + 4000] for i in range(0, len(text), 4000)]
    start = time.perf_counter()
    tok.count_batch(chunks)
    batched = time.perf_counter() - start
    return [{"stage": "text tokens (one call)", "rate": f"{mb / single:.2f} MB/s"},
            {"stage": f"text tokens (batched, {tok.num_threads} threads)", "rate": f"{mb / batched:.2f} MB/s"}]


def build_once(config: str, questions: int, coco: str, tokenizer: str) -> dict:
    """Run inside a subprocess: build and report rows/s and this process's peak RSS."""
    from mmlbdata.dataset.build import build_config

    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        result = build_config(config, {"coco": coco}, tmp, limit=questions, store_root=Path(tmp) / "store",
                              tokenizer=tokenizer, progress=False, options={"num_questions": questions})
        elapsed = time.perf_counter() - start
    if not result.ok:
        raise SystemExit(result.error)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"rows": result.stats.num_rows, "seconds": elapsed, "peak_mib": peak,
            "images": result.stats.num_images, "bytes": result.stats.num_bytes}


def bench_build(config: str, questions: int, coco: Path, tokenizer: Path) -> dict:
    import subprocess

    code = ("import json, sys; from benchmarks.bench_core import build_once; "
            f"print(json.dumps(build_once({config!r}, {questions}, {str(coco)!r}, {str(tokenizer)!r})))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    r = json.loads(out.stdout.strip().splitlines()[-1])
    return {"stage": f"build {config}, {questions} questions", "rate": f"{r['rows'] / r['seconds']:.1f} rows/s",
            "rows": r["rows"], "images": r["images"], "MB out": f"{r['bytes'] / 1e6:.0f}",
            "peak RSS": f"{r['peak_mib']:.0f} MiB"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=int, nargs="+", default=[4, 16])
    args = parser.parse_args()
    data = test_data()
    tokenizer = data / "llama2" / "tokenizer.model"
    files = sorted((data / "coco_mini").glob("*2017/*.jpg"))
    rows = [bench_image_tokens(files)]
    rows += bench_text_tokens((data / "text" / "wikitext2_raw_wiki.test.raw").read_text(), tokenizer)
    with tempfile.TemporaryDirectory() as tmp:
        from mmlbdata.dataset.demo import make_demo_coco

        big = make_demo_coco(Path(tmp) / "coco", num_images=600)  # coco_mini is too small for 128k
        for questions in args.questions:
            rows.append(bench_build("vh_single_8k", questions, data / "coco_mini", tokenizer))
        for questions in args.questions:
            rows.append(bench_build("vh_single_128k", questions, big, tokenizer))
    print(table(rows, ["stage", "rate", "rows", "images", "MB out", "peak RSS"]))
    print("(128k rows use 600 generated demo images of 896x672: coco_mini has too few distractors)")


if __name__ == "__main__":
    main()
