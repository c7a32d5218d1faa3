"""Layout benchmark (issue #21): the files layout against the embedded one, at published sizes.

    python -m benchmarks.bench_layout [--images 5000] [--rows-8k 1000] [--rows-128k 200]
                                      [--embedded-rows-8k 120] [--embedded-rows-128k 12] [--keep DIR]

1. A synthetic COCO-like source: ``--images`` distinct JPEGs at COCO's sizes (640x480, 640x427,
   480x640 ...), photo-like content (grainy texture over gradients, a tint, shapes; about 120 KB each,
   COCO val2017 averages ~160 KB) and a COCO ``instances_val2017.json`` with real category names.
2. ``vh_single_8k`` (``--rows-8k``) and ``vh_single_128k`` (``--rows-128k``) built with the real
   builder into one folder in the files layout (they share its image tree), and again at
   ``--embedded-rows-*`` in the embedded layout (full size would be ~10 GB at 128K).
3. Each config loaded in a fresh process (its peak RSS is its own):
   ``memory``: ``load_dataset`` + every row with every image decoded (RSS also after a quarter of
   the rows: flat means the reader holds a bounded window); ``stream``: ``streaming=True`` from the
   folder, every image's bytes fetched (decode=False: the decoding is the model's cost, the same
   in both layouts); ``hub``: the same from a loopback Hub endpoint (``HF_ENDPOINT``, the server of
   tests/loopback_hub.py); ``idioms``: ``cast_column(decode=False)`` and ``map`` on it, ``map`` and
   ``filter`` on decoded images with ``writer_batch_size=4`` (datasets buffers that many rows of
   pixels: its default 1,000 would hold ~60 GB at 128K in either layout), ``select``,
   ``to_pandas()`` of the non-image columns; each with the process's peak RSS so far.
4. The whole MMLongBench (16 datasets x 5 lengths, examples and images per example from
   mmlbdata/paper_stats.yaml) extrapolated from the measured bytes per image and per row.
"""
from __future__ import annotations

import argparse
import io
import json
import math
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._util import table, test_data

# COCO val2017's most common sizes, roughly in their proportions
COCO_SIZES = [(640, 480)] * 6 + [(640, 427)] * 3 + [(480, 640)] * 2 + [(640, 426), (427, 640), (500, 375),
                                                                     (640, 360), (612, 612)]
CATEGORIES = ["person", "bicycle", "car", "dog", "cat", "horse", "bird", "boat", "bus", "train", "cup",
              "chair", "couch", "bed", "clock", "vase", "kite", "pizza", "banana", "laptop"]
LENGTHS = (8192, 16384, 32768, 65536, 131072)
OFFICIAL_RELEASE = "about 1 GB of text + 50+ GB of images (ZhaoweiWang/MMLongBench, sources/registry.yaml)"


# -- 1. source --------------------------------------------------------------------------------------
def _textures(count: int, rng: random.Random) -> list:
    """Photo-like backgrounds: smoothed noise in colour (compresses as a photo does, not as noise)."""
    from PIL import Image, ImageFilter

    textures = []
    for index in range(count):
        bands = [Image.effect_noise((720, 720), 55 + 5 * ((index + b) % 3)) for b in range(3)]
        texture = Image.merge("RGB", bands).filter(ImageFilter.GaussianBlur(0.6))
        shade = Image.merge("RGB", [Image.linear_gradient("L").resize((720, 720)).rotate(rng.choice([0, 90, 180, 270]))
                                    for _ in range(3)])
        textures.append(Image.blend(texture, shade, 0.4))
    return textures


def make_source(root: Path, count: int, seed: int = 0) -> int:
    """``count`` distinct COCO-sized JPEGs + instances annotations under ``root``; their total bytes."""
    from PIL import Image, ImageDraw

    rng = random.Random(seed)
    textures = _textures(8, rng)
    (root / "val2017").mkdir(parents=True, exist_ok=True)
    (root / "annotations").mkdir(parents=True, exist_ok=True)
    images, annotations, total = [], [], 0
    for image_id in range(1, count + 1):
        width, height = COCO_SIZES[image_id % len(COCO_SIZES)]
        x, y = rng.randint(0, 720 - width), rng.randint(0, 720 - height)
        canvas = textures[image_id % len(textures)].crop((x, y, x + width, y + height))
        tint = Image.new("RGB", (width, height), tuple(rng.randint(0, 255) for _ in range(3)))
        canvas = Image.blend(canvas, tint, 0.25)
        draw = ImageDraw.Draw(canvas)
        for category in rng.sample(range(len(CATEGORIES)), rng.choice([1, 2, 2, 3])):
            w, h = rng.randint(60, width // 2), rng.randint(60, height // 2)
            x0, y0 = rng.randint(0, width - w), rng.randint(0, height - h)
            draw.ellipse((x0, y0, x0 + w, y0 + h), fill=tuple(rng.randint(0, 255) for _ in range(3)))
            annotations.append({"id": len(annotations) + 1, "image_id": image_id, "category_id": category + 1,
                                "bbox": [x0, y0, w, h], "area": w * h, "iscrowd": 0})
        name = f"{image_id:012d}.jpg"
        buffer = io.BytesIO()
        canvas.save(buffer, format="JPEG", quality=90)
        (root / "val2017" / name).write_bytes(buffer.getvalue())
        total += buffer.tell()
        images.append({"id": image_id, "file_name": name, "width": width, "height": height})
    categories = [{"id": i + 1, "name": n, "supercategory": "thing"} for i, n in enumerate(CATEGORIES)]
    (root / "annotations" / "instances_val2017.json").write_text(
        json.dumps({"images": images, "annotations": annotations, "categories": categories}))
    return total


# -- 2. builds --------------------------------------------------------------------------------------
def build(config: str, rows: int, source: Path, out: Path, store: Path, tokenizer: Path, layout: str):
    from mmlbdata.build import build_config

    started = time.perf_counter()
    result = build_config(config, {"coco": source}, out, options={"num_questions": math.ceil(rows / 6)},
                          store_root=store, tokenizer=tokenizer, progress=False, layout=layout)
    if not result.ok:
        sys.exit(f"{config} ({layout}): {result.error}")
    return result.stats, time.perf_counter() - started


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


# -- 3. loads, each in a child process --------------------------------------------------------------
def _rss_mb() -> float:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _peak_mb() -> float:
    """This process's peak RSS (VmHWM: ru_maxrss would carry the parent's over fork + exec)."""
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(mode: str, source: str, config: str) -> dict:
    import datasets

    datasets.disable_progress_bars()
    started = time.perf_counter()
    if mode == "memory":
        ds = datasets.load_dataset(source, config, split="test")
        loaded = time.perf_counter() - started
        images, quarter = 0, None
        for index, row in enumerate(ds):
            for image in row["images"]:
                image.load()
                images += 1
            if index + 1 == max(1, len(ds) // 4):
                quarter = _rss_mb()
        return {"rows": len(ds), "images": images, "load_s": loaded, "seconds": time.perf_counter() - started,
                "rss_quarter_mb": quarter, "rss_end_mb": _rss_mb(), "peak_mb": _peak_mb()}
    if mode in ("stream", "hub"):
        from mmlbdata.runner.chat import image_bytes
        from mmlbdata.runner.core import iter_examples

        rows = images = fetched = 0
        for row in iter_examples(source, config):  # what `mmlb run` reads, image bytes fetched as it does
            rows += 1
            for image in row["images"]:
                fetched += len(image_bytes(image))
                images += 1
        seconds = time.perf_counter() - started
        return {"rows": rows, "images": images, "bytes": fetched, "seconds": seconds, "rows_s": rows / seconds,
                "peak_mb": _peak_mb()}
    if mode == "idioms":
        ds = datasets.load_dataset(source, config, split="test")
        done = {}
        raw = ds.cast_column("images", datasets.List(datasets.Image(decode=False)))
        # map/filter on *decoded* images buffer writer_batch_size rows of pixels (datasets' default
        # 1,000: ~300 MB a 128K row), whatever the layout: bounded here as README advises
        for name, step in (
            ("cast", lambda: raw[0]),
            ("map", lambda: raw.map(lambda r: {"n": len(r["images"])})["n"]),
            ("map_decoded", lambda: ds.map(lambda r: {"w": r["images"][0].width}, writer_batch_size=4)["w"]),
            ("filter", lambda: ds.filter(lambda r: len(r["images"]) > 0, batch_size=4, writer_batch_size=4).num_rows),
            ("select", lambda: ds.select(range(0, len(ds), 7))[0]["id"]),
            ("to_pandas", lambda: ds.remove_columns("images").to_pandas().shape),
        ):
            try:
                step()
                done[name] = f"ok({_peak_mb() / 1024:.1f}G)"
            except Exception as err:  # noqa: BLE001 - the table says which idiom failed and why
                done[name] = f"{type(err).__name__}"
        return {"idioms": done, "seconds": time.perf_counter() - started, "peak_mb": _peak_mb()}
    raise SystemExit(f"unknown mode {mode}")


def run_child(mode: str, source: str, config: str, env: dict) -> dict:
    command = [sys.executable, "-m", "benchmarks.bench_layout", "--child", mode, source, config]
    done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, **env})
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or ["?"])[-1][:80]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def repo_files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and not p.name.startswith(".")}


# -- 4. extrapolation -------------------------------------------------------------------------------
def extrapolate(per_image: float, meta_row: dict, embedded_copies: float, reuse: float) -> list[dict]:
    """Bytes of the whole MMLongBench in each layout from the measured unit sizes.

    ``files``: each distinct image once. A dataset's shorter lengths draw their images from the
    pools its 128K examples draw from (VH's seeded pools: 8K's distractors are a prefix of 128K's),
    so distinct images ~ the 128K slots (low) and at most every slot of every length (high); VH
    slots are divided by ``reuse`` (its six depths share one haystack, measured). Plus metadata
    per row, interpolated by length. ``embedded``: every slot stored, VH's divided by
    ``reuse / embedded_copies`` (the measured copies per distinct image, one per row group).
    Examples that share a pool (ICL demonstrations, pages of one document) make both smaller;
    the paper gives no pool sizes, so neither figure counts that sharing.
    """
    import yaml

    stats = yaml.safe_load((Path(__file__).resolve().parents[1] / "mmlbdata" / "paper_stats.yaml").read_text())
    bench = next(b for b in stats if b["benchmark"] == "MMLongBench")
    niah = {"Ret": 1200, "Count": 1178, "Reason": 1158}  # Table 2, text and image needles together
    rows = []
    for dataset in bench["datasets"]:
        examples = dataset["examples"] or niah[dataset["name"].split("-")[2].split()[0]] / 2
        vh = dataset["name"].startswith("VH")
        share = reuse if vh else 1.0
        slots = [examples * n for n in dataset["images"]]
        meta = sum(examples * (meta_row[8192] + (meta_row[131072] - meta_row[8192]) * (L - 8192) / (131072 - 8192))
                   for L in LENGTHS)
        rows.append({"dataset": dataset["name"], "slots": sum(slots),
                     "files_low": slots[-1] / share * per_image + meta,
                     "files_high": sum(slots) / share * per_image + meta,
                     "embedded": sum(slots) / share * (embedded_copies if vh else 1.0) * per_image + meta})
    return rows


def gb(n: float) -> str:
    return f"{n / 1e9:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--child", nargs=3, metavar=("MODE", "SOURCE", "CONFIG"), help=argparse.SUPPRESS)
    parser.add_argument("--images", type=int, default=5000)
    parser.add_argument("--rows-8k", type=int, default=1000)
    parser.add_argument("--rows-128k", type=int, default=200)
    parser.add_argument("--embedded-rows-8k", type=int, default=120)
    parser.add_argument("--embedded-rows-128k", type=int, default=12)
    parser.add_argument("--keep", type=Path, default=None, help="work here and keep the folders")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(*args.child)))
        return
    tokenizer = Path(os.environ.get("MMLB_TOKENIZER") or test_data() / "llama2" / "tokenizer.model")
    work = args.keep or Path(tempfile.mkdtemp(prefix="bench_layout-"))
    source = work / "coco"
    started = time.perf_counter()
    distinct = make_source(source, args.images) if not source.is_dir() else folder_bytes(source / "val2017")
    print(f"source: {args.images} JPEGs, {distinct / 1e6:.1f} MB ({time.perf_counter() - started:.0f} s)",
          flush=True)

    sizes = {"files": {"vh_single_8k": args.rows_8k, "vh_single_128k": args.rows_128k},
             "embedded": {"vh_single_8k": args.embedded_rows_8k, "vh_single_128k": args.embedded_rows_128k}}
    built, results = {}, []
    for layout, configs in sizes.items():
        out = work / layout
        for config, rows in configs.items():
            stats, seconds = build(config, rows, source, out, work / "store", tokenizer, layout)
            built[(layout, config)] = stats
            print(f"built {layout} {config}: {stats.num_rows} rows, {stats.num_images} slots, "
                  f"{stats.num_unique_images} distinct, {seconds:.0f} s", flush=True)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from loopback_hub import LoopbackHub

    hf_home = work / "hf_home"
    for layout, configs in sizes.items():
        out = work / layout
        repo = f"bench/{layout}"
        with LoopbackHub(repos={repo: repo_files(out)}) as hub:
            env = {"HF_ENDPOINT": hub.endpoint, "HF_HOME": str(hf_home / layout), "HF_HUB_OFFLINE": "0",
                   "HF_DATASETS_OFFLINE": "0", "HF_DATASETS_CACHE": str(hf_home / layout / "datasets")}
            for config in configs:
                stats = built[(layout, config)]
                row = {"layout": layout, "config": config, "rows": stats.num_rows, "slots": stats.num_images,
                       "distinct_MB": f"{stats.image_bytes_unique / 1e6:.0f}"}
                modes = ("memory", "stream", "hub", "idioms") if layout == "files" else ("stream", "hub")
                for mode in modes:
                    measured = run_child(mode, repo if mode == "hub" else str(out), config, env)
                    print(f"  {layout} {config} {mode}: {measured}", flush=True)
                    row[mode] = measured
                results.append(row)
        built[(layout, "folder_bytes")] = folder_bytes(out)

    print()
    lines = []
    for row in results:
        memory, idioms = row.get("memory", {}), row.get("idioms", {}).get("idioms", {})
        layout_stats = built[(row["layout"], row["config"])]
        lines.append({
            "layout": row["layout"], "config": row["config"], "rows": row["rows"], "slots": row["slots"],
            "distinct_MB": row["distinct_MB"],
            "config_MB": f"{layout_stats.num_bytes / 1e6:.0f}",
            "mem_peak_MB": f"{memory['peak_mb']:.0f}" if "peak_mb" in memory else "-",
            "rss_25%/100%_MB": f"{memory['rss_quarter_mb']:.0f}/{memory['rss_end_mb']:.0f}" if memory.get("rss_end_mb") else "-",
            "mem_s": f"{memory['seconds']:.0f}" if "seconds" in memory else "-",
            "stream_rows/s": f"{row['stream'].get('rows_s', 0):.1f}",
            "hub_rows/s": f"{row['hub'].get('rows_s', 0):.1f}",
            "stream_img/s": f"{row['stream'].get('images', 0) / max(row['stream'].get('seconds', 1), 1e-9):.0f}",
            "hub_img/s": f"{row['hub'].get('images', 0) / max(row['hub'].get('seconds', 1), 1e-9):.0f}",
            "idioms": ",".join(f"{k}:{v}" for k, v in idioms.items()) if idioms else "-",
        })
    print(table(lines, list(lines[0])))
    files_bytes = built[("files", "folder_bytes")]
    used = sum(built[("files", c)].image_bytes_unique for c in sizes["files"])
    union = folder_bytes(work / "files" / "images")
    meta = sum(built[("files", c)].metadata_bytes for c in sizes["files"])
    print(f"\nfiles folder: {files_bytes / 1e6:.1f} MB on disk = images {union / 1e6:.1f} MB (distinct over both "
          f"configs; per-config distinct summed: {used / 1e6:.1f} MB) + metadata {meta / 1e6:.2f} MB + README/"
          f"manifests; ratio to distinct image bytes + metadata: {files_bytes / (union + meta):.3f}")
    print(f"embedded folder at {sizes['embedded']} rows: {built[('embedded', 'folder_bytes')] / 1e6:.1f} MB")

    emb = [built[("embedded", c)] for c in sizes["embedded"]]
    fil = {L: built[("files", c)] for L, c in ((8192, "vh_single_8k"), (131072, "vh_single_128k"))}
    per_image = union / max(1, len(list((work / "files" / "images").rglob("*.jpg"))))
    meta_row = {L: s.metadata_bytes / s.num_rows for L, s in fil.items()}
    reuse = sum(s.num_images for s in fil.values()) / sum(s.num_unique_images for s in fil.values())
    copies = sum(s.num_bytes for s in emb) / sum(s.image_bytes_unique for s in emb)
    rows = extrapolate(per_image, meta_row, copies, reuse)
    print(f"\nWhole MMLongBench, extrapolated ({per_image / 1e3:.0f} KB per image as measured here, metadata "
          f"{meta_row[8192] / 1e3:.1f}-{meta_row[131072] / 1e3:.1f} KB per row, VH slots per distinct image "
          f"{reuse:.1f}, embedded VH copies per distinct image {copies:.1f}; pools shared across examples "
          f"not counted, see extrapolate()):")
    total = {k: sum(r[k] for r in rows) for k in ("slots", "files_low", "files_high", "embedded")}
    shown = [{"dataset": r["dataset"], "slots": f"{r['slots']:,.0f}", "files_GB": f"{gb(r['files_low'])}-{gb(r['files_high'])}",
              "embedded_GB": gb(r["embedded"])} for r in rows]
    shown.append({"dataset": "total", "slots": f"{total['slots']:,.0f}",
                  "files_GB": f"{gb(total['files_low'])}-{gb(total['files_high'])}", "embedded_GB": gb(total["embedded"])})
    print(table(shown, ["dataset", "slots", "files_GB", "embedded_GB"]))
    print(f"official release: {OFFICIAL_RELEASE}")
    print(f"(work folder: {work})")


if __name__ == "__main__":
    main()
