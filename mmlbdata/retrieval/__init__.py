"""retrieval: passages and search for visual RAG (BM25, dense re-ranking with faiss).

Heavy libraries (sentence-transformers, faiss, bm25s) are imported lazily through
:func:`mmlbdata.core.extras.require`. May import ``mmlbdata.core`` only.
"""
