"""Video benchmark: frames decoded + stored per second, and peak memory of a 256-frame example.

    python -m benchmarks.bench_video

Runs on the real 70.5 s Tears of Steel clip (800x332 VP8, sparse keyframes). Every row runs in
a fresh subprocess so its peak RSS is its own. "cold" = empty image store (decode, scale to the
768 px default, JPEG-encode, write); "warm" = the same frames again (store hits, no decoding).
The 256-frame example is a full LongVideoBench build (``lvb_val_256f`` with ``max_fps=4`` so a
70 s clip yields 256 frames) with subtitles interleaved and tokens counted.
"""
from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._util import table, test_data

CLIP = "tears-of-steel-battle-clip-medium.webm"


def store_run(video: str, n: int, threads: int, store_root: str, repeat: bool) -> dict:
    """Inside a subprocess: decode + store ``n`` sampled frames (then again if ``repeat``)."""
    from mmlbdata.media.video import frame_indices, probe, store_frames
    from mmlbdata.core.store import ImageStore

    info = probe(video)
    indices = frame_indices(70.5, info.fps, n)
    store = ImageStore(store_root)
    start = time.perf_counter()
    store_frames(store, video, indices, max_side=768, threads=threads, info=info)
    cold = time.perf_counter() - start
    warm = None
    if repeat:
        start = time.perf_counter()
        store_frames(store, video, indices, max_side=768, threads=threads, info=info)
        warm = time.perf_counter() - start
    return {"cold_s": cold, "warm_s": warm, "rss_mb": _rss_mb()}


def example_run(data: str, tokenizer: str, work: str) -> dict:
    """Inside a subprocess: build one 256-frame interleaved example end to end."""
    from mmlb_builders.lvb import LongVideoBench
    from mmlbdata.core.store import ImageStore
    from mmlbdata.core.tokens import TokenCounter

    root = Path(work) / "release"
    (root / "videos").mkdir(parents=True)
    (root / "subtitles").mkdir()
    shutil.copy(Path(data) / "video" / CLIP, root / "videos" / "tos.webm")
    shutil.copy(Path(data) / "video" / "sintel-en.vtt", root / "subtitles" / "tos.vtt")
    row = {"video_id": "tos", "question": "What happens?", "question_wo_referring_query": "What?",
           "candidates": ["a", "b", "c", "d"], "correct_choice": 0, "position": [], "topic_category": "x",
           "question_category": "S2E", "level": "L1-Perception", "id": "tos_0", "video_path": "tos.webm",
           "subtitle_path": "tos.vtt", "duration_group": 60, "starting_timestamp_for_subtitles": 0.0,
           "duration": 70.5, "view_count": 0}
    (root / "lvb_val.json").write_text(json.dumps([row]))
    counter = TokenCounter(tokenizer)
    builder = LongVideoBench("lvb_val_256f", sources={"lvb": root}, store=ImageStore(Path(work) / "store"),
                             counter=counter, options={"max_fps": 4})
    start = time.perf_counter()
    (example,) = list(builder.generate())
    elapsed = time.perf_counter() - start
    return {"cold_s": elapsed, "frames": len(example["images"]), "tokens": example["num_tokens"],
            "rss_mb": _rss_mb()}


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _sub(function: str, *args) -> dict:
    code = (f"import json, sys; from benchmarks.bench_video import {function}; "
            f"print(json.dumps({function}(*json.loads(sys.argv[1]))))")
    out = subprocess.run([sys.executable, "-c", code, json.dumps(args)], check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[0, 1])
    args = parser.parse_args()
    data = test_data()
    video = str(data / "video" / CLIP)
    tokenizer = str(data / "llama2" / "tokenizer.model")
    rows = []
    for n in (64, 256):
        for threads in args.threads:
            with tempfile.TemporaryDirectory() as work:
                r = _sub("store_run", video, n, threads, work, True)
            rows.append({"stage": f"decode+store {n} frames", "threads": threads or "auto",
                         "cold frames/s": f"{n / r['cold_s']:.1f}", "warm frames/s": f"{n / r['warm_s']:.0f}",
                         "peak RSS MB": f"{r['rss_mb']:.0f}"})
    with tempfile.TemporaryDirectory() as work:
        r = _sub("example_run", str(data), tokenizer, work)
    rows.append({"stage": f"256-frame example ({r['frames']} fr, {r['tokens']} tok)", "threads": "auto",
                 "cold frames/s": f"{r['frames'] / r['cold_s']:.1f}", "warm frames/s": "",
                 "peak RSS MB": f"{r['rss_mb']:.0f}"})
    print(table(rows, ["stage", "threads", "cold frames/s", "warm frames/s", "peak RSS MB"]))


if __name__ == "__main__":
    main()
