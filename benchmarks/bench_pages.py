"""Pages per second of the text -> A4 page renderer at 92.9 and 300 PPI.

Run: ``python -m benchmarks.bench_pages`` (reads the WikiText-2 sample from
MMLB_TEST_DATA). Layout (reportlab) and rasterization + PNG encoding (PyMuPDF) are timed
separately, since only the second grows with the PPI.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

from mmlbdata.media import pages as P


def sample_text(words: int) -> str:
    root = Path(os.environ.get("MMLB_TEST_DATA", "../shared/data"))
    raw = (root / "text" / "wikitext2_raw_wiki.test.raw").read_text(encoding="utf-8")
    return " ".join(raw.split()[:words])


def bench(text: str, ppi: float, repeats: int = 2) -> dict[str, float]:
    settings = P.PageSettings(ppi=ppi)
    best_layout = best_total = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        P.text_to_pdf(text, settings)
        mid = time.perf_counter()
        rendered = P.render_pages(text, settings=settings)
        end = time.perf_counter()
        best_layout, best_total = min(best_layout, mid - start), min(best_total, end - mid)
    n = len(rendered.pages)
    size = sum(len(p) for p in rendered.pages) / n
    return {"ppi": ppi, "pages": n, "layout_s": best_layout, "total_s": best_total,
            "pages_per_s": n / best_total, "kb_per_page": size / 1024, "px": rendered.sizes[0]}


def main() -> None:
    text = sample_text(20000)
    print(f"{'PPI':>6} {'pages':>6} {'layout s':>9} {'total s':>8} {'pages/s':>8} {'KiB/page':>9}  page px")
    for ppi in (92.9, 300):
        r = bench(text, ppi)
        print(f"{r['ppi']:>6} {r['pages']:>6} {r['layout_s']:>9.3f} {r['total_s']:>8.3f} "
              f"{r['pages_per_s']:>8.1f} {r['kb_per_page']:>9.1f}  {r['px'][0]}x{r['px'][1]}")


if __name__ == "__main__":
    main()
