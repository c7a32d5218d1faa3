"""Downloader overhead against a bare ``urllib`` read, over a loopback HTTP server.

    python -m benchmarks.bench_download [--copies 4] [--workers 4]

Serves the real MMLongBench-Doc PDFs (``$MMLB_TEST_DATA/mmlongbench_doc/documents``, each
``--copies`` times under different names) from ``http.server`` on 127.0.0.1 and fetches them:

* ``bare urllib``: ``urlopen(url).read()`` written to a file, one after the other;
* ``download_all, 1 worker``: the project's downloader (part file, fsync, sha256 verified,
  atomic rename), sequential;
* ``download_all, N workers``: the same in N threads;
* ``resume 2/3 cut``: every file pre-seeded with its first third as a ``.part`` file, so only
  the rest is fetched (Range) and the whole file verified.

Loopback measures the client's own cost (hashing, fsync, bookkeeping), not the network.
"""
from __future__ import annotations

import argparse
import functools
import hashlib
import os
import shutil
import sys
import tempfile
import threading
import time
import urllib.request
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def _serve(folder: Path):
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(folder)))
    threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
    return httpd


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main(argv=None) -> int:
    from mmlbdata.sources.download import FileSpec, download_all

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--copies", type=int, default=4)
    parser.add_argument("--workers", type=int, default=4)
    args = parser.parse_args(argv)
    root = os.environ.get("MMLB_TEST_DATA")
    if not root:
        sys.exit("set MMLB_TEST_DATA to the shared sample data folder")
    pdfs = sorted((Path(root) / "mmlongbench_doc" / "documents").glob("*.pdf"))
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        served = tmp / "served"
        served.mkdir()
        sums = {}
        for copy in range(args.copies):
            for pdf in pdfs:
                name = f"{copy}_{pdf.name}"
                shutil.copyfile(pdf, served / name)
                sums[name] = hashlib.sha256((served / name).read_bytes()).hexdigest()
        total_mb = sum(p.stat().st_size for p in served.iterdir()) / 2**20
        httpd = _serve(served)
        base = f"http://127.0.0.1:{httpd.server_address[1]}/"
        names = sorted(sums)

        def specs(dest: Path):
            return [FileSpec(base + n, dest / n, sha256=sums[n]) for n in names]

        def bare(dest: Path):
            dest.mkdir()
            for n in names:
                with urllib.request.urlopen(base + n) as r, open(dest / n, "wb") as f:
                    f.write(r.read())

        def run(dest: Path, workers: int):
            report = download_all(specs(dest), num_workers=workers, progress=False)
            assert report.ok, report.summary()

        def seeded(dest: Path):
            dest.mkdir()
            for n in names:
                data = (served / n).read_bytes()
                (dest / f"{n}.part").write_bytes(data[: len(data) // 3])
            return dest

        rows = [("bare urllib", _timed(lambda: bare(tmp / "a"))),
                ("download_all, 1 worker", _timed(lambda: run(tmp / "b", 1))),
                (f"download_all, {args.workers} workers", _timed(lambda: run(tmp / "c", args.workers)))]
        dest = seeded(tmp / "d")
        rows.append(("resume 2/3 cut, 1 worker", _timed(lambda: run(dest, 1))))
        httpd.shutdown()
    print(f"{len(names)} files, {total_mb:.1f} MiB over 127.0.0.1")
    print(f"{'method':<28} {'seconds':>8} {'MiB/s':>8} {'vs bare':>8}")
    for label, seconds in rows:
        print(f"{label:<28} {seconds:>8.2f} {total_mb / seconds:>8.0f} {seconds / rows[0][1]:>8.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
