"""Length benchmark: do the packer and the counter stay linear from 8K to 512K, and does memory stay flat?

    python -m benchmarks.bench_lengths [--images 5000] [--rows 12] [--lengths 8k 128k 512k]
                                       [--no-load] [--keep DIR]

Generates a COCO-like source (``--images`` distinct 640x480 JPEGs, 391 tokens each by their
headers, one to three of 80 categories per image, an ``instances_val2017.json``): by default
photo-sized (about 170 KB of noise, as COCO's photos; eight noise images made once, each file made
distinct by a JPEG comment segment, so 5,000 take seconds, not minutes), ``--small-images`` flat
colours of about 5 KB. Then for each length it builds ``vh_single_<length>`` with ``--rows`` rows
(six rows per question, so ``ceil(rows / 6)`` questions), each step in a fresh process so its peak
RSS is its own:

* **pack**: the recipe's rows without the writer (at least ``--pack-questions`` questions): rows/s
  and placed images/s after the first question (steady state), so the fixed setup (reading the
  annotations, hashing the images into the store) is left out. Per question the recipe also sorts
  and shuffles the whole distractor pool (a cost in the source size, not the length), so rows/s
  falls with the length while images/s grows towards its linear limit.
* **build**: ``build_config`` (the writer included): rows/s and peak RSS.
* **load**: the built config read back as ``benchmarks.bench_load`` does, ``load_dataset`` in memory
  and streaming (images not decoded), each in a fresh process: seconds and peak RSS.

The acceptance of issue #25 (``vh_single_512k`` from 5,000 generated images loads both ways with peak
RSS under 2 GB) is the 512k line's two load columns with ``--images 5000`` and the real row count
(``--rows 600``, 100 questions); it holds only on the one-copy image layout, where a row references
its images instead of carrying their bytes.
"""
from __future__ import annotations

import argparse
import io
import json
import math
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

from benchmarks._util import table

IMAGE_SIZE = (640, 480)
NUM_CATEGORIES = 80
ROWS_PER_QUESTION = 6  # vh_single: the six needle depths of one question


def base_jpegs(small: bool) -> list[bytes]:
    """A few 640x480 JPEGs: noise of about 170 KB (COCO-sized), or one flat colour of about 5 KB."""
    from PIL import Image

    bases = []
    for variant in range(1 if small else 8):
        buffer = io.BytesIO()
        if small:
            image = Image.new("RGB", IMAGE_SIZE, (90, 120, 150))
        else:
            image = Image.merge("RGB", [Image.effect_noise(IMAGE_SIZE, 64 + (variant + band) % 7) for band in range(3)])
        image.save(buffer, format="JPEG", quality=75)
        bases.append(buffer.getvalue())
    return bases


def distinct_jpeg(base: bytes, index: int) -> bytes:
    """``base`` with a comment segment (FFFE) naming ``index`` after its SOI: other bytes, same header."""
    payload = f"mmlb bench image {index}".encode()
    return base[:2] + b"\xff\xfe" + (len(payload) + 2).to_bytes(2, "big") + payload + base[2:]


def make_coco_like(root: Path, count: int, seed: int = 0, small: bool = False) -> Path:
    """A COCO 2017-layout folder with ``count`` distinct 640x480 JPEGs and their instances."""
    rng = random.Random(seed)
    bases = base_jpegs(small)
    split = root / "val2017"
    split.mkdir(parents=True, exist_ok=True)
    images, annotations = [], []
    for index in range(count):
        name = f"{index + 1:012d}.jpg"
        (split / name).write_bytes(distinct_jpeg(bases[index % len(bases)], index))
        images.append({"id": index + 1, "file_name": name, "width": IMAGE_SIZE[0], "height": IMAGE_SIZE[1]})
        for category in rng.sample(range(1, NUM_CATEGORIES + 1), rng.randint(1, 3)):
            annotations.append({"id": len(annotations) + 1, "image_id": index + 1, "category_id": category,
                                "bbox": [0, 0, 10, 10], "area": 100, "iscrowd": 0})
    categories = [{"id": i, "name": f"thing{i:02d}", "supercategory": "thing"} for i in range(1, NUM_CATEGORIES + 1)]
    (root / "annotations").mkdir(exist_ok=True)
    (root / "annotations" / "instances_val2017.json").write_text(
        json.dumps({"images": images, "annotations": annotations, "categories": categories}))
    return root


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def pack_once(config: str, questions: int, coco: str, store: str) -> dict:
    """Run inside a subprocess: the recipe's rows, no writer; steady-state rate after question one."""
    from mmlbdata.dataset.registry import resolve
    from mmlbdata.core.store import ImageStore

    entry = resolve(config)
    builder = entry.builder(config, sources={"coco": coco}, limit=questions, store=ImageStore(store),
                            options={"num_questions": questions})
    start = time.perf_counter()
    stamps, images = [], 0
    for row in builder.generate():
        stamps.append(time.perf_counter())
        images += len(row["images"])
    first = ROWS_PER_QUESTION
    steady = stamps[-1] - stamps[first - 1] if len(stamps) > first else 0.0
    per_row = images / max(1, len(stamps))
    return {"rows": len(stamps), "seconds": stamps[-1] - start if stamps else 0.0, "steady_seconds": steady,
            "steady_rows": len(stamps) - first, "images_per_row": per_row, "peak_mb": _peak_mb()}


def build_once(config: str, questions: int, coco: str, out: str, store: str) -> dict:
    """Run inside a subprocess: ``build_config`` into ``out``; rows/s and peak RSS."""
    from mmlbdata.dataset.build import build_config

    start = time.perf_counter()
    result = build_config(config, {"coco": coco}, out, limit=questions, store_root=store, progress=False,
                          options={"num_questions": questions})
    if not result.ok:
        raise SystemExit(result.error)
    return {"rows": result.stats.num_rows, "seconds": time.perf_counter() - start, "peak_mb": _peak_mb(),
            "bytes": result.stats.num_bytes}


def _in_subprocess(function: str, *args) -> dict:
    code = (f"import json; from benchmarks.bench_lengths import {function}; "
            f"print(json.dumps({function}(*{list(args)!r})))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if done.returncode:
        return {"error": (done.stderr.strip().splitlines() or ["?"])[-1][:100]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure_length(label: str, questions: int, pack_questions: int, coco: Path, work: Path, load: bool) -> dict:
    """One table line: pack, build and (optionally) load ``vh_single_<label>``. The image store is
    shared by every length (``work``'s parent), so the source is copied into it once."""
    config = f"vh_single_{label}"
    line: dict = {"length": label}
    pack = _in_subprocess("pack_once", config, pack_questions, str(coco), str(work.parent / "store"))
    if "error" in pack:
        return {**line, "pack rows/s": "FAILED", "pack MB": pack["error"]}
    steady = pack["steady_seconds"]
    line.update({"images/row": f"{pack['images_per_row']:.0f}",
                 "pack rows/s": f"{pack['steady_rows'] / steady:.1f}" if steady else "-",
                 "pack images/s": f"{pack['steady_rows'] * pack['images_per_row'] / steady:,.0f}" if steady else "-",
                 "pack MB": f"{pack['peak_mb']:.0f}"})
    out = work / "out"
    built = _in_subprocess("build_once", config, questions, str(coco), str(out), str(work.parent / "store"))
    if "error" in built:
        return {**line, "build rows/s": "FAILED", "build MB": built["error"]}
    line.update({"rows": built["rows"], "build s": f"{built['seconds']:.1f}",
                 "build rows/s": f"{built['rows'] / built['seconds']:.1f}", "build MB": f"{built['peak_mb']:.0f}",
                 "disk MB": f"{built['bytes'] / 1e6:.0f}"})
    if load:
        from benchmarks.bench_load import measure

        for mode in ("memory", "streaming"):
            result = measure(mode, out, config)
            line[f"{mode} s"] = "FAILED" if "error" in result else f"{result['seconds']:.1f}"
            line[f"{mode} MB"] = result.get("error") or f"{result['peak_mb']:.0f}"
    return line


def main(argv: Optional[list[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=5000, help="generated COCO-like images (default 5000)")
    parser.add_argument("--rows", type=int, default=12, help="rows per config, six per question (default 12)")
    parser.add_argument("--lengths", nargs="+", default=["8k", "128k", "512k"])
    parser.add_argument("--pack-questions", type=int, default=8, help="questions packed at least (default 8)")
    parser.add_argument("--small-images", action="store_true", help="flat-colour JPEGs of ~5 KB, not ~170 KB")
    parser.add_argument("--no-load", action="store_true", help="skip the load measurements")
    parser.add_argument("--keep", default=None, metavar="DIR", help="work in DIR and keep it (source, builds)")
    args = parser.parse_args(argv)
    questions = max(2, math.ceil(args.rows / ROWS_PER_QUESTION))  # two at least: one steady-state question
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.keep or tmp)
        start = time.perf_counter()
        coco = make_coco_like(work / "coco", args.images, small=args.small_images)
        made = time.perf_counter() - start
        pack_questions = max(questions, args.pack_questions)
        lines = [measure_length(label, questions, pack_questions, coco, work / label, not args.no_load)
                 for label in args.lengths]
    print(f"source: {args.images} generated 640x480 JPEGs, {'~5 KB' if args.small_images else '~170 KB'} each "
          f"({made:.0f} s); pack: {pack_questions} questions, build and load: {questions} questions; "
          "MB columns are peak RSS of a fresh process (build s includes the source setup)")
    columns = ["length", "images/row", "pack rows/s", "pack images/s", "pack MB", "rows", "build s", "build rows/s",
               "build MB", "disk MB"] + ([] if args.no_load else ["memory s", "memory MB", "streaming s", "streaming MB"])
    print(table(lines, columns))
    for line in lines:
        if line["length"] == "512k" and not args.no_load:
            print(acceptance(line, args.images))


def acceptance(line: dict, images: int, limit_mb: int = 2048) -> str:
    """Issue #25's check on the 512k line: both loads under ``limit_mb`` peak RSS."""
    peaks = [line.get("memory MB"), line.get("streaming MB")]
    held = all(isinstance(p, str) and p.isdigit() and int(p) < limit_mb for p in peaks)
    return (f"acceptance (#25): vh_single_512k, {line.get('rows')} rows from {images} generated images: peak RSS "
            f"in memory {peaks[0]} MB, streaming {peaks[1]} MB -> {'holds' if held else 'does NOT hold'} "
            f"(< {limit_mb} MB both ways)")


if __name__ == "__main__":
    main()
