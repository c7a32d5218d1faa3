"""Pages per second of the text -> A4 page renderer at 92.9 and 300 PPI.

    python -m benchmarks.bench_pages [--words 20000]

Reads WikiText-2 prose from MMLB_TEST_DATA. ``layout+pdf`` is reportlab's part (wrapping and
the intermediate PDF), independent of the PPI; ``render`` is the whole path to PNG bytes
(layout, PDF, PyMuPDF rasterization, PNG encoding), which is what grows with the PPI. The
``cached`` row is a second ``render_text_pages`` call on the image store: layout only, every
page answered by its recipe.
"""
from __future__ import annotations

import argparse
import tempfile
import time

from benchmarks._util import table, test_data
from mmlbdata.media import pages as P


def sample_text(words: int) -> str:
    raw = (test_data() / "text" / "wikitext2_raw_wiki.test.raw").read_text(encoding="utf-8")
    return " ".join(raw.split()[:words])


def best_of(repeats: int, fn) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def bench(text: str, ppi: float, repeats: int) -> dict:
    settings = P.PageSettings(ppi=ppi)
    layout_s, _ = best_of(repeats, lambda: P.text_to_pdf(text, settings))
    render_s, rendered = best_of(repeats, lambda: P.render_pages(text, settings=settings))
    n = len(rendered.pages)
    return {"ppi": ppi, "page px": "x".join(map(str, rendered.sizes[0])), "pages": n,
            "layout+pdf s": f"{layout_s:.3f}", "render s": f"{render_s:.3f}", "pages/s": f"{n / render_s:.1f}",
            "KiB/page": f"{sum(map(len, rendered.pages)) / n / 1024:.0f}"}


def bench_cached(text: str) -> dict:
    from mmlbdata.core.store import ImageStore

    with tempfile.TemporaryDirectory() as tmp:
        store = ImageStore(tmp)
        first = time.perf_counter()
        refs = P.render_text_pages(store, text)
        second = time.perf_counter()
        P.render_text_pages(store, text)
        end = time.perf_counter()
    n = len(refs)
    return {"ppi": f"{P.DEFAULT_PPI} store", "pages": n, "render s": f"{second - first:.3f}",
            "pages/s": f"{n / (second - first):.1f}", "cached s": f"{end - second:.3f}"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--words", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    text = sample_text(args.words)
    rows = [bench(text, ppi, args.repeats) for ppi in (P.DEFAULT_PPI, 300)] + [bench_cached(text)]
    print(table(rows, ["ppi", "page px", "pages", "layout+pdf s", "render s", "pages/s", "KiB/page", "cached s"]))


if __name__ == "__main__":
    main()
