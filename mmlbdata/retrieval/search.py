"""The retrieval pipeline used by the visual-RAG recipes: BM25 candidates, dense re-ranking,
answer/entity filtering; and the on-disk cache of ranked lists (one query is asked once for all
five lengths of a question, and again by every rebuild)."""
from __future__ import annotations

import hashlib
import json
import re
import string
from pathlib import Path
from typing import Iterable

from mmlbdata.retrieval.bm25 import BM25Index
from mmlbdata.retrieval.corpus import Corpus, default_cache_dir
from mmlbdata.retrieval.dense import DEFAULT_MODEL, DenseEncoder, DenseIndex, Reranker

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT_TO_SPACE = str.maketrans({c: " " for c in string.punctuation})
_PUNCT_DELETE = str.maketrans("", "", string.punctuation)


def normalize_text(text: str, punctuation: str = "space") -> str:
    """SQuAD-style normalisation: lower case, no articles, single spaces; punctuation becomes a
    space (``"space"``, so WikiText's ``guest @-@ starring`` reads ``guest starring``) or is
    deleted (``"delete"``, exactly what the ``sub_em`` metric does)."""
    table = _PUNCT_TO_SPACE if punctuation == "space" else _PUNCT_DELETE
    text = _ARTICLES.sub(" ", str(text).lower().translate(table))
    return " ".join(text.split())


def mentions_any(text: str, needles: Iterable[str]) -> bool:
    """Whether ``text`` contains a non-empty needle as a substring under either normalisation,
    so a passage that passes the filter cannot satisfy ``sub_em`` for any of the needles."""
    needles = list(needles)
    for mode in ("space", "delete"):
        haystack = normalize_text(text, mode)
        if any(n and n in haystack for n in (normalize_text(x, mode) for x in needles)):
            return True
    return False


class Retriever:
    """BM25 top-``bm25_k``, the first ``rerank_k`` of them re-ordered by the dense model
    (``model=None`` keeps BM25 order), or full dense retrieval with ``mode="dense"``."""

    def __init__(self, corpus: Corpus, cache_dir: Path | None = None, *, model: str | None = DEFAULT_MODEL,
                 bm25_k: int = 2000, rerank_k: int = 2000, mode: str = "bm25+rerank",
                 device: str | None = None, batch_size: int = 32):
        if mode not in ("bm25", "bm25+rerank", "dense"):
            raise ValueError(f"unknown retrieval mode {mode!r}")
        self.corpus = corpus
        self.cache_dir = Path(cache_dir or default_cache_dir())
        self.mode = mode if model else "bm25"
        self.bm25_k, self.rerank_k = bm25_k, rerank_k
        self.bm25 = BM25Index(corpus, self.cache_dir)
        self.encoder = DenseEncoder(model, device=device, batch_size=batch_size) if model else None
        self.reranker = Reranker(corpus, self.encoder) if self.encoder else None
        self.dense = DenseIndex(corpus, self.encoder, self.cache_dir) if self.mode == "dense" else None
        fp = self.encoder.fingerprint if self.encoder else "none"
        key = f"{self.mode}:{bm25_k}:{rerank_k}"
        self.results_dir = (self.cache_dir / f"ranked-{corpus.fingerprint}-{fp}-"
                            f"{hashlib.sha256(key.encode()).hexdigest()[:6]}")

    def _cache_file(self, query: str) -> Path:
        return self.results_dir / f"{hashlib.sha256(query.encode()).hexdigest()[:24]}.json"

    def search(self, query: str) -> list[int]:
        """Ranked passage ids for ``query`` (cached on disk)."""
        cached = self._cache_file(query)
        if cached.is_file():
            return json.loads(cached.read_text())["pids"]
        pids = self._search(query)
        self.results_dir.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_suffix(".tmp")
        tmp.write_text(json.dumps({"query": query, "pids": pids}))
        tmp.replace(cached)
        return pids

    def _search(self, query: str) -> list[int]:
        if self.mode == "dense":
            pids, _ = self.dense.search([query], self.bm25_k)
            return [int(p) for p in pids[0] if p >= 0]
        pids, scores = self.bm25.search([query], self.bm25_k)
        ranked = [int(p) for p, s in zip(pids[0], scores[0]) if s > 0]
        if self.mode == "bm25+rerank" and ranked:
            head, _ = self.reranker.rerank(query, ranked[:self.rerank_k])
            ranked = head + ranked[self.rerank_k:]
        return ranked

    def distractors(self, query: str, forbidden: Iterable[str], exclude: Iterable[int] = ()) -> Iterable[dict]:
        """Retrieved passages in rank order that mention none of ``forbidden`` (answers, entity
        name) and are not in ``exclude`` (the gold passages); lazily, so packing stops reading
        once the budget is full."""
        forbidden = [f for f in forbidden if normalize_text(f)]
        skip = set(int(p) for p in exclude)
        for pid in self.search(query):
            if pid in skip:
                continue
            passage = self.corpus.passage(pid)
            if not mentions_any(passage["title"] + " " + passage["text"], forbidden):
                yield passage
