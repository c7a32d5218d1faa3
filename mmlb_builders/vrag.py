"""Visual RAG with retrieved distractors (InfoSeek, ViQuAE), as in MMLongBench's VRAG category.

Procedure:

* Gold passages come from the KILT Wikipedia corpus cut into 100-word passages
  (``mmlbdata.retrieval.corpus``). InfoSeek: the entity's lead section (text before the first
  section), all of its passages; a question whose lead section mentions none of its accepted
  answers is dropped. ViQuAE: the passage that holds the question's KILT provenance span
  (preferring one that mentions an answer).
* Distractors: the retrieval query is the question with the image replaced by the entity name
  (``"{entity} {question}"`` for InfoSeek, the text-only ``original_question`` for ViQuAE); BM25
  candidates are re-ranked by the dense model; passages mentioning an answer or the entity name
  are dropped; the rest are added in rank order until the budget is full
  (``mmlbdata.core.lengths.fill``: num_tokens <= length < next_num_tokens).
* Placement: ViQuAE puts its gold passage at depths 0, 0.2, ..., 1.0 (6 rows per id); InfoSeek puts
  its gold passages at 3 seeded permutations of positions (3 rows per id). A question is either
  built at all its placements or skipped (reported), so every id has its full set of rows.
* Prompt: passages as ``Document (Title: {title}): {text}`` joined by blank lines, the benchmark's
  instruction verbatim, the question as ``<image>{question}``; metric ``sub_em`` on all accepted
  answers.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional, Sequence

from mmlbdata.core.lengths import DEPTHS, BudgetError, depth_index, fill, length_tokens, place_at
from mmlbdata.core.schema import make_example
from mmlbdata.core.seeding import rng as seeded_rng
from mmlbdata.core.store import ImageRef
from mmlbdata.core.tokens import IMAGE_PLACEHOLDER
from mmlbdata.official import mmlongbench_prompts as prompts
from mmlbdata.official import protocol as protocols
from mmlbdata.official.protocol import DEFAULT as DEFAULT_PROTOCOL  # in the config options: a protocol change rebuilds
from mmlbdata.retrieval.corpus import Corpus, default_cache_dir, open_corpus
from mmlbdata.retrieval.dense import DEFAULT_MODEL
from mmlbdata.retrieval.search import Retriever, mentions_any
from mmlbdata.sources.infoseek import LAYOUT as INFOSEEK_LAYOUT
from mmlbdata.sources.infoseek import read_infoseek
from mmlbdata.sources.viquae import LAYOUT as VIQUAE_LAYOUT
from mmlbdata.sources.viquae import read_viquae

from .base import MMLONGBENCH_LENGTH_KEYS, MMLBBuilder, standard_configs

NUM_PERMUTATIONS = 3
KILT_LAYOUT = ("KILT knowledge source (kilt_knowledgesource.json JSON lines or facebook/kilt_wikipedia "
               "shards), kilt_w100_title.tsv, WikiText raw, or a corpus folder built by mmlbdata")


def render_passage(passage: dict) -> str:
    return prompts.passage(passage["title"], passage["text"])


def build_prompt(passages: Sequence[dict], question: str) -> str:
    context = "\n\n".join(render_passage(p) for p in passages)
    return prompts.render("vrag", context, IMAGE_PLACEHOLDER + question)


@dataclass(frozen=True)
class RagQuestion:
    """A question ready to be packed: gold passages, retrieval query, what distractors must avoid."""

    source_id: str
    question: str
    answers: tuple[str, ...]
    entity: str
    query: str
    gold: tuple[dict, ...]
    image: ImageRef


@dataclass(frozen=True)
class Placement:
    suffix: str
    meta: dict
    positions_for: object  # callable: total passages -> gold positions


class VisualRAG(MMLBBuilder):
    """InfoSeek and ViQuAE visual RAG rows at the five standard lengths."""

    DESCRIPTION = "Visual RAG: answer a question about the pictured entity from retrieved Wikipedia passages."
    HOMEPAGE = "https://github.com/EdinburghNLP/MMLongBench"
    LICENSE = "InfoSeek Apache-2.0, ViQuAE CC BY 4.0, Wikipedia CC BY-SA 3.0"
    CITATION = ("@inproceedings{wang2025mmlongbench, title={MMLongBench: Benchmarking Long-Context "
                "Vision-Language Models Effectively and Thoroughly}, author={Wang, Zhaowei and others}, year={2025}}")
    SOURCES = {"infoseek": INFOSEEK_LAYOUT, "viquae": VIQUAE_LAYOUT, "kilt": KILT_LAYOUT}
    BUILDER_CONFIGS = (
        standard_configs("infoseek", lengths=MMLONGBENCH_LENGTH_KEYS, metric="sub_em", sources=("infoseek", "kilt"), split="val",
                         num_questions=100, description="InfoSeek visual RAG")
        + standard_configs("viquae", lengths=MMLONGBENCH_LENGTH_KEYS, metric="sub_em", sources=("viquae", "kilt"), split="test",
                           num_questions=100, protocol=DEFAULT_PROTOCOL, description="ViQuAE visual RAG")
    )

    # -- setup -----------------------------------------------------------------------------------
    def cache_dir(self) -> Path:
        """Corpus and index caches: the ``cache_dir`` option, else ``retrieval/`` beside the image
        store (so ``mmlb build --cache-dir DIR`` keeps both under DIR)."""
        if self.option("cache_dir"):
            return Path(self.option("cache_dir"))
        return self.store.root.parent / "retrieval" if self.store else default_cache_dir()

    def retriever(self, corpus: Corpus) -> Retriever:
        model = self.option("model", DEFAULT_MODEL)
        # 1000 reranked passages fill 128K; the extended lengths (256K, 512K) need proportionally more
        scale = max(1, (self.length or 0) // length_tokens("128k"))
        return Retriever(corpus, self.cache_dir(), model=model or None, mode=self.option("retrieval", "bm25+rerank"),
                         bm25_k=int(self.option("bm25_k", 2000 * scale)),
                         rerank_k=int(self.option("rerank_k", 1000 * scale)),
                         device=self.option("device"), batch_size=int(self.option("batch_size", 32)))

    def generate(self) -> Iterator[dict]:
        corpus = open_corpus(self.source("kilt"), self.cache_dir())
        retriever = self.retriever(corpus)
        count = int(self.option("num_questions", 100))
        if self.limit is not None:
            count = min(count, self.limit)
        built = 0
        questions = self.infoseek_questions(corpus) if self.config.dataset == "infoseek" else self.viquae_questions(corpus)
        for question in questions:
            if built >= count:
                break
            rows = self.rows(question, retriever)
            if rows:
                built += 1
                yield from rows

    # -- InfoSeek --------------------------------------------------------------------------------
    def infoseek_questions(self, corpus: Corpus) -> Iterator[RagQuestion]:
        source = self.source("infoseek")
        for q in read_infoseek(source, self.store, self.report, split=self.option("split", "val")):
            article = corpus.find_article(wikidata_id=q.entity_id) or corpus.find_article(title=q.entity_text)
            if article is None:
                self.report.skip(source, q.data_id, f"entity {q.entity_id} ({q.entity_text}) not in the corpus")
                continue
            lead = corpus.article_passages(article, lead_only=True)
            if not any(mentions_any(p["text"], q.answers) for p in lead):
                self.report.skip(source, q.data_id, f"the lead section of '{article['title']}' mentions none "
                                                    f"of the answers {list(q.answers)}")
                continue
            entity = q.entity_text or article["title"]
            yield RagQuestion(q.data_id, q.question, q.answers, entity, f"{entity} {q.question}", tuple(lead), q.image)

    # -- ViQuAE ----------------------------------------------------------------------------------
    def viquae_questions(self, corpus: Corpus) -> Iterator[RagQuestion]:
        source = self.source("viquae")
        drop_quoted = protocols.get(self.option("protocol")).drop_quoted_images  # v1.1's load_vrag filter
        for q in read_viquae(source, self.store, self.report, split=self.option("split", "test"), drop_quoted=drop_quoted):
            gold, article = self.provenance_passage(corpus, q.provenance, q.answers)
            entity_article = corpus.find_article(wikipedia_id=q.kilt_id) or article
            if gold is None and entity_article is not None:
                gold = next((p for p in corpus.article_passages(entity_article)
                             if mentions_any(p["text"], q.answers)), None)
            if gold is None:
                self.report.skip(source, q.id, "no corpus passage matches the KILT provenance or mentions an answer")
                continue
            entity = (entity_article or {}).get("title") or gold["title"]
            yield RagQuestion(q.id, q.input, q.answers, entity, q.original_question, (gold,), q.image)

    def provenance_passage(self, corpus: Corpus, provenance, answers) -> tuple[Optional[dict], Optional[dict]]:
        """The passage overlapping the first usable provenance span (one with an answer first)."""
        for prov in provenance:
            article = corpus.find_article(wikipedia_id=str(prov.get("wikipedia_id") or ""), title=prov.get("title"))
            if article is None:
                continue
            passages = corpus.article_passages(article)
            hits = [p for p in passages if _overlaps(p, prov)]
            if hits:
                best = next((p for p in hits if mentions_any(p["text"], answers)), hits[0])
                return best, article
        return None, None

    # -- packing ---------------------------------------------------------------------------------
    def placements(self, question: RagQuestion) -> list[Placement]:
        n_gold = len(question.gold)
        if self.config.dataset == "viquae":
            return [Placement(f"d{d:.1f}", {"depth": d}, lambda total, d=d: [depth_index(d, total)])
                    for d in DEPTHS]
        out = []
        for p in range(NUM_PERMUTATIONS):
            def positions(total: int, p=p) -> list[int]:
                rng = seeded_rng(self.seed, self.config.dataset, question.source_id, p, total)
                return sorted(rng.sample(range(total), n_gold))
            out.append(Placement(f"p{p}", {"permutation": p}, positions))
        return out

    def gold_order(self, question: RagQuestion, placement: Placement) -> list[dict]:
        gold = list(question.gold)
        if "permutation" in placement.meta:
            seeded_rng(self.seed, self.config.dataset, question.source_id, "order", placement.meta["permutation"]).shuffle(gold)
        return gold

    def rows(self, question: RagQuestion, retriever: Retriever) -> list[dict]:
        """All placements of one question, or none (reported) when one cannot be built."""
        gold_pids = [p["pid"] for p in question.gold]
        distractors = list(retriever.distractors(question.query, list(question.answers) + [question.entity],
                                                 exclude=gold_pids))
        sizes = dict(zip((p["pid"] for p in distractors),
                         self.counter.tokenizer.count_batch([render_passage(p) for p in distractors])))
        rows = []
        for placement in self.placements(question):
            gold = self.gold_order(question, placement)

            def measure(selection: list[dict]) -> int:
                passages = place_at(selection, gold, placement.positions_for(len(selection) + len(gold)))
                return self.counter.example(build_prompt(passages, question.question), [question.image])

            try:
                packed = fill(distractors, self.length, measure, estimate=lambda p: sizes[p["pid"]] + 2)
            except BudgetError as err:
                self.report.skip(self.source(self.config.dataset), question.source_id, f"{self.config.name}: {err}")
                return []
            if packed.exhausted:
                self.report.skip(self.source(self.config.dataset), question.source_id,
                                 f"{self.config.name}: only {len(distractors)} retrieved passages avoid the answers; "
                                 f"they fill {packed.num_tokens} of {self.length} tokens")
                return []
            positions = placement.positions_for(len(packed.items) + len(gold))
            passages = place_at(packed.items, gold, positions)
            rows.append(make_example(
                id=f"{question.source_id}_{placement.suffix}", dataset=self.config.dataset, length=self.length,
                num_tokens=packed.num_tokens, prompt=build_prompt(passages, question.question),
                images=[question.image], question=question.question, answers=list(question.answers),
                metric=self.config.metric,
                meta={"source_id": question.source_id, "entity": question.entity, "query": question.query,
                      "gold_pids": [p["pid"] for p in gold], "gold_positions": positions,
                      "passage_pids": [p["pid"] for p in passages], "num_passages": len(passages),
                      "next_num_tokens": packed.next_num_tokens, **placement.meta},
            ))
        return rows


def _overlaps(passage: dict, prov: dict) -> bool:
    """Whether a passage's (paragraph, char) span overlaps a KILT provenance span."""
    if passage.get("start_par") is None or passage["start_par"] < 0:
        return False
    try:
        sp, ep = int(prov["start_paragraph_id"]), int(prov.get("end_paragraph_id", prov["start_paragraph_id"]))
    except (KeyError, TypeError, ValueError):
        return False
    sc = int(prov.get("start_character") or 0)
    ec = prov.get("end_character")
    ec = 10**9 if ec is None or int(ec) < 0 else int(ec)
    start = (passage["start_par"], passage["start_char"])
    end = (passage["end_par"], passage["end_char"])
    return start < (ep, ec) and (sp, sc) < end
