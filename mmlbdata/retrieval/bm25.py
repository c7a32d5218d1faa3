"""Coarse retrieval: BM25 over the passage corpus with ``bm25s``.

Why bm25s: it stores the index as sparse score matrices (numpy .npy files) that load memory-mapped,
scores a query with a sparse dot product (hundreds to thousands of queries/s on one core), and is
pip-installable without a JVM, unlike pyserini/Lucene; rank_bm25 rescans every document per query
(orders of magnitude slower) and has no on-disk index.

The index lives in ``<cache>/bm25-<corpus fingerprint>-<config hash>/`` and is reused by every
build that opens the same corpus with the same tokenizer settings.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from mmlbdata.core.extras import require
from mmlbdata.retrieval.corpus import Corpus, atomic_folder, default_cache_dir

BM25_FEATURE = "BM25 retrieval (visual RAG)"

BM25_VERSION = 1


def passage_document(title: str, text: str) -> str:
    """What BM25 and the dense model see of a passage: title then text."""
    return f"{title}. {text}" if title else text


class BM25Index:
    """A bm25s index of one corpus, built once and cached on disk."""

    def __init__(self, corpus: Corpus, cache_dir: Path | None = None, *, k1: float = 1.5,
                 b: float = 0.75, method: str = "lucene", stemmer: str | None = "english",
                 stopwords: str = "en", mmap: bool = True):
        self.corpus = corpus
        self.config = {"k1": k1, "b": b, "method": method, "stemmer": stemmer,
                       "stopwords": stopwords, "version": BM25_VERSION}
        key = hashlib.sha256(json.dumps(self.config, sort_keys=True).encode()).hexdigest()[:8]
        self.folder = Path(cache_dir or default_cache_dir()) / f"bm25-{corpus.fingerprint}-{key}"
        self.mmap = mmap
        self._retriever = None
        self._tokenizer = None

    # -- building -------------------------------------------------------------------------
    def _new_tokenizer(self):
        tokenization = require("bm25s.tokenization", "retrieval", BM25_FEATURE)

        stem = None
        if self.config["stemmer"]:
            stemmer = require("Stemmer", "retrieval", "the BM25 stemmer (PyStemmer)")

            stem = stemmer.Stemmer(self.config["stemmer"]).stemWord
        return tokenization.Tokenizer(stopwords=self.config["stopwords"], stemmer=stem)

    def build(self) -> "BM25Index":
        """Tokenize the corpus batch by batch, index, save; atomic (temporary folder renamed).

        The token ids of the whole corpus are held in memory while bm25s builds its sparse matrix
        (int32 per token); the saved index is then used memory-mapped."""
        bm25s = require("bm25s", "retrieval", BM25_FEATURE)

        tokenizer = self._new_tokenizer()
        # One int32 array per passage (about 4 bytes a token) instead of Python lists of ints
        # (about 36 bytes a token): bm25s indexes either with identical scores.
        ids: list[np.ndarray] = []
        for batch in self.corpus.iter_batches(("title", "text")):
            docs = [passage_document(t, x) for t, x in zip(batch.column("title").to_pylist(),
                                                           batch.column("text").to_pylist())]
            for doc_ids in tokenizer.tokenize(docs, update_vocab=True, return_as="ids", show_progress=False):
                ids.append(np.asarray(doc_ids, dtype=np.int32))
        retriever = bm25s.BM25(k1=self.config["k1"], b=self.config["b"], method=self.config["method"])
        retriever.index(bm25s.tokenization.Tokenized(ids=ids, vocab=tokenizer.get_vocab_dict()),
                        show_progress=False)
        with atomic_folder(self.folder) as tmp:
            retriever.save(str(tmp), show_progress=False)
            tokenizer.save_vocab(str(tmp))
            tokenizer.save_stopwords(str(tmp))
        return self

    def ensure(self) -> "BM25Index":
        if not (self.folder / "params.index.json").is_file():
            self.build()
        return self

    # -- searching ------------------------------------------------------------------------
    def _load(self) -> None:
        bm25s = require("bm25s", "retrieval", BM25_FEATURE)

        self.ensure()
        self._retriever = bm25s.BM25.load(str(self.folder), mmap=self.mmap, show_progress=False, verbosity=0)
        self._tokenizer = self._new_tokenizer()
        self._tokenizer.load_vocab(str(self.folder))
        self._tokenizer.load_stopwords(str(self.folder))

    def search(self, queries: list[str], k: int) -> tuple[np.ndarray, np.ndarray]:
        """Top-``k`` passage ids and scores per query (rows sorted by descending score)."""
        if self._retriever is None:
            self._load()
        k = min(k, len(self.corpus))
        tokens = self._tokenizer.tokenize(list(queries), update_vocab=False, return_as="ids", show_progress=False)
        pids, scores = self._retriever.retrieve(tokens, k=k, show_progress=False, n_threads=1)
        return np.asarray(pids, dtype=np.int64), np.asarray(scores, dtype=np.float32)
