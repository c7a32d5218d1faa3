"""`mmlb fetch` of a COCO-layout image zip over loopback, against a bare download + unzip.

    python -m benchmarks.bench_fetch [--copies 8]

Builds ``val2017.zip`` from the real COCO sample (``$MMLB_TEST_DATA/coco_mini``, every image
``--copies`` times under different names), serves it from ``http.server`` on 127.0.0.1 and times:

* ``bare urllib + extractall``: ``urlopen(url).read()`` to a file, then ``ZipFile.extractall``;
* ``mmlb fetch coco:val2017``: the registry path (part file, md5 verified, every member name
  checked, staged extraction moved into place, the part's record written);
* ``rerun (kept)``: the same command again, which finds the record and fetches nothing.

Loopback measures the client's own cost (hashing, checks, staging), not the network.
"""
from __future__ import annotations

import argparse
import hashlib
import tempfile
import urllib.request
import zipfile
from dataclasses import replace
from pathlib import Path

from ._util import table, test_data
from .bench_download import _serve, _timed


def _make_zip(images: list[Path], copies: int, path: Path) -> int:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:  # JPEGs: COCO's zips store them too
        for copy in range(copies):
            for image in images:
                zf.write(image, f"val2017/{copy:02d}{image.name}")
    return len(images) * copies


def _bare(url: str, out: Path) -> None:
    out.mkdir(parents=True)
    with urllib.request.urlopen(url) as response, open(out / "val2017.zip", "wb") as fh:
        while block := response.read(1 << 20):
            fh.write(block)
    with zipfile.ZipFile(out / "val2017.zip") as zf:
        zf.extractall(out)


def main(argv=None) -> int:
    from mmlbdata.sources import fetch as F

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--copies", type=int, default=8)
    args = parser.parse_args(argv)
    images = sorted((test_data() / "coco_mini").glob("*2017/*.jpg"))
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        served = tmp / "serve" / "images.cocodataset.org" / "zips"
        served.mkdir(parents=True)
        count = _make_zip(images, args.copies, served / "val2017.zip")
        data = (served / "val2017.zip").read_bytes()
        registry = F.load_registry()
        coco = registry["coco"]
        parts = tuple(replace(p, size=len(data), md5=hashlib.md5(data).hexdigest()) if p.name == "val2017" else p
                      for p in coco.parts)
        registry = {**registry, "coco": replace(coco, parts=parts)}
        httpd = _serve(tmp / "serve")
        base = f"http://127.0.0.1:{httpd.server_address[1]}"
        options = F.FetchOptions(mirror=base, progress=False, retries=0)
        selected = F.select_parts(registry, ["coco:val2017"])
        rows = [("bare urllib + extractall", _timed(lambda: _bare(f"{base}/images.cocodataset.org/zips/val2017.zip",
                                                                   tmp / "bare")))]
        report = None

        def run():
            nonlocal report
            report = F.fetch(registry, selected, tmp / "sources", options)

        rows.append(("mmlb fetch coco:val2017", _timed(run)))
        assert report.ok, report.summary()
        rows.append(("rerun (kept)", _timed(run)))
        assert report.outcomes[0].status == "kept"
        httpd.shutdown()
    size = len(data) / 1e6
    print(f"val2017.zip: {count} real COCO JPEGs, {size:.0f} MB, loopback")
    print(table([{"path": name, "seconds": f"{sec:.2f}", "MB/s": f"{size / sec:.0f}",
                  "vs bare": f"{sec / rows[0][1]:.2f}x"} for name, sec in rows],
                ["path", "seconds", "MB/s", "vs bare"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
