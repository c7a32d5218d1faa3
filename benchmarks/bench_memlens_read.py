"""Reading a MemLens release file of the real 256K size: peak memory stays flat (target < 1 GB RSS).

``dataset_256k.json`` is one 778 MB JSON array of 789 records (official README). This writes a file
of that size in the official record format (789 records of about 1 MB: many sessions of user and
assistant turns with images), then reads it with ``mmlbdata.sources.memlens.read_release_file``
in a fresh process and reports the peak resident memory (``ru_maxrss``) of that process.

    python -m benchmarks.bench_memlens_read            # 778 MB, as the real 256K file
    python -m benchmarks.bench_memlens_read --mb 100   # a quicker run
    python -m benchmarks.bench_memlens_read --mb 100 --build   # + build memlens_256k from it (count, store, write)

The file is written to a temporary folder and removed afterwards (``--keep DIR`` to keep it).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._util import table

RECORDS = 789
QUESTION_TYPES = ("information_extraction", "multi_session_reasoning", "temporal_reasoning", "knowledge_update",
                  "answer_refusal")
_WORDS = ("the morning light on the harbour made the boats look like paper cutouts while we waited for "
          "coffee and talked about the trip north next spring").split()


def _turn(role: str, words: int, seed: int, image: str | None) -> dict:
    text = " ".join(_WORDS[(seed + i) % len(_WORDS)] for i in range(words))
    turn = {"role": role, "content": ("Look <image> " if image else "") + text}
    if image:
        turn["images"] = [{"file": image, "image_hf_url": "https://huggingface.co/x/" + image}]
    return turn


def record(index: int, record_bytes: int) -> dict:
    """One record of about ``record_bytes`` bytes of JSON: sessions of 4 turns of ~120 words."""
    sessions, size, s = [], 0, 0
    while size < record_bytes:
        session = [_turn("user" if t % 2 == 0 else "assistant", 120, index + s + t,
                         f"release_images/img_{(index * 7 + s) % 4695:05d}.jpg" if t == 0 else None)
                   for t in range(4)]
        size += len(json.dumps(session))
        sessions.append(session)
        s += 1
    return {"question_id": f"{index:08x}", "question_type": QUESTION_TYPES[index % 5], "question_subtype": "",
            "question": f"What did I say about the harbour in question {index}?", "answer": "paper cutouts",
            "question_date": "2024/05/01 (Wed) 12:00", "haystack_sessions": sessions,
            "haystack_dates": [f"2024/01/{1 + d % 28:02d} (Mon) 09:00" for d in range(len(sessions))]}


def write_release_json(path: Path, total_bytes: int, records: int = RECORDS) -> int:
    """A ``dataset_*.json`` of about ``total_bytes``, written one record at a time; its size."""
    per_record = max(1000, total_bytes // records)
    with open(path, "w", encoding="utf-8") as out:
        out.write("[")
        for i in range(records):
            out.write(("," if i else "") + "\n" + json.dumps(record(i, per_record)))
        out.write("\n]")
    return path.stat().st_size


def read_peak(path: Path) -> dict:
    """Read every record in a fresh process: records, seconds, peak RSS (MB), and the baseline RSS
    of that process after imports (what the reading adds is the difference)."""
    code = (
        "import json, resource, sys, time\n"
        "from mmlbdata.core.report import BuildReport\n"
        "from mmlbdata.sources.memlens import read_release_file\n"
        "base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "t = time.perf_counter(); report = BuildReport(); n = sum(1 for _ in read_release_file(sys.argv[1], report))\n"
        "print(json.dumps({'records': n, 'skipped': report.num_skipped, 'seconds': time.perf_counter() - t,\n"
        "                  'base_mb': base / 1024, 'peak_mb': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


BUILD = (
    "import json, resource, sys, time\n"
    "from mmlbdata.dataset.build import build_configs\n"
    "t = time.perf_counter()\n"
    "[r] = build_configs(['memlens_256k'], {'memlens': sys.argv[1]}, sys.argv[2], progress=False)\n"
    "print(json.dumps({'ok': r.ok, 'error': r.error, 'rows': r.stats.num_rows if r.ok else 0,\n"
    "                  'seconds': time.perf_counter() - t,\n"
    "                  'peak_mb': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))\n"
)


def build_peak(release: Path, out: Path) -> dict:
    """Build ``memlens_256k`` from ``release`` in a fresh process: rows, seconds, peak RSS (MB)."""
    done = subprocess.run([sys.executable, "-c", BUILD, str(release), str(out)], capture_output=True, text=True,
                          check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def _photos(folder: Path) -> None:
    """``release_images/`` with the names the generated records use: a few real photos of the shared
    data (``$MMLB_TEST_DATA``), repeated, so the build stores and counts real images (16 distinct)."""
    from benchmarks._util import test_data

    photos = sorted((test_data() / "images" / "hymenoptera_val").rglob("*.jpg"))[:16]
    folder.mkdir(parents=True, exist_ok=True)
    copies = []
    for i, photo in enumerate(photos):  # copied once; the rest hard links (a symlink out is refused)
        copies.append(folder / f"img_{i:05d}.jpg")
        shutil.copyfile(photo, copies[-1])
    for i in range(len(copies), 4695):
        os.link(copies[i % len(copies)], folder / f"img_{i:05d}.jpg")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=778.0, help="file size in MB (default 778, the real 256K file)")
    parser.add_argument("--keep", type=Path, help="write the file here and keep it")
    parser.add_argument("--build", action="store_true", help="also build memlens_256k from it (peak RSS of the build)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="memlens_bench_") as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / "dataset_256k.json"
        start = time.perf_counter()
        size = write_release_json(path, int(args.mb * 1e6))
        written = time.perf_counter() - start
        got = read_peak(path)
        built = None
        if args.build:
            _photos(folder / "release_images")
            built = build_peak(folder, folder / "built")
    row = {"file MB": f"{size / 1e6:.0f}", "records": got["records"], "skipped": got["skipped"],
           "write s": f"{written:.1f}", "read s": f"{got['seconds']:.1f}",
           "MB/s": f"{size / 1e6 / got['seconds']:.0f}", "RSS after imports MB": f"{got['base_mb']:.0f}",
           "peak RSS MB": f"{got['peak_mb']:.0f}", "target": "< 1024", "ok": got["peak_mb"] < 1024}
    print(table([row], list(row)))
    if built is not None:
        line = {"build": "memlens_256k", "ok": built["ok"], "rows": built["rows"], "seconds": f"{built['seconds']:.0f}",
                "rows/s": f"{built['rows'] / built['seconds']:.1f}", "peak RSS MB": f"{built['peak_mb']:.0f}"}
        print()
        print(table([line], list(line)))
        if not built["ok"]:
            print(built["error"])
    return 0 if row["ok"] and (built is None or built["ok"]) else 1


if __name__ == "__main__":
    sys.exit(main())
