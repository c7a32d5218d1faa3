"""What a full rebuild costs: per-unit rates of every family on the shared samples, scaled to the
published sizes of the full sources.

    python -m benchmarks.bench_full_build [--rows 2] [--needles 4] [--frames 32]

Each family is built (one process, cold image store, real Llama-2 tokenizer) on the real samples
in ``$MMLB_TEST_DATA``; the cost is **CPU seconds** (this process and its children), which
other jobs on shared cores do not inflate the way wall time is. A row's cost grows with its
length, so families with lengths are measured at 8K and 32K and the cost per row is taken as
linear in the length between and beyond them. The full sizes (papers in ../shared/papers):

* MMLongBench: 13,331 examples (Table 2), every one delivered at 5 lengths (8K-128K);
* MMNeedle: 21 (M, N, K) settings x 10,000 samples, over 10,000 stitched grids per N;
* MMLongBench-Doc: 1,082 questions on 135 PDFs of 47.5 pages on average (6,413 pages);
  rendered pages and stitched grids are made once and shared through the image store, so they
  are costed apart from rows (a cold build minus a warm rebuild of the same config);
* ReadBench: up to 35 examples per subset (184 configs), long contexts ~12 pages at 8K;
* LongVideoBench: 3,763 videos, frames sampled at 64 and 256 per video (320 decoded).

Families whose sources have no shared sample (MM-NIAH, visual RAG, summarization) are
estimated with the per-row cost of the nearest measured family and marked as such.
Wall time assumes the work spreads over the cores (configs as Ray tasks or processes, and
inside a config its pages, grids and frames), i.e. CPU time / cores.
"""
from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from benchmarks._util import table, test_data

LENGTHS = (8192, 16384, 32768, 65536, 131072)
HOUR = 3600.0


def cpu_seconds() -> float:
    """User + system CPU of this process and its finished children (worker pools)."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


@dataclass
class Measured:
    rows: int
    images: int
    cpu: float
    wall: float


def build(config: str, sources: dict, limit: int, tokenizer: Path, store: Path, **options) -> Measured:
    """Build one config into a scratch folder and measure it."""
    from mmlbdata.dataset.build import build_config

    with tempfile.TemporaryDirectory() as out:
        cpu, wall = cpu_seconds(), time.perf_counter()
        result = build_config(config, sources, out, limit=limit, options=options, store_root=store,
                              tokenizer=tokenizer, progress=False)
        cpu, wall = cpu_seconds() - cpu, time.perf_counter() - wall
    if not result.ok:
        sys.exit(f"{config}: {result.error}")
    return Measured(result.stats.num_rows, result.stats.num_images, cpu, wall)


def cold_warm(config: str, sources: dict, limit, tokenizer: Path, store: Path, **options) -> tuple[float, Measured]:
    """Build twice into one store: the first renders/stitches every image (cold), the second finds
    them stored (warm). Returns CPU seconds per image made and the warm measurement."""
    cold = build(config, sources, limit, tokenizer, store, **options)
    warm = build(config, sources, limit, tokenizer, store, **options)
    return max(cold.cpu - warm.cpu, 0) / max(cold.images, 1), warm


def per_row_by_length(config: str, sources: dict, limit: int, tokenizer: Path, tmp: Path, **options) -> dict:
    """CPU seconds per row at each of the five lengths, from builds at 8K and 32K (cold stores)."""
    small = build(f"{config}_8k", sources, limit, tokenizer, tmp / f"{config}8", **options)
    large = build(f"{config}_32k", sources, limit, tokenizer, tmp / f"{config}32", **options)
    a, b = small.cpu / max(small.rows, 1), large.cpu / max(large.rows, 1)
    slope = (b - a) / (32768 - 8192)
    per_row = {length: max(a + slope * (length - 8192), a) for length in LENGTHS}
    return {"per_row": per_row, "rate": f"{(small.rows + large.rows) / (small.cpu + large.cpu):.2f} rows/s",
            "units": f"{(small.images + large.images) / (small.cpu + large.cpu):.1f} images/s"}


def documents(data: Path, tok: Path, tmp: Path, rows: int) -> dict:
    """Document QA: a page is rendered once (the store) whatever the number of questions and
    lengths using it, so pages and rows are costed apart: 6,413 MMLongBench-Doc pages rendered
    at 144 DPI (LongDocURL and SlideVQA ship page images), plus the warm per-row packing cost."""
    src = {"mmlongbench_doc": data / "mmlongbench_doc"}
    per_page, small = cold_warm("mmlongdoc_8k", src, rows, tok, tmp / "doc")
    per_page_large, large = cold_warm("mmlongdoc_32k", src, rows, tok, tmp / "doc")
    per_page = max(per_page, per_page_large)
    a, b = small.cpu / max(small.rows, 1), large.cpu / max(large.rows, 1)
    slope = (b - a) / (32768 - 8192)
    return {"per_row": {length: max(a + slope * (length - 8192), a) for length in LENGTHS},
            "pages_cpu": 6413 * per_page, "rate": f"{(small.rows + large.rows) / (small.cpu + large.cpu):.2f} rows/s",
            "units": f"{1 / max(per_page, 1e-9):.1f} pages/s"}


def lengths_total(per_row: dict, examples: int) -> float:
    return sum(per_row[length] * examples for length in LENGTHS)


# -- families -----------------------------------------------------------------------------------
def mmlongbench(data: Path, tok: Path, tmp: Path, rows: int) -> list[dict]:
    coco = {"coco": data / "coco_mini"}
    vh = per_row_by_length("vh_single", coco, rows, tok, tmp)
    doc = documents(data, tok, tmp, rows)
    icl = per_row_by_length("food101", {"food101": data / "images" / "hymenoptera_val"}, rows, tok, tmp,
                            num_classes=2)
    return [
        row("MMLongBench", "vh (VH-Single, VH-Multi)", vh, 2000, 1000),
        {**row("MMLongBench", "docvqa (MMLongBench-Doc, LongDocURL, SlideVQA)", doc, 961 + 1153 + 1064, 1153),
         "cpu": lengths_total(doc["per_row"], 961 + 1153 + 1064) + doc["pages_cpu"],
         "largest": 1153 * doc["per_row"][131072] + doc["pages_cpu"]},
        row("MMLongBench", "icl (Cars, Food101, SUN397, iNat)", icl, 458 + 500 * 3, 500),
        row("MMLongBench", "mmniah (Ret, Count, Reason) ~vh*", vh, 1200 + 1178 + 1158, 1200),
        row("MMLongBench", "vrag (InfoSeek, ViQuAE) ~vh*", vh, 1128 + 1144, 1144),
        row("MMLongBench", "summ (GovReport, Multi-LexSum) ~docvqa*", doc, 241 + 146, 241),  # rows only: few pages
    ]


def row(benchmark: str, family: str, measured: dict, examples: int, largest_dataset: int) -> dict:
    """A family of ``examples`` at five lengths; its largest config is its largest dataset at 128K."""
    return {"benchmark": benchmark, "family": family, "rate": measured["rate"], "unit rate": measured["units"],
            "full size": f"{examples:,} x 5 lengths", "cpu": lengths_total(measured["per_row"], examples),
            "largest": largest_dataset * measured["per_row"][131072]}


def mmneedle(data: Path, tok: Path, tmp: Path, needles: int) -> list[dict]:
    """Grids are stitched once per N and shared through the store by every config using them, so a
    full build costs 10,000 grids per N plus 21 x 10,000 samples drawn over stored grids. Each
    M = 10 config is built twice: cold (stitching its grids) and warm (every grid stored); the
    difference is the grids' cost. The per-sample cost is the warm N = 2, 4 one: on 79 sample
    images an N = 8 haystack of 640 cells repeats images and redraws far more than on val2014."""
    coco = {"coco": data / "coco_mini"}
    store = tmp / "needle"
    grids_cpu, grid_rates, warm_rows, warm_cpu, largest_grids = 0.0, [], 0, 0.0, 0.0
    for n in (2, 4, 8):
        per_grid, warm = cold_warm(f"mmneedle_m10_n{n}_k1", coco, None, tok, store, num_samples=needles)
        grids_cpu += 10000 * per_grid
        largest_grids = max(largest_grids, 10000 * per_grid)  # the first config of an N stitches its pool
        grid_rates.append(f"N={n}: {1 / max(per_grid, 1e-9):.0f}")
        if n < 8:
            warm_rows, warm_cpu = warm_rows + warm.rows, warm_cpu + warm.cpu
    samples_cpu = warm_cpu / max(warm_rows, 1) * 21 * 10000
    return [{"benchmark": "MMNeedle", "family": "mmneedle (21 settings)",
             "rate": f"{warm_rows / max(warm_cpu, 1e-9):.1f} rows/s", "unit rate": "grids/s " + ", ".join(grid_rates),
             "full size": "30,000 grids + 210,000 samples", "cpu": grids_cpu + samples_cpu,
             "largest": largest_grids + samples_cpu / 21}]


def mmlongbench_doc(data: Path, tok: Path, tmp: Path, rows: int) -> list[dict]:
    """Its 7 configs (whole documents, concatenated, 5 lengths) over the same 6,413 pages."""
    per_page, warm = cold_warm("mmlongbench_doc", {"mmlongbench_doc": data / "mmlongbench_doc"}, rows, tok,
                               tmp / "mlbd", max_pages=8)
    per_row = warm.cpu / max(warm.rows, 1)
    return [{"benchmark": "MMLongBench-Doc", "family": "mmlongbench_doc (pages at 144 DPI)",
             "rate": f"{warm.rows / max(warm.cpu, 1e-9):.2f} rows/s", "unit rate": f"{1 / max(per_page, 1e-9):.1f} pages/s",
             "full size": "6,413 pages, 1,082 x 7 rows", "cpu": 6413 * per_page + 1082 * 7 * per_row,
             "largest": 6413 * per_page + 1082 * per_row}]


def readbench(data: Path, tmp: Path, words: int) -> list[dict]:
    from mmlbdata.media.pages import render_text_pages
    from mmlbdata.core.store import ImageStore

    text = " ".join((data / "text" / "wikitext2_raw_wiki.test.raw").read_text(encoding="utf-8").split()[:words])
    cpu = cpu_seconds()
    pages = len(render_text_pages(ImageStore(tmp / "readbench"), text))
    pages_per_s = pages / max(cpu_seconds() - cpu, 1e-9)
    full_pages = 178 * 35 * 12 + 6 * 35  # long subsets ~12 pages at 8K; short ones 1 page
    return [{"benchmark": "ReadBench", "family": "readbench (text -> A4 pages)", "rate": "-",
             "unit rate": f"{pages_per_s:.1f} pages/s", "full size": f"{full_pages:,} pages",
             "cpu": full_pages / pages_per_s, "largest": 35 * 12 / pages_per_s}]


def longvideobench(data: Path, tmp: Path, frames: int) -> list[dict]:
    """Frames closer than the decoder's seek gap (8 s) are reached by decoding every frame between
    them, so a video's cost follows its duration, not the frames kept: 64 frames of a 473 s video
    (the paper's mean) or 256 of any video decode it whole. Cost: two whole decodes (the 64- and
    256-frame configs) of 3,763 x 473 s, at the rate measured on the 70.5 s clip (one thread)."""
    from mmlbdata.media.video import frame_indices, probe, store_frames
    from mmlbdata.core.store import ImageStore

    video = str(data / "video" / "tears-of-steel-battle-clip-medium.webm")
    info = probe(video)
    cpu = cpu_seconds()
    store_frames(ImageStore(tmp / "lvb"), video, frame_indices(info.duration, info.fps, frames), max_side=768,
                 threads=1, info=info)
    cpu = max(cpu_seconds() - cpu, 1e-9)
    video_seconds = 2 * 3763 * 473
    per_split_config = video_seconds / 4  # one config: one split (about half the videos), one frame count
    return [{"benchmark": "LongVideoBench", "family": "lvb (decode + store frames)", "rate": f"{frames / cpu:.1f} frames/s",
             "unit rate": f"{info.duration / cpu:.0f} video-s/s", "full size": "2 x 3,763 videos x 473 s",
             "cpu": video_seconds * cpu / info.duration, "largest": per_split_config * cpu / info.duration}]


def hours(seconds: float) -> str:
    return f"{seconds / HOUR:,.1f}"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=2, help="rows built per config measured (default 2)")
    parser.add_argument("--needles", type=int, default=16, help="MMNeedle samples per setting measured")
    parser.add_argument("--frames", type=int, default=64, help="video frames sampled (64: the whole clip decoded)")
    parser.add_argument("--words", type=int, default=20000, help="words rendered to pages (ReadBench)")
    parser.add_argument("--only", action="append", default=None,
                        help="only these benchmarks (mmlongbench, mmneedle, mmlongbench_doc, readbench, lvb)")
    args = parser.parse_args(argv)
    data = test_data()
    tok = data / "llama2" / "tokenizer.model"
    rows = []
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        steps = {"mmlongbench": lambda: mmlongbench(data, tok, tmp, args.rows),
                 "mmneedle": lambda: mmneedle(data, tok, tmp, args.needles),
                 "mmlongbench_doc": lambda: mmlongbench_doc(data, tok, tmp, args.rows),
                 "readbench": lambda: readbench(data, tmp, args.words),
                 "lvb": lambda: longvideobench(data, tmp, args.frames)}
        for name, step in steps.items():
            if not args.only or name in args.only:
                print(f"measuring {name} ...", file=sys.stderr)
                rows += step()
    print(render(rows))


def render(rows: list[dict]) -> str:
    """Wall time on c cores: CPU time / c, but never less than the family's largest config, the
    unit a scheduler hands to one core (pages, grids and frames inside it are not split)."""
    cores = (1, 16, 32, 64)

    def walls(cpu: float, largest: float) -> dict:
        return {f"wall {c}c (h)": hours(max(cpu / c, largest)) for c in cores}

    for r in rows:
        r.update({"CPU-h": hours(r["cpu"]), "largest config (h)": hours(r["largest"]), **walls(r["cpu"], r["largest"])})
    for name, keep in (("total", lambda r: True),
                       ("MMLongBench+MMNeedle", lambda r: r["benchmark"] in ("MMLongBench", "MMNeedle"))):
        chosen = [r for r in rows if keep(r)]
        cpu, largest = sum(r["cpu"] for r in chosen), max(r["largest"] for r in chosen)
        rows.append({"benchmark": name, "CPU-h": hours(cpu), "largest config (h)": hours(largest),
                     **walls(cpu, largest)})
    columns = ["benchmark", "family", "rate", "unit rate", "full size", "CPU-h", "largest config (h)"] + \
              [f"wall {c}c (h)" for c in cores]
    return table(rows, columns) + "\n* no shared sample of its sources: per-row cost of the family named"


if __name__ == "__main__":
    main()
