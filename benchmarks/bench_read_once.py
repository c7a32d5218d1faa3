"""Work done twice, measured (issue 35): bytes read and seconds on full-size inputs.

    python -m benchmarks.bench_read_once [--rows 1000] [--images 1000] [--refs 335]

* the paper draw of a release file (``read_release_file(paper=)``): a generated
  ``vh_single_test_1000_K128``-size file (``--rows`` records of ``--refs`` image paths each), its
  paper subset drawn; bytes read by the process (``/proc/self/io`` rchar) and seconds;
* a files-layout build from store images (``store_config``, ``--rows`` rows of 22 images drawn
  from ``--images`` distinct store JPEGs, as ``vh_single_8k``): bytes the writer hashes to name the
  image copies, and the metadata bytes ``update_readme`` reads back, each with its seconds.

Only API that predates the change is used, so the same command measures an older checkout
(``PYTHONPATH=<old tree> python benchmarks/bench_read_once.py``) for the before/after table.
"""
from __future__ import annotations

import argparse
import io
import json
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[1]))  # after PYTHONPATH: an older tree can be measured
from benchmarks._util import table  # noqa: E402


def rchar() -> int:
    """Bytes this process has read through read calls so far (Linux)."""
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    return 0


def release_file(folder: Path, rows: int, refs: int) -> Path:
    path = folder / "vh_single_test_1000_K128_dep6.jsonl"
    with open(path, "w") as handle:
        for i in range(rows):
            ctxs = [f"coco/train2017/{i:06d}_{k:04d}.jpg" for k in range(refs)]
            handle.write(json.dumps({"id": i, "question": "For the image with a kite, is there a boat?",
                                     "answer": "Yes" if i % 2 else "No", "ctxs": ctxs}) + "\n")
    return path


def paper_draw(folder: Path, rows: int, refs: int) -> dict:
    from mmlbdata.core.report import BuildReport
    from mmlbdata.sources import mmlb_release as release

    path = release_file(folder, rows, refs)
    paper = release.RELEASE_FILES["vh_single"].paper_samples
    before, start = rchar(), time.perf_counter()
    drawn = sum(1 for _ in release.read_release_file(path, "vh", BuildReport(), paper=paper))
    seconds, read = time.perf_counter() - start, rchar() - before
    return {"step": f"read_release_file(paper={paper}), {drawn} drawn", "file MB": f"{path.stat().st_size / 1e6:.1f}",
            "MB read": f"{read / 1e6:.1f}", "seconds": f"{seconds:.2f}"}


def store_images(store, count: int, seed: int = 0) -> list:
    from PIL import Image

    rng = random.Random(seed)
    refs = []
    for i in range(count):
        image = Image.frombytes("RGB", (160, 120), rng.randbytes(160 * 120 * 3)).resize((640, 480))
        buffer = io.BytesIO()
        image.save(buffer, format="JPEG", quality=85)
        refs.append(store.put_bytes(buffer.getvalue(), "jpg"))
    return refs


def build(folder: Path, rows: int, images: int) -> list[dict]:
    from mmlbdata.core.schema import make_example
    from mmlbdata.core.store import ImageStore
    from mmlbdata.dataset import card, writer
    from mmlbdata.dataset.build import store_config

    refs = store_images(ImageStore(folder / "store"), images)
    rng = random.Random(1)
    examples = [make_example(id=f"r{r}", dataset="vh_single", length=8192, num_tokens=8000,
                             prompt="<image>" * 22, images=[rng.choice(refs) for _ in range(22)],
                             question="q?", answers=["Yes"], metric="binary_acc", meta={}) for r in range(rows)]
    hashed, readback = {"bytes": 0, "seconds": 0.0}, {"bytes": 0, "seconds": 0.0}
    original_hash, original_dirs = writer.file_sha256, card.config_image_dirs

    def counted_hash(path):
        start = time.perf_counter()
        digest = original_hash(path)
        hashed["seconds"] += time.perf_counter() - start
        hashed["bytes"] += Path(path).stat().st_size
        return digest

    def counted_dirs(out, config):
        start, before = time.perf_counter(), rchar()
        dirs = original_dirs(out, config)
        readback["seconds"] += time.perf_counter() - start
        readback["bytes"] += rchar() - before
        return dirs

    writer.file_sha256, card.config_image_dirs = counted_hash, counted_dirs
    try:
        start = time.perf_counter()
        stats = store_config(folder / "out", "vh_single_8k", iter(examples), manifest={"family": "vh"})
        total = time.perf_counter() - start
    finally:
        writer.file_sha256, card.config_image_dirs = original_hash, original_dirs
    return [
        {"step": f"writer: hash store images ({stats.num_unique_images} distinct)",
         "file MB": f"{stats.image_bytes_unique / 1e6:.1f}", "MB read": f"{hashed['bytes'] / 1e6:.1f}",
         "seconds": f"{hashed['seconds']:.2f}"},
        {"step": "update_readme: metadata read back", "file MB": f"{stats.metadata_bytes / 1e6:.2f}",
         "MB read": f"{readback['bytes'] / 1e6:.2f}", "seconds": f"{readback['seconds']:.2f}"},
        {"step": f"store_config in all ({rows} rows)", "file MB": "", "MB read": "", "seconds": f"{total:.2f}"},
    ]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--images", type=int, default=1000)
    parser.add_argument("--refs", type=int, default=335, help="image paths per release record (335: 128K)")
    args = parser.parse_args(argv)
    import mmlbdata

    with tempfile.TemporaryDirectory() as tmp:
        rows = [paper_draw(Path(tmp), args.rows, args.refs), *build(Path(tmp), args.rows, args.images)]
    print(f"mmlbdata from {Path(mmlbdata.__file__).parent}")
    print(table(rows, ["step", "file MB", "MB read", "seconds"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
