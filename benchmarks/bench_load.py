"""Load benchmark: what a reader pays for a built config, per config size.

    python -m benchmarks.bench_load [--sizes 8k:300 32k:100 128k:24] [--row-group-mb 100]
                                    [--dictionary auto|on|off] [--keep DIR]
    python -m benchmarks.bench_load --folder DIR [--config NAME ...]   # configs already built
    python -m benchmarks.bench_load --row-group-mb 1e5 --row-group-rows 10000 --dictionary on
        # the layout before row groups were bounded: one dictionary-encoded row group per config

Builds configs from generated real-size JPEGs (640x480 noise, about 160 KB each, like COCO's
photos; 391 tokens each, so a 128K row holds 335 images), then loads each in a fresh subprocess
(its peak RSS is its own) three ways: ``load_dataset`` in memory (Arrow cache written, the last
row read back), ``load_dataset(streaming=True)`` iterating every row (images not decoded:
the PIL decoding cost is the model's, not the dataset's), and pyarrow reading row group after row
group (the floor). Prints one table: config size, rows, images, on-disk MB, decoded MB, row
groups, then time and peak RSS of each way. Peak RSS must follow the row group, not the config.
"""
from __future__ import annotations

import argparse
import io
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator, Optional

from benchmarks._util import table

IMAGE_SIZE = (640, 480)
QUESTION_ROWS = 6  # rows per question share one haystack (the six needle depths)


def make_jpegs(store, count: int, *, sigma: int = 64, quality: int = 75) -> list:
    """``count`` distinct 640x480 noise JPEGs in ``store`` (sigma 64, quality 75: ~160 KB each)."""
    from PIL import Image

    refs = []
    for index in range(count):
        noise = [Image.effect_noise(IMAGE_SIZE, sigma + (index + band) % 7) for band in range(3)]
        buffer = io.BytesIO()
        Image.merge("RGB", noise).save(buffer, format="JPEG", quality=quality)
        refs.append(store.put_bytes(buffer.getvalue(), "jpg"))
    return refs


def images_per_row(length: int) -> int:
    """As many 640x480 images as fit the budget (391 tokens each), as a haystack fills it."""
    from mmlbdata.core.tokens import image_tokens

    return max(1, length // image_tokens(*IMAGE_SIZE))


def synthetic_rows(refs: list, length: int, rows: int) -> Iterator[dict]:
    """Rows of a ``length`` config: each question's rows share a haystack drawn from ``refs``."""
    from mmlbdata.core.schema import make_example

    per_row = images_per_row(length)
    for r in range(rows):
        question = r // QUESTION_ROWS
        images = [refs[(question * per_row + j) % len(refs)] for j in range(per_row)]
        yield make_example(id=f"q{question}_d{r % QUESTION_ROWS}", dataset="synthetic", length=length,
                           num_tokens=length - 1, prompt=" ".join(["<image>"] * per_row) + "\nWhich?",
                           images=images, question="Which?", answers=["a"], metric="binary_acc",
                           meta={"row": r})


def parse_size(text: str) -> tuple[str, int, int]:
    """``128k:24`` -> ("128k", 131072, 24)."""
    label, rows = text.split(":")
    return label, int(label.lower().rstrip("k")) * 1024, int(rows)


def build(out: Path, store_root: Path, sizes: list[str], pool: int, row_group_mb: float,
          dictionary: Optional[bool], row_group_rows: int = 100) -> list[dict]:
    from mmlbdata.dataset.build import store_config
    from mmlbdata.core.store import ImageStore

    refs = make_jpegs(ImageStore(store_root), pool)
    built = []
    for label, length, rows in map(parse_size, sizes):
        config = f"synthetic_{label}"
        stats = store_config(out, config, synthetic_rows(refs, length, rows),
                             row_group_bytes=int(row_group_mb * 1e6), row_group_rows=row_group_rows,
                             dictionary=dictionary)
        built.append({"config": config, "size": label, **stats_columns(stats.to_dict())})
    return built


def load_once(mode: str, folder: str, config: str, cache: str) -> dict:
    """Run inside a subprocess: load ``config`` one way, report seconds and this process's peak RSS."""
    import datasets

    datasets.disable_progress_bars()
    start = time.perf_counter()
    if mode == "memory":
        ds = datasets.load_dataset(folder, config, split="test", cache_dir=cache)
        rows = ds.num_rows
        assert len(ds.with_format("arrow")[rows - 1].column("images")[0]) > 0  # read back, not decoded
    elif mode == "streaming":
        rows = sum(1 for _ in datasets.load_dataset(folder, config, split="test", streaming=True).decode(False))
    else:
        import pyarrow.parquet as pq

        rows = 0
        for path in sorted((Path(folder) / "data" / config).glob("*.parquet")):
            parquet = pq.ParquetFile(path)
            for index in range(parquet.num_row_groups):
                rows += parquet.read_row_group(index).num_rows
    return {"rows": rows, "seconds": time.perf_counter() - start,
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def measure(mode: str, folder: Path, config: str) -> dict:
    with tempfile.TemporaryDirectory() as cache:
        code = ("import json,sys; from benchmarks.bench_load import load_once; "
                f"print(json.dumps(load_once({mode!r}, {str(folder)!r}, {config!r}, {cache!r})))")
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if done.returncode:
        return {"error": (done.stderr.strip().splitlines() or ["?"])[-1][:80]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: Optional[list[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", nargs="+", default=["8k:300", "32k:100", "128k:24"],
                        help="LABEL:ROWS per config (default: 8k:300 32k:100 128k:24)")
    parser.add_argument("--pool", type=int, default=512, help="distinct generated JPEGs (default 512)")
    parser.add_argument("--row-group-mb", type=float, default=100, help="decoded MB per row group (default 100)")
    parser.add_argument("--row-group-rows", type=int, default=100, help="rows per row group at most (default 100)")
    parser.add_argument("--dictionary", choices=["auto", "on", "off"], default="auto",
                        help="image bytes dictionary-encoded: per shard where it pays (auto), always, never")
    parser.add_argument("--keep", default=None, metavar="DIR", help="build into DIR and keep it")
    parser.add_argument("--folder", default=None, metavar="DIR",
                        help="measure configs already built in DIR (by mmlb build) instead of generating")
    parser.add_argument("--config", action="append", default=None, help="with --folder: only these configs")
    args = parser.parse_args(argv)
    dictionary = {"auto": None, "on": True, "off": False}[args.dictionary]
    with tempfile.TemporaryDirectory() as tmp:
        if args.folder:
            from mmlbdata.dataset.stats import configs_in

            out = Path(args.folder)
            rows = [described(out, name) for name in args.config or configs_in(out)]
        else:
            out = Path(args.keep) if args.keep else Path(tmp) / "out"
            rows = build(out, Path(tmp) / "store", args.sizes, args.pool, args.row_group_mb, dictionary,
                         args.row_group_rows)
        for row in rows:
            for mode in ("memory", "streaming", "pyarrow"):
                result = measure(mode, out, row["config"])
                if "error" in result:
                    row[f"{mode} s"], row[f"{mode} MB"] = "FAILED", result["error"]
                else:
                    row[f"{mode} s"], row[f"{mode} MB"] = f"{result['seconds']:.1f}", f"{result['peak_mb']:.0f}"
    columns = ["config" if args.folder else "size", "rows", "images", "disk MB", "decoded MB", "groups",
               "max group MB", "memory s", "memory MB", "streaming s", "streaming MB", "pyarrow s", "pyarrow MB"]
    print(f"row groups: at most {args.row_group_mb:g} MB decoded; dictionary: {args.dictionary}; "
          "MB columns after a time are peak RSS of a fresh process")
    print(table(rows, columns))


def stats_columns(stats: dict) -> dict:
    """The table's build columns, from a config's stats (as its manifest records them)."""
    return {"rows": stats.get("num_rows"), "images": stats.get("num_images"),
            "disk MB": f"{stats.get('num_bytes', 0) / 1e6:.0f}",
            "decoded MB": f"{stats.get('image_bytes_decoded', 0) / 1e6:.0f}",
            "groups": stats.get("num_row_groups"),
            "max group MB": f"{stats.get('row_group_decoded_max', 0) / 1e6:.0f}"}


def described(folder: Path, config: str) -> dict:
    """A config built by ``mmlb build``: the build columns from its manifest."""
    from mmlbdata.dataset.writer import read_manifest

    return {"config": config, **stats_columns((read_manifest(folder, config) or {}).get("stats") or {})}


if __name__ == "__main__":
    main()
