"""Does ``mmlb run`` keep the model busy? (CPU only)

    python -m benchmarks.bench_runner_pipeline [--only stages,waiting] [--rows 48] [--images 8]
        [--batch-size 2] [--repeats 3] [--vh-images 1500] [--vh-questions 17] [--work DIR]

Part 1, **waiting** (the user's target): ``mmlb run`` on ``vh_single_128k`` (``--vh-questions`` x 6
rows over a generated COCO-size source of ``--vh-images`` photos, ``bench_layout.make_source``) and
``mmlongdoc_128k`` (the 8 shared MMLongBench-Doc PDFs, 58 rows), built by the real builders in both
layouts, with a stand-in model that takes 50 ms per example and needs no preparation (the feeder
thread streams the rows with ``datasets`` and reads each image's bytes ahead of it): the share of
the run's wall time the model waited for its input, and apart from the first batch's wait (the
one-off opening of the stream: ``datasets`` resolving the config's data files, then the first
parquet row group, with its image bytes in the embedded layout). ``--work`` keeps the built
folders for the next run.

Part 2, **stages**: serial stages against the prefetching pipeline.

Builds a Visual-Haystack-shaped config from the shared COCO images (``$MMLB_TEST_DATA``) in a
temporary folder and a tiny random LLaVA whose processor works at 336 px (LLaVA-1.5's input), so
reading, decoding and the processor are the real code on real JPEGs. Generation is replaced by
a fixed sleep per batch (a stand-in for the accelerator, which a CPU cannot time honestly),
whose text is a checksum of the batch's prepared tensors: equal predictions mean equal inputs.

By default the sleep is set so that generation takes as long as preparation (read + decode +
preprocess) measured serially just before (each repeat runs serial, then 1 and 2 workers, and
re-balances: the shared machine's load drifts), the case where overlap matters most: the serial
path then takes their sum, a perfect pipeline their max. Table 1: wall time per setting and
repeat against max(prep, gen) ("wall/max", prep from the repeat's serial run) and against the
run's own stage times ("wall/own max", preparation divided by the workers). Table 2 (why
threads): preparing every batch inline, in 2 threads and in 2 spawned processes (each with its
own processor; tensors pickled back).
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import shutil
import statistics
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

from benchmarks._util import table, test_data
from mmlbdata.runner.core import Generation, PipelineOptions, make_request, run
from mmlbdata.runner.hf import HFBackend
from tests.smoke import write_built

CONFIG = "vh_single_8k"
MODEL_SECONDS = 0.05  # the stand-in model's time per example (part 1)


class StandInModel:
    """A model that takes :data:`MODEL_SECONDS` per example and has no ``prepare``: what waits for
    input here is the reading alone (rows streamed, image bytes read)."""

    def generate(self, requests):
        time.sleep(MODEL_SECONDS * len(requests))
        return [Generation("no", 1, 1) for _ in requests]


def build_128k(work: Path, layout: str, vh_images: int, vh_questions: int) -> Path:
    """vh_single_128k and mmlongdoc_128k in ``layout`` (kept in ``work`` for the next run)."""
    from benchmarks.bench_layout import make_source
    from mmlbdata.dataset.build import build_all

    data, folder = test_data(), work / f"built-{layout}"
    coco = work / f"coco_synthetic_{vh_images}"
    if not coco.exists():
        make_source(coco, vh_images)
    sources = {"coco": coco, "mmlongbench_doc": data / "mmlongbench_doc"}
    for config, options in (("vh_single_128k", {"num_questions": vh_questions}), ("mmlongdoc_128k", {})):
        [result] = build_all([config], sources, folder, tokenizer=data / "llama2" / "tokenizer.model",
                             store_root=work / "store", progress=False, layout=layout, options=options)
        if not result.ok:
            raise SystemExit(f"{config} ({layout}): {result.error}")
    return folder


def waiting(work: Path, vh_images: int, vh_questions: int) -> list[dict]:
    """Part 1: per layout and config, the model's wait for input (a warm run first: imports, page cache)."""
    rows = []
    for layout in ("files", "embedded"):
        folder = build_128k(work, layout, vh_images, vh_questions)
        for config in ("vh_single_128k", "mmlongdoc_128k"):
            for attempt in ("warm", "timed"):
                out, profile = work / f"{layout}-{config}.jsonl", work / f"{layout}-{config}.profile.jsonl"
                out.unlink(missing_ok=True)
                profile.unlink(missing_ok=True)
                stats = run(StandInModel(), folder, [config], out, pipeline=PipelineOptions(profile=str(profile)))
            batches = [json.loads(line) for line in profile.read_text().splitlines()]
            waits = [b["waited"] for b in batches]
            rows.append({"layout": layout, "config": config, "rows": stats.examples,
                         "wall s": f"{stats.seconds:.2f}", "model s": f"{MODEL_SECONDS * stats.examples:.2f}",
                         "waited s": f"{sum(waits):.3f}", "waited % of wall": f"{100 * sum(waits) / stats.seconds:.2f}",
                         "opening s (1st batch)": f"{waits[0]:.3f}",
                         "waited % after the 1st": f"{100 * sum(waits[1:]) / stats.seconds:.2f}"})
    return rows


class SleepingGenerator(HFBackend):
    """The real HF ``prepare``; ``generate`` sleeps ``seconds`` per batch and answers with a
    checksum of each request's prepared input ids and the batch's pixels."""

    seconds = 0.0

    def generate(self, prepared):
        time.sleep(self.seconds)
        inputs = prepared.inputs
        # every 1009th value: a full sum of the batch's pixels costs ~50 ms, not generation's to pay
        pixels = float(inputs["pixel_values"].flatten()[::1009].double().sum()) if "pixel_values" in inputs else 0.0
        return [Generation(f"{int(ids.sum())}/{pixels:.3f}", int(mask.sum()), 1)
                for ids, mask in zip(inputs["input_ids"], inputs["attention_mask"])]


def build_rows(root: Path, rows: int, images: int) -> Path:
    """``rows`` examples of ``images`` real COCO JPEGs each (varied prompts and lengths)."""
    pics = [p.read_bytes() for p in sorted((test_data() / "coco_mini" / "val2017").glob("*.jpg"))]
    examples = [{"id": f"b{i}", "dataset": "visual_haystack", "length": 8192, "num_tokens": 600 * images + 7 * i,
                 "prompt": "Haystack: " + "<image>" * images + f"\nQuestion {i}: is there a dog?" + " Look." * (i % 5),
                 "images": [{"bytes": pics[(i * images + j) % len(pics)], "path": None} for j in range(images)],
                 "question": "is there a dog?", "answers": ["yes"], "metric": "binary_acc",
                 "meta": json.dumps({"category": "NIAH"})} for i in range(rows)]
    return write_built(root / "built", {CONFIG: examples})


def timed_run(backend, built: Path, out: Path, batch_size: int, workers: int) -> tuple[float, dict, list[str]]:
    if out.exists():
        out.unlink()
    stats = run(backend, built, [CONFIG], out, batch_size=batch_size,
                pipeline=PipelineOptions(workers=workers, depth=4))
    return stats.seconds, stats.stages, out.read_text().splitlines()


_WORKER = None


def _init_worker(model: str) -> None:
    global _WORKER
    _WORKER = SleepingGenerator(model, device="cpu")


def _prepare_in_worker(requests):
    return _WORKER.prepare(requests)


def prepare_pools(backend, model: str, built: Path, batch_size: int) -> list[dict]:
    """Seconds to prepare every batch: inline, 2 threads, 2 processes (started beforehand)."""
    from mmlbdata.runner.core import iter_examples

    reqs = [make_request(r, CONFIG, None, None, True) for r in iter_examples(built, CONFIG)]
    chunks = [reqs[i:i + batch_size] for i in range(0, len(reqs), batch_size)]
    started = time.perf_counter()
    for chunk in chunks:
        backend.prepare(chunk)
    rows = [{"pool": "inline", "seconds": time.perf_counter() - started}]
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(backend.prepare, chunks[:2]))  # each thread copies the processor once
        started = time.perf_counter()
        list(pool.map(backend.prepare, chunks))
        rows.append({"pool": "2 threads", "seconds": time.perf_counter() - started})
    # spawned, not forked: a fork of this threaded process (torch, the tokenizer) can hang
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn"), initializer=_init_worker,
                             initargs=(model,)) as pool:
        list(pool.map(_prepare_in_worker, chunks[:2]))
        started = time.perf_counter()
        list(pool.map(_prepare_in_worker, chunks))
        rows.append({"pool": "2 processes", "seconds": time.perf_counter() - started})
    inline = rows[0]["seconds"]
    return [{"pool": r["pool"], "seconds": f"{r['seconds']:.2f}", "speed-up": f"{inline / r['seconds']:.2f}x"}
            for r in rows]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--only", default="waiting,stages", help="comma list of parts: waiting, stages")
    p.add_argument("--vh-images", type=int, default=1500, help="generated COCO-size photos for vh_single_128k")
    p.add_argument("--vh-questions", type=int, default=17, help="vh_single_128k questions (6 rows each)")
    p.add_argument("--work", default=None, help="folder for the built 128K configs (kept; default: temporary)")
    p.add_argument("--rows", type=int, default=48)
    p.add_argument("--images", type=int, default=8, help="COCO images per row")
    p.add_argument("--batch-size", type=int, default=2)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--generate-seconds", type=float, default=None,
                   help="sleep per batch (default: the serial run's preparation time per batch)")
    args = p.parse_args()
    parts = set(args.only.split(","))
    work = Path(tempfile.mkdtemp(prefix="bench_runner_"))
    try:
        if "waiting" in parts:
            kept = Path(args.work) if args.work else work
            kept.mkdir(parents=True, exist_ok=True)
            rows = waiting(kept, args.vh_images, args.vh_questions)
            print(f"1. A stand-in model of {MODEL_SECONDS * 1000:.0f} ms per example: its wait for input", flush=True)
            print(table(rows, list(rows[0])), flush=True)
            print()
        if "stages" in parts:
            print("2. Serial stages against the pipeline", flush=True)
            measure(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def balance(backend: SleepingGenerator, args, stages: dict, n_batches: int) -> None:
    """Generation as long as the serial run's preparation (unless --generate-seconds is given)."""
    prep = stages["read"] + stages["decode"] + stages["preprocess"]
    backend.seconds = args.generate_seconds if args.generate_seconds is not None else prep / n_batches


def measure(args, work: Path) -> None:
    from tests.tiny import build_tiny_vlm

    model = str(build_tiny_vlm(work / "tiny", image_size=336))
    built = build_rows(work, args.rows, args.images)
    backend = SleepingGenerator(model, device="cpu")
    n_batches = -(-args.rows // args.batch_size)

    timed_run(backend, built, work / "warm.jsonl", args.batch_size, 0)  # imports, dataset resolution
    _, stages, _ = timed_run(backend, built, work / "calibrate.jsonl", args.batch_size, 0)
    balance(backend, args, stages, n_batches)
    print(f"{args.rows} rows x {args.images} COCO images, batch {args.batch_size} ({n_batches} batches); "
          f"generation {backend.seconds:.3f}s per batch to start with", flush=True)

    rows, reference = [], None
    for repeat in range(args.repeats):
        for workers in (0, 1, 2):
            gen = backend.seconds * n_batches
            wall, stages, lines = timed_run(backend, built, work / f"w{workers}.jsonl", args.batch_size, workers)
            reference = reference or lines
            if workers == 0:  # this repeat's preparation time, measured serially
                prep = stages["read"] + stages["decode"] + stages["preprocess"]
            bound = max(prep, gen)
            # the bound from this run's own stage times, preparation spread over its workers as if
            # perfectly parallel: how close the run came to hiding its shorter stage
            own_prep = (stages["read"] + stages["decode"] + stages["preprocess"]) / max(workers, 1)
            own = max(own_prep, stages["generate"])
            rows.append({"repeat": repeat, "workers": workers, "wall s": f"{wall:.2f}",
                         "read": f"{stages['read']:.2f}", "decode": f"{stages['decode']:.2f}",
                         "preprocess": f"{stages['preprocess']:.2f}", "generate": f"{stages['generate']:.2f}",
                         "max(prep,gen)": f"{bound:.2f}", "sum": f"{prep + gen:.2f}",
                         "wall/max": f"{wall / bound:.2f}", "wall/own max": f"{wall / own:.2f}",
                         "same preds": lines == reference})
            if workers == 0:
                balance(backend, args, stages, n_batches)
    print(table(rows, list(rows[0])), flush=True)
    for workers in (0, 1, 2):
        for column in ("wall/max", "wall/own max"):
            ratios = [float(r[column]) for r in rows if r["workers"] == workers]
            print(f"workers={workers}: {column} median {statistics.median(ratios):.2f} "
                  f"(min {min(ratios):.2f}, max {max(ratios):.2f})")
    print()
    print(table(prepare_pools(backend, model, built, args.batch_size), ["pool", "seconds", "speed-up"]))


if __name__ == "__main__":
    main()
