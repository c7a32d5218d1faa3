"""Layout benchmark (issue #21): the files layout against the embedded one, at published sizes.

    python -m benchmarks.bench_layout [--images 5000] [--rows-8k 1000] [--rows-128k 200]
                                      [--embedded-rows-8k 120] [--embedded-rows-128k 12] [--keep DIR]
    python -m benchmarks.bench_layout --extrapolate-only [--per-image BYTES]

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
   mmlbdata/dataset/paper_stats.yaml) in the files layout: per dataset the distinct images the recipe
   draws (min of its references and the source pool it draws from, with the sharing across lengths
   and rows that the builders have; ``extrapolate()`` says how, the printout names each pool and
   where its number comes from), at per-kind bytes (JPEG photos as measured in 1., COCO val2017,
   PDF pages rendered at 144 DPI as the store writes them, LongDocURL's upscaled page PNGs, each
   ICL source), next to the upper bound of one copy per reference and the official release.
   ``--extrapolate-only`` runs this part alone (seconds; needs only the test data).
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
    from mmlbdata.dataset.build import build_config

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
# What the files layout stores for the whole MMLongBench: each distinct image once per repository,
# so per dataset min(references, the pool the recipe draws from), with the sharing the recipe has
# across lengths and rows. Every pool below names where its number comes from.
LENGTH_KEYS = ("8k", "16k", "32k", "64k", "128k")
NIAH_ROWS = {"Ret": 1200, "Count": 1178, "Reason": 1158}  # Table 2, text and image needles together
# rows per question in the builders: depths 0..1 (6) or 3 seeded permutations
PLACEMENTS = {"InfoSeek": 3, "ViQuAE": 6, "VH-Single": 6, "VH-Multi": 3, "MM-NIAH-Ret (T)": 6,
              "MM-NIAH-Ret (I)": 6, "MM-NIAH-Count (T)": 3, "MM-NIAH-Count (I)": 3,
              "MM-NIAH-Reason (T)": 3, "MM-NIAH-Reason (I)": 6}
FAMILY = {"InfoSeek": "VRAG", "ViQuAE": "VRAG", "VH-Single": "VH", "VH-Multi": "VH",
          "Stanford Cars": "ICL", "Food101": "ICL", "SUN397": "ICL", "iNat2021": "ICL",
          "GovReport": "Summ", "Multi-LexSum": "Summ", "MMLongBench-Doc": "DocVQA",
          "LongDocURL": "DocVQA", "SlideVQA": "DocVQA"}
COCO_VAL2017 = (5000, 815_585_330)  # images, val2017.zip bytes (sources/registry.yaml)
# ICL: (exemplar images per class, test images per class, domains, bytes per image, where from)
ICL_POOLS = {
    "Stanford Cars": (8144 / 196, 8041 / 196, 1, 1.9e9 / 16185,
                      "8,144 train / 8,041 test images of 196 classes (Krause et al. 2013); registry 1.9 GB"),
    "Food101": (750, 250, 1, 5e9 / 101000, "750 train / 250 test per class (Bossard et al. 2014); registry 5 GB"),
    "SUN397": (50, 50, 1, 8e9 / 39700, "tanganke/sun397: 19,850 train / 19,850 test rows (Hub viewer), 50+50 "
                                       "per class; registry 8 GB"),
    "iNat2021": (50, 10, 2, 42e9 / 500000, "train_mini 50 / val 10 per species, 50 Birds + 50 Plants species "
                                           "(paper B.3); registry 42 GB for 500k train_mini images"),
}
# DocVQA: the pages of the split the padding draws from: (pool pages, kind, where from)
DOC_POOLS = {
    "MMLongBench-Doc": (round(135 * 47.5), "page",
                        "135 documents x 47.5 pages (MMLongBench-Doc paper Sec. 3, Table 2)"),
    "LongDocURL": (33000, "page_x2", "'more than 33,000 pages' (LongDocURL abstract, arXiv 2412.18424; not in "
                                     "shared/papers); 72-DPI PNGs upscaled x2 (the registry fetches no PDFs)"),
    "SlideVQA": (300 * 20, "slide", "test split 300 decks x 20 slides (SlideVQA, Tanaka et al. 2023, recalled: "
                                    "not in shared/papers; all 2,619 decks would be 52k); slide JPEGs"),
}
# used where nothing is measured: photo, the full run's mean JPEG (ARCHITECTURE.md); ref_meta,
# vh_single_8k's metadata parquet per image reference (the full run's is ~5 B); the rest only
# without the test data
DEFAULTS = {"photo": 104e3, "page": 230e3, "page_x2": 679e3, "ref_meta": 6.6, "chars_per_token": 3.9,
            "zstd_text": 0.40}
NIAH_IMAGE_TOKENS = 300  # MMLongBench B.1: MM-NIAH images "contain only a few hundred tokens"
FILES_PER_CONFIG = 2  # <config>.metadata.parquet + manifests/<config>.json (+ one README)
HUB_FILES_GUIDANCE = 100_000


def measure_units(photo: float | None = None, ref_meta: float | None = None) -> dict:
    """Bytes per image of each kind, metadata bytes per image reference, text bytes per token.

    ``photo``: JPEG photos (the synthetic COCO-like source's measured mean, else the last full run's
    figure). ``page``: a PDF page rendered at 144 DPI as the store writes it (PNG), over pages of
    the test data's MMLongBench-Doc PDFs. ``page_x2``: a LongDocURL 72-DPI page PNG upscaled to
    144 DPI as ``ScaledImageDocument`` writes it. ``chars_per_token`` and ``zstd_text``: the
    Llama 2 tokenizer and zstd parquet on WikiText passages."""
    import statistics

    units = dict(DEFAULTS)
    units["source"] = {k: "default" for k in DEFAULTS}
    units["source"]["photo"] = "the full run's figure"
    if photo:
        units["photo"], units["source"]["photo"] = photo, "measured"
    if ref_meta:
        units["ref_meta"], units["source"]["ref_meta"] = ref_meta, "measured"
    root = Path(os.environ.get("MMLB_TEST_DATA") or Path(__file__).resolve().parents[2] / "shared" / "data")
    rng = random.Random(0)
    pdfs = sorted((root / "mmlongbench_doc" / "documents").glob("*.pdf"))
    if pdfs:
        from mmlbdata.media import pdf

        sizes = []
        for path in pdfs:
            with pdf.open_pdf(path) as doc:
                count = doc.page_count
            sizes += [len(pdf.render_page_png(path, i, 144)) for i in rng.sample(range(count), min(3, count))]
        units["page"], units["source"]["page"] = statistics.mean(sizes), f"measured ({len(sizes)} pages)"
    pngs = sorted((root / "longdocurl_sample" / "pdf_pngs").rglob("*.png"))
    if pngs:
        from PIL import Image

        from mmlbdata.media.documents import _resized_png

        sizes = []
        for path in rng.sample(pngs, min(16, len(pngs))):
            with Image.open(path) as image:
                width, height = image.size
            sizes.append(len(_resized_png(path, (2 * width, 2 * height))))
        units["page_x2"], units["source"]["page_x2"] = statistics.mean(sizes), f"measured ({len(sizes)} pages)"
    wiki = root / "text" / "wikitext2_raw_wiki.test.raw"
    tokenizer = root / "llama2" / "tokenizer.model"
    if wiki.is_file():
        import pyarrow as pa
        import pyarrow.parquet as pq

        words = wiki.read_text().split()
        passages = [" ".join(words[i:i + 100]) for i in range(0, len(words), 100)]
        buffer = io.BytesIO()
        pq.write_table(pa.table({"p": passages}), buffer, compression="zstd")
        units["zstd_text"] = buffer.tell() / sum(len(p.encode()) for p in passages)
        units["source"]["zstd_text"] = "measured"
        if tokenizer.is_file():
            import sentencepiece

            encoded = sentencepiece.SentencePieceProcessor(model_file=str(tokenizer)).encode(passages[:2000])
            units["chars_per_token"] = sum(len(p) for p in passages[:2000]) / sum(len(e) for e in encoded)
            units["source"]["chars_per_token"] = "measured"
    return units


def _cover(pool: float, draws: float) -> float:
    """Expected distinct images after ``draws`` uniform draws from ``pool`` (<= min(draws, pool))."""
    return pool * (1 - math.exp(-draws / pool)) if pool else 0.0


def _icl(name: str, examples: int, images: list[float]) -> tuple[float, float]:
    """Distinct (exemplar + test) images of one ICL dataset, and its pool.

    mmlb_builders/icl.py: 50 classes per domain drawn once, the first 5/10/20/40/50 used at 8K..128K;
    each example's exemplars are a fresh seeded shuffle of each class's train images (seeded by the
    length too, so lengths draw independently); test image k of a length is image k // n of class
    k % n in a per-class order that does not depend on the length (so the lengths share a prefix).
    """
    from mmlb_builders.icl import CLASS_COUNTS, MAX_CLASSES

    train, test, domains, _, _ = ICL_POOLS[name]
    counts = [CLASS_COUNTS[key] for key in LENGTH_KEYS]
    per_domain = examples / domains
    exemplars = tests = 0.0
    for c in range(MAX_CLASSES):
        miss = 1.0
        for n, imgs in zip(counts, images):
            if c < n:
                k = min(train, (imgs - 1) / n)  # exemplars of one class in one example
                miss *= (1 - k / train) ** per_domain
        exemplars += train * (1 - miss)
        tests += min(test, max(math.ceil(per_domain / n) for n in counts if c < n))
    distinct = domains * (exemplars + tests)
    return distinct, domains * MAX_CLASSES * (train + test)


def extrapolate(units: dict) -> list[dict]:
    """One row per MMLongBench dataset: references, distinct images the files layout stores, bytes.

    ``refs``: every image reference of every row at 8K..128K (Table 2 rows x Table 3 images per
    row): what a layout storing one copy per reference would hold, the upper bound. ``distinct``:
    what ``images/<family>/<sha256>`` holds, from how the builder draws its images:

    * VRAG (mmlb_builders/vrag.py): one image per question, its rows (3 or 6 placements) and the five
      lengths share it (one question set): rows / placements.
    * VH (mmlb_builders/vh.py): questions drawn once for all lengths, each question's distractor order
      fixed (8K's haystack a prefix of 128K's): per question its 128K images; every question of
      VH-Single and VH-Multi shuffles the same COCO val2017 (5,000 images), so the family covers
      at most that pool (expected coverage of uniform draws).
    * MM-NIAH (mmlb_builders/mmniah.py): a haystack is the record's own units, then the following
      records' (in file order); lengths are prefixes, placements share it: per record its 128K
      images. Neighbouring records' windows overlap (not counted), so this is an upper estimate.
    * ICL (mmlb_builders/icl.py): see ``_icl``; pools from the sources' published splits.
    * Summ (mmlb_builders/summ.py): one document set for all lengths, pages cut from the end (GovReport)
      or evenly from the ends (Multi-LexSum): shorter lengths are subsets: the 128K pages.
    * DocVQA (mmlb_builders/docvqa.py, mmlbdata/dataset/docpack.py): one question set, the same seeded padding
      order at every length (shorter windows inside longer ones): the 128K pages of each question,
      capped at the pages of the split the padding draws from (min: questions on one document
      overlap, so the true figure is lower).

    Metadata: ``ref_meta`` bytes per image reference (the measured VH parquet), plus the prompt text
    of the text-heavy families (VRAG: the whole length; MM-NIAH: the length less its images at
    ``NIAH_IMAGE_TOKENS`` each) at ``chars_per_token`` x ``zstd_text``.
    """
    import yaml

    stats = yaml.safe_load((Path(__file__).resolve().parents[1] / "mmlbdata" / "dataset" / "paper_stats.yaml").read_text())
    bench = next(b for b in stats if b["benchmark"] == "MMLongBench")
    text_byte = units["chars_per_token"] * units["zstd_text"]
    rows = []
    for dataset in bench["datasets"]:
        name, images = dataset["name"], dataset["images"]
        niah = name.startswith("MM-NIAH")
        examples = dataset["examples"] or NIAH_ROWS[name.split("-")[2].split()[0]] / 2
        refs = sum(examples * n for n in images)
        family = "MM-NIAH" if niah else FAMILY[name]
        kind, bytes_each = "photo", units["photo"]
        if family == "VRAG":
            distinct, pool = examples / PLACEMENTS[name], None
            note = f"1 image per question, {PLACEMENTS[name]} rows per question, shared by all lengths"
        elif family == "VH":
            pool = COCO_VAL2017[0]
            distinct = pool * (1 - (1 - min(pool, images[-1]) / pool) ** (examples / PLACEMENTS[name]))
            kind, bytes_each = "coco", COCO_VAL2017[1] / COCO_VAL2017[0]
            note = "per question its 128K haystack; COCO val2017 5,000 images shared with the other VH dataset"
        elif niah:
            distinct, pool = examples / PLACEMENTS[name] * images[-1], None
            note = f"per record its 128K haystack ({PLACEMENTS[name]} rows per record); upper: neighbours overlap"
        elif family == "ICL":
            distinct, pool = _icl(name, examples, images)
            kind, bytes_each = name, ICL_POOLS[name][3]
            note = ICL_POOLS[name][4]
        elif family == "Summ":
            distinct, pool, kind, bytes_each = examples * images[-1], None, "page", units["page"]
            note = "one document set; shorter lengths are subsets of the 128K pages"
        else:
            pool, kind, note = DOC_POOLS[name]
            bytes_each = units["photo" if kind == "slide" else kind]
            distinct = min(examples * images[-1], pool)
        text_tokens = 0.0
        if family == "VRAG":
            text_tokens = examples * sum(LENGTHS)
        elif niah:
            text_tokens = examples * sum(max(0, L - n * NIAH_IMAGE_TOKENS) for L, n in zip(LENGTHS, images))
        meta = refs * units["ref_meta"] + text_tokens * text_byte
        rows.append({"family": family, "dataset": name, "rows": examples * len(LENGTHS), "refs": refs,
                     "per_question": images[-1],
                     "distinct": distinct, "pool": pool, "kind": kind, "bytes_each": bytes_each, "meta": meta,
                     "note": note})
    return rows


def families(rows: list[dict]) -> list[dict]:
    """Per family: distinct images (VH: the two datasets' draws covering one COCO pool), bytes, files."""
    out = {}
    for row in rows:
        fam = out.setdefault(row["family"], {"family": row["family"], "datasets": 0, "rows": 0, "refs": 0.0,
                                             "distinct": 0.0, "image_bytes": 0.0, "upper_bytes": 0.0, "meta": 0.0})
        fam["datasets"] += 1
        fam["rows"] += row["rows"]
        fam["refs"] += row["refs"]
        fam["meta"] += row["meta"]
        fam["upper_bytes"] += row["refs"] * row["bytes_each"]
        if row["family"] != "VH":
            fam["distinct"] += row["distinct"]
            fam["image_bytes"] += row["distinct"] * row["bytes_each"]
    vh = [r for r in rows if r["family"] == "VH"]
    pool, size = COCO_VAL2017
    # each question shuffles the pool and takes its 128K haystack: (questions, images per question)
    questions = [(r["rows"] / len(LENGTHS) / PLACEMENTS[r["dataset"]], r["per_question"]) for r in vh]
    miss = math.prod((1 - min(pool, k) / pool) ** q for q, k in questions)
    out["VH"]["distinct"] = pool * (1 - miss)
    out["VH"]["image_bytes"] = out["VH"]["distinct"] * size / pool
    for fam in out.values():
        fam["configs"] = fam["datasets"] * len(LENGTHS)
        fam["files"] = fam["distinct"] + FILES_PER_CONFIG * fam["configs"]
        fam["bytes"] = fam["image_bytes"] + fam["meta"]
    return list(out.values())


def print_extrapolation(units: dict) -> dict:
    rows = extrapolate(units)
    fams = families(rows)
    src = units["source"]
    print("\nWhole MMLongBench in the files layout (16 datasets x 8K..128K, Table 2 rows, Table 3 images per row)")
    print(f"bytes per image: photo {units['photo'] / 1e3:.0f} KB ({src['photo']}), COCO val2017 "
          f"{COCO_VAL2017[1] / COCO_VAL2017[0] / 1e3:.0f} KB (registry zip / 5,000), PDF page at 144 DPI (PNG) "
          f"{units['page'] / 1e3:.0f} KB ({src['page']}), LongDocURL page upscaled to 144 DPI (PNG) "
          f"{units['page_x2'] / 1e3:.0f} KB ({src['page_x2']}); ICL per source (registry size / images); "
          f"metadata {units['ref_meta']:.1f} B per reference ({src['ref_meta']}) + prompt text "
          f"{units['chars_per_token']:.2f} chars/token x zstd {units['zstd_text']:.2f}")
    print("\nAssumptions (pool the recipe draws from, where the number comes from):")
    print(table([{"dataset": r["dataset"], "pool": "-" if r["pool"] is None else f"{r['pool']:,.0f}",
                  "kind": r["kind"], "how": r["note"]} for r in rows], ["dataset", "pool", "kind", "how"]))
    print("\nPer dataset:")
    print(table([{"dataset": r["dataset"], "rows": f"{r['rows']:,.0f}", "refs (upper)": f"{r['refs']:,.0f}",
                  "distinct": f"{r['distinct']:,.0f}" + (" *" if r["family"] == "VH" else ""),
                  "KB/img": f"{r['bytes_each'] / 1e3:.0f}", "images_GB": gb(r["distinct"] * r["bytes_each"]),
                  "upper_GB": gb(r["refs"] * r["bytes_each"]), "meta_GB": gb(r["meta"])} for r in rows],
                ["dataset", "rows", "refs (upper)", "distinct", "KB/img", "images_GB", "upper_GB", "meta_GB"]))
    print("  * this dataset alone; VH-Single and VH-Multi draw from one COCO val2017 pool, stored once "
          "(per family below)")
    total = {k: sum(f[k] for f in fams) for k in ("rows", "refs", "distinct", "image_bytes", "meta", "bytes",
                                                   "upper_bytes", "files", "configs")}
    shown = [{"family": f["family"], "configs": f["configs"], "refs (upper)": f"{f['refs']:,.0f}",
              "distinct images": f"{f['distinct']:,.0f}", "images_GB": gb(f["image_bytes"]),
              "meta_GB": gb(f["meta"]), "GB": gb(f["bytes"]), "upper_GB": gb(f["upper_bytes"] + f["meta"]),
              "files": f"{f['files']:,.0f}"} for f in fams]
    shown.append({"family": "total", "configs": total["configs"], "refs (upper)": f"{total['refs']:,.0f}",
                  "distinct images": f"{total['distinct']:,.0f}", "images_GB": gb(total["image_bytes"]),
                  "meta_GB": gb(total["meta"]), "GB": gb(total["bytes"]),
                  "upper_GB": gb(total["upper_bytes"] + total["meta"]), "files": f"{total['files'] + 1:,.0f}"})
    print("\nPer family (files = distinct images + metadata parquet and manifest per config; + README):")
    print(table(shown, list(shown[0])))
    print(f"\nrepository: {gb(total['bytes'])} GB in {total['files'] + 1:,.0f} files (Hub guidance: under "
          f"{HUB_FILES_GUIDANCE:,} files per repository); upper bound (every reference stored): "
          f"{gb(total['upper_bytes'] + total['meta'])} GB; official release: {OFFICIAL_RELEASE}")
    return total


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
    parser.add_argument("--extrapolate-only", action="store_true",
                        help="only part 4 (seconds): page, text and metadata units measured from the test data, "
                             "photos at --per-image bytes")
    parser.add_argument("--per-image", type=float, default=None,
                        help="bytes per JPEG photo for --extrapolate-only (default: the last full run's 104 KB)")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(*args.child)))
        return
    if args.extrapolate_only:
        print_extrapolation(measure_units(photo=args.per_image))
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

    images_root = work / "files" / "images"
    per_image = union / max(1, len(list(images_root.rglob("*.jpg"))))
    fil = [built[("files", c)] for c in sizes["files"]]
    ref_meta = sum(s.metadata_bytes for s in fil) / max(1, sum(s.num_images for s in fil))
    print_extrapolation(measure_units(photo=per_image, ref_meta=ref_meta))
    print(f"(work folder: {work})")


if __name__ == "__main__":
    main()
