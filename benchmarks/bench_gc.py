"""``mmlb gc`` at the published size: how long planning and removing take, and the peak memory.

    python -m benchmarks.bench_gc [--files 175646] [--configs 95] [--references 4536578]
                                  [--unused 0.1] [--keep DIR]

Generates a files-layout folder shaped like the whole MMLongBench (ARCHITECTURE.md, "Dataset
layout": ~176k image files, 95 configs, 4.5M image references): empty files under
``images/<family>/ab/<sha256>.jpg`` (gc never reads an image, only lists and stats them) and one
``<config>.metadata.parquet`` per config whose ``images_file_names`` name random images among the
used ones; ``--unused`` of the files no config names (a rebuild's orphans). Then, in this process:
``plan_cleanup`` (read every config's image paths, list the tree) and ``apply_cleanup`` (unlink the
orphans), each timed, the files left (the used ones: generated orphans plus any used image that
no random reference happened to draw) and the peak RSS. Prints one table.
"""
from __future__ import annotations

import argparse
import hashlib
import random
import resource
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from mmlbdata.dataset.cleanup import apply_cleanup, plan_cleanup
from mmlbdata.dataset.stats import IMAGE_FILES_COLUMN

FAMILIES = ("vrag", "vh", "mmniah", "icl", "summ", "docvqa")


def make_folder(root: Path, files: int, configs: int, references: int, unused: float, seed: int = 0) -> int:
    """The generated folder; returns how many of its files no config names."""
    rng = random.Random(seed)
    paths = []
    for i in range(files):
        digest = hashlib.sha256(str(i).encode()).hexdigest()
        relative = f"images/{FAMILIES[i % len(FAMILIES)]}/{digest[:2]}/{digest}.jpg"
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).touch()
        paths.append(relative)
    orphans = int(files * unused)
    used = paths[orphans:]
    per_config = references // configs
    for c in range(configs):
        rows = [[used[rng.randrange(len(used))] for _ in range(100)] for _ in range(per_config // 100)]
        table = pa.table({"id": [str(r) for r in range(len(rows))], IMAGE_FILES_COLUMN: rows})
        pq.write_table(table, root / f"cfg{c:03d}_8k.metadata.parquet", compression="zstd")
    return orphans


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=175_646)
    parser.add_argument("--configs", type=int, default=95)
    parser.add_argument("--references", type=int, default=4_536_578)
    parser.add_argument("--unused", type=float, default=0.1, help="share of the files no config names")
    parser.add_argument("--keep", default=None, help="build the folder here (default: a temporary one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(args.keep or tmp) / "mmlb"
        root.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        orphans = make_folder(root, args.files, args.configs, args.references, args.unused)
        made = time.perf_counter() - started
        before = peak_rss_mb()
        started = time.perf_counter()
        plan = plan_cleanup(root)
        planned = time.perf_counter() - started
        started = time.perf_counter()
        apply_cleanup(plan)
        applied = time.perf_counter() - started
        left = sum(1 for p in (root / "images").rglob("*") if p.is_file())
        print(f"{'files':>9} {'configs':>7} {'references':>10} {'unused':>8} {'make s':>7} {'plan s':>7} "
              f"{'remove s':>8} {'left':>8} {'RSS MB before':>13} {'peak RSS MB':>11}")
        references = args.configs * (args.references // args.configs // 100) * 100  # whole rows of 100
        print(f"{args.files:>9,} {args.configs:>7} {references:>10,} "
              f"{len(plan.unused_images):>8,} {made:>7.1f} {planned:>7.1f} {applied:>8.1f} {left:>8,} {before:>13.0f} "
              f"{peak_rss_mb():>11.0f}")


if __name__ == "__main__":
    main()
