"""The official MMLongBench release as a source (``mmlb_release``) and the MMLongBench export.

A small release is written here in the official format (file names of
EdinburghNLP/MMLongBench ``scripts/generate_configs.py``, records shaped as its ``data.py`` reads
them) with real COCO photos and real LongDocURL page images from ``MMLB_TEST_DATA``. Expected
prompts are written out by hand from the ``data.py`` lines each test names.
"""
from __future__ import annotations

import copy
import json
import random
import shutil
from pathlib import Path

import pytest

from mmlbdata.dataset.build import build_all, build_configs, select_configs
from mmlbdata.exports import iter_rows
from mmlbdata.core.report import BuildReport
from mmlbdata.sources import mmlb_release as release
from mmlbdata.dataset.writer import read_manifest

COCO = ["000000000139.jpg", "000000000802.jpg", "000000011813.jpg"]
ANSWER_LINE = "Write your answer in the following format:\nAnswer: [answer]\n\n"


def _coco(real_data: Path) -> list[str]:
    names = sorted(p.name for p in (real_data / "coco_mini" / "val2017").glob("*.jpg"))
    return names[:8]


def _write_jsonl(path: Path, records: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def _images(root: Path, real_data: Path) -> dict[str, list[str]]:
    """Real photos under mmlb_image/coco, real document pages under mmlb_image/docs and gov."""
    photos = []
    for name in _coco(real_data):
        target = root / "mmlb_image" / "coco" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(real_data / "coco_mini" / "val2017" / name, target)
        photos.append(f"coco/{name}")
    pages = []
    source = real_data / "longdocurl_sample" / "pdf_pngs" / "4000-4999" / "4055"
    for index in range(3):
        for folder in ("docs/4055915", "gov/GAO-19-123"):
            target = root / "mmlb_image" / folder / f"page{index}.png"
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(source / f"4055915_{index}.png", target)
        pages.append(index)
    return {"photos": photos, "pages": [f"docs/4055915/page{i}.png" for i in pages],
            "gov": [f"gov/GAO-19-123/page{i}.png" for i in pages]}


def write_release(root: Path, real_data: Path, k: int = 8) -> dict[str, list[str]]:
    img = _images(root, real_data)
    p = img["photos"]
    data = root / "mmlb_data"
    _write_jsonl(data / f"vrag/infoseek_K{k}_dep3.jsonl", [
        {"id": "oven_1", "question": "What country is this building in?", "answer": ["France", "FR"],
         "image": p[0], "ctxs": [{"title": "Louvre", "text": "A museum in Paris."},
                                 {"title": "Seine", "text": "A river."}]}])
    _write_jsonl(data / f"NIAH/vh_single_test_1000_K{k}_dep6.jsonl", [
        {"id": 7, "question": "For the image with a dog, is there a cat?", "answer": "Yes", "ctxs": p[:3]},
        {"id": 8, "question": "For the image with a dog, is there a cow?", "answer": "No", "ctxs": p[1:3]}])
    _write_jsonl(data / f"NIAH/vh_multi_test_1000_K{k}_dep3.jsonl", [
        {"id": 1, "question": "For all images with a car, do any of them contain a bus?", "answer": "No",
         "ctxs": p[2:6]}])
    text_ctxs = [{"text": "The first passage. " + "<image>"}, {"text": "The needle: the key is 42."}]
    _write_jsonl(data / f"NIAH/retrieval-text_test_K{k}_dep6.jsonl", [
        {"id": "rt1", "question": "What is the key?", "answer": "42", "ctxs": text_ctxs, "image_list": [p[0]]}])
    _write_jsonl(data / f"NIAH/counting-text_test_K{k}_dep3.jsonl", [
        {"id": "ct1", "question": "How many needles?", "answer": [1, 0, 2], "ctxs": text_ctxs, "image_list": [p[1]]}])
    _write_jsonl(data / f"NIAH/reasoning-text_test_K{k}_dep3.jsonl", [
        {"id": "rs1", "question": "Which is larger?", "answer": "the key", "ctxs": text_ctxs, "image_list": [p[2]]}])
    _write_jsonl(data / f"NIAH/retrieval-image_test_K{k}_dep6.jsonl", [
        {"id": "ri1", "question": "Which image was in the text?", "answer": 1, "ctxs": text_ctxs,
         "image_list": [p[0]], "choices_image": p[1:4]}])
    _write_jsonl(data / f"NIAH/counting-image_test_K{k}_dep3.jsonl", [
        {"id": "ci1", "question": "How many times does this appear? <image>", "answer": [1], "ctxs": text_ctxs,
         "image_list": [p[0]], "needle_image_list": [p[4]]}])
    _write_jsonl(data / f"NIAH/reasoning-image_test_K{k}_dep6.jsonl", [
        {"id": "rsi1", "question": "Which one?", "answer": 0, "ctxs": text_ctxs, "image_list": [p[0]],
         "choices_image": p[1:3]}])
    icl = {"cars": {"exemplar_list": [[[{"image": p[0], "id": 0}, {"image": p[1], "id": 1}],
                                       [{"image": p[2], "id": 0}, {"image": p[3], "id": 1}]],
                                      [[{"image": p[4], "id": 1}, {"image": p[5], "id": 0}]]],
                    "test_example": [{"image": p[6], "answer": 1}, {"image": p[7], "answer": 0}]}}
    (data / "ICL").mkdir(parents=True, exist_ok=True)
    (data / f"ICL/cars196_K{k}.json").write_text(json.dumps(icl))
    _write_jsonl(data / f"summ/gov_K{k}.jsonl", [
        {"id": "gov1", "image_list": img["gov"][:2],
         "summary": [{"section_title": "What GAO Found", "paragraphs": ["First.", "Second."]},
                     {"section_title": "What GAO Recommends", "paragraphs": ["Act."]}]}])
    _write_jsonl(data / f"summ/lexsum_K{k}.jsonl", [
        {"id": "lex1", "image_list": img["pages"][:2], "summary": "The court ruled."}])
    for name in ("longdocurl", "mmlongdoc", "slidevqa"):
        _write_jsonl(data / f"documentQA/{name}_K{k}.jsonl", [
            {"id": f"{name}_q1", "question": "What year?", "doc_name": "4055915", "page_list": img["pages"],
             "answer": "2019", "answer_format": "Integer"},
            {"id": f"{name}_q2", "question": "Which two?", "doc_name": "4055915", "page_list": img["pages"][:2],
             "answer": "[\"a\", \"b\"]", "answer_format": "List"}])
    return img


@pytest.fixture(scope="module")
def rel(tmp_path_factory, real_data):
    root = tmp_path_factory.mktemp("release")
    return root, write_release(root, real_data)


def _rows(root: Path, kind: str, path: str) -> list[release.ReleaseRow]:
    return [row for _, row in release.read_release_file(root / "mmlb_data" / path, kind, BuildReport())]


# -- prompts as data.py assembles them ------------------------------------------------------------
def test_visual_haystack_prompt(rel):
    """data.py load_visual_haystack: context '\\n'.join(['<image>'] * len(ctxs)), images = ctxs."""
    root, img = rel
    row = _rows(root, "vh", "NIAH/vh_single_test_1000_K8_dep6.jsonl")[0]
    assert row.prompt == ("You are given a set of images. Please answer the question in Yes or No based on the "
                          "given images. " + ANSWER_LINE + "<image>\n<image>\n<image>\n\nQuestion: For the image "
                          "with a dog, is there a cat?")
    assert row.images == img["photos"][:3] and row.answers == ["Yes"] and row.official_id == 7


def test_vrag_prompt(rel):
    """data.py load_vrag: passages 'Document (Title: t): x' joined by blank lines, '<image>' + question."""
    root, img = rel
    row = _rows(root, "vrag", "vrag/infoseek_K8_dep3.jsonl")[0]
    assert row.prompt == ("Use the given documents to write a concise and short answer to the question about the "
                          "entity shown in the image. " + ANSWER_LINE + "Document (Title: Louvre): A museum in "
                          "Paris.\n\nDocument (Title: Seine): A river.\n\nQuestion: <image>What country is this "
                          "building in?")
    assert row.images == [img["photos"][0]] and row.answers == ["France", "FR"]


def test_mm_niah_prompts(rel):
    """data.py load_mm_niah_text / _image_count / _image_mc: ctxs texts joined by blank lines; counting
    images = image_list + needle_image_list; choices appended as '\\nA. <image>' after the question."""
    root, img = rel
    p = img["photos"]
    context = "The first passage. <image>\n\nThe needle: the key is 42."
    head = ("You are given interleaved text and images. Please answer the question based on the given text and "
            "images. " + ANSWER_LINE)
    text = _rows(root, "niah", "NIAH/retrieval-text_test_K8_dep6.jsonl")[0]
    assert text.prompt == head + context + "\n\nQuestion: What is the key?" and text.images == [p[0]]
    count = _rows(root, "niah", "NIAH/counting-text_test_K8_dep3.jsonl")[0]
    assert count.answers == ["[1, 0, 2]"]
    image_count = _rows(root, "niah_count", "NIAH/counting-image_test_K8_dep3.jsonl")[0]
    assert image_count.prompt == head + context + "\n\nQuestion: How many times does this appear? <image>"
    assert image_count.images == [p[0], p[4]]
    choice = _rows(root, "niah_choice", "NIAH/retrieval-image_test_K8_dep6.jsonl")[0]
    assert choice.prompt == ("You are given interleaved text and images. Please answer the question with the "
                             "option's letter (A, B, etc.) based on the given text and images. " + ANSWER_LINE
                             + context + "\n\nQuestion: Which image was in the text?\nA. <image>\nB. <image>\n"
                             "C. <image>")
    assert choice.images == [p[0], p[1], p[2], p[3]] and choice.answers == ["B"]


@pytest.mark.parametrize("kind", ["gov", "lexsum"])
def test_summary_page_ids_come_from_the_release_names(kind):
    """data.py load_gov_report / load_multi_lexsum (22b9f27 lines 381-382 and 415-416; 26197d2 lines
    371-372 and 405-406, the same text): doc id `image_path.split("/")[-2]`, page id
    `image_path.split("page")[1].split(".")[0]`, i.e. the text between the first "page" and the next
    ".", never a count of the pages. A release naming pages from 1 prints "(page 1)"; "page_07.png"
    prints "(page _07)"; a second "page" cuts the id ("page3page.png" -> "3")."""
    names = ["summ/GAO-19-123/page1.png", "summ/GAO-19-123/page2.png", "summ/GAO-19-123/page_07.png",
             "summ/case-77/page3page.png"]
    summary = [{"section_title": "T", "paragraphs": ["p"]}] if kind == "gov" else "s"
    row = release.assemble(kind, {"id": "x", "image_list": names, "summary": summary})
    assert ("Document GAO-19-123 (page 1): <image>\n\nDocument GAO-19-123 (page 2): <image>\n\n"
            "Document GAO-19-123 (page _07): <image>\n\nDocument case-77 (page 3): <image>\n\n") in row.prompt
    assert row.images == names


def test_summary_and_document_prompts(rel):
    """data.py load_gov_report / load_doc_qa: 'Document {doc_id:.15} (page {page_id}): <image>' from the
    path's folder and the text after 'page'; GovReport's summary joined as 'title:\\nparagraphs'; the
    question prefixed 'Based on Document {doc_name:.15}, answer the following question. '."""
    root, img = rel
    gov = _rows(root, "gov", "summ/gov_K8.jsonl")[0]
    assert gov.prompt.endswith("Government Report:\nDocument GAO-19-123 (page 0): <image>\n\nDocument "
                               "GAO-19-123 (page 1): <image>\n\nNow please summarize the report.")
    assert gov.answers == ["What GAO Found:\nFirst.\nSecond.\n\nWhat GAO Recommends:\nAct."]
    # protocol v1.0: data.py @26197d2 L426 item_template with "(page {page_id})", page_id from L439
    v10 = [row for _, row in release.read_release_file(root / "mmlb_data" / "documentQA/mmlongdoc_K8.jsonl", "docqa",
                                                       BuildReport(), protocol="v1.0")]
    assert v10[0].prompt.endswith("Document 4055915 (page 0): <image>\n\nDocument 4055915 (page 1): <image>\n\n"
                                  "Document 4055915 (page 2): <image>\n\nQuestion: Based on Document 4055915, answer "
                                  "the following question. What year?")
    # protocol v1.1 (default): data.py @22b9f27 L436 "Document {doc_id:.15}: <image>", doc_id from L449
    doc = _rows(root, "docqa", "documentQA/mmlongdoc_K8.jsonl")
    assert doc[0].prompt.endswith("Document 4055915: <image>\n\nDocument 4055915: <image>\n\n"
                                  "Document 4055915: <image>\n\nQuestion: Based on Document 4055915, answer "
                                  "the following question. What year?")
    # the release's JSON text as is: utils.py @22b9f27 L326 json.loads it, L468 shows it to the judge
    assert doc[0].meta["answer_format"] == "Integer" and doc[1].answers == ['["a", "b"]']
    assert "answer_json" not in doc[1].meta


def test_icl_draws_replay_the_official_single_process_map(rel):
    """data.py load_icl_er: random.choice(exemplar_list), random.shuffle of each round in place, inside
    datasets.map after set_seed: checked against that very map run in-process (num_proc=None). With
    workers (8 by default, and datasets 5 forks one even for num_proc=1) Python reseeds random from
    the OS in each forked worker: nothing could replay that."""
    import datasets

    root, _img = rel
    data = json.loads((root / "mmlb_data" / "ICL" / "cars196_K8.json").read_text())
    tests = [{"domain": d, "example": e} for d, entry in data.items() for e in entry["test_example"]] * 3
    exemplars = copy.deepcopy({d: entry["exemplar_list"] for d, entry in data.items()})  # shuffled in place

    def update(sample):  # the official update(), re-written for the test
        chosen = random.choice(exemplars[sample["domain"]])
        for i in range(len(chosen)):
            random.shuffle(chosen[i])
        return {"order": [item["id"] for rnd in chosen for item in rnd],
                "images": [item["image"] for rnd in chosen for item in rnd]}

    random.seed(release.OFFICIAL_SEED)
    official = datasets.Dataset.from_list(tests).map(update, num_proc=None)
    triple = {"cars": {"exemplar_list": data["cars"]["exemplar_list"], "test_example": data["cars"]["test_example"] * 3}}
    ours = list(release.icl_rows(triple, paper=None))
    assert [r.meta["exemplar_ids"] for r in ours] == official["order"]
    assert [r.images[:-1] for r in ours] == official["images"]
    assert ours[0].meta["candidates"] == data["cars"]["exemplar_list"]


# -- the paper's subset ---------------------------------------------------------------------------
def test_paper_subset_by_ids_and_by_shuffle(tmp_path, rel):
    """vrag/vh/mm-niah: random.sample(sorted(set(ids)), 100) after set_seed(42), file order kept;
    summ/docqa: load_dataset('json').shuffle(seed=42).select(range(100)) (data.py, each loader)."""
    import datasets

    root, img = rel
    vh = [{"id": i * 3 % 130, "question": f"q{i}", "answer": "Yes", "ctxs": img["photos"][:1]} for i in range(130)]
    _write_jsonl(tmp_path / "vh.jsonl", vh)
    random.seed(42)
    keys = random.sample(sorted(set(r["id"] for r in vh)), 100)
    expected = [r["id"] for r in vh if r["id"] in keys]
    got = [row.official_id for _, row in release.read_release_file(tmp_path / "vh.jsonl", "vh", BuildReport(), paper=100)]
    assert got == expected and len(got) == 100

    doc = [{"id": f"d{i}", "question": "q", "doc_name": "4055915", "page_list": img["pages"][:1], "answer": "x",
            "answer_format": "String"} for i in range(130)]
    _write_jsonl(tmp_path / "doc.jsonl", doc)
    official = datasets.load_dataset("json", data_files=str(tmp_path / "doc.jsonl"), cache_dir=str(tmp_path / "c"))
    official_ids = official["train"].shuffle(seed=42).select(range(100))["id"]
    got = [row.official_id for _, row in release.read_release_file(tmp_path / "doc.jsonl", "docqa", BuildReport(),
                                                                     paper=100)]
    assert got == official_ids


# -- builds through every family's hook -----------------------------------------------------------
@pytest.fixture(scope="module")
def built_release(rel, tmp_path_factory, tokenizer_path):
    root, _img = rel
    out = tmp_path_factory.mktemp("built_release")
    names = select_configs(benchmark="mmlongbench", patterns=["*_8k"])
    results = build_all(names, {"mmlb_release": root}, out, store_root=out.parent / "store", tokenizer=tokenizer_path,
                        progress=False)
    return out, {r.config: r for r in results}


def test_build_all_reads_every_released_file(built_release):
    out, results = built_release
    built = sorted(n for n, r in results.items() if r.status == "built")
    assert built == sorted(["infoseek_8k", "vh_single_8k", "vh_multi_8k", "cars196_8k", "gov_report_8k",
                            "multi_lexsum_8k", "longdocurl_8k", "mmlongdoc_8k", "slidevqa_8k"]
                           + [f"mm_niah_{t}_{m}_8k" for t in ("retrieval", "counting", "reasoning")
                              for m in ("text", "image")])
    assert results["viquae_8k"].status == "missing sources" and "viquae_K8_dep6.jsonl" in results["viquae_8k"].error
    manifest = read_manifest(out, "vh_single_8k")
    assert manifest["provenance"] == "official release" and manifest["sources"] == {"mmlb_release": out.name} or \
        manifest["sources"].keys() == {"mmlb_release"}
    assert manifest["official_lengths"]["rows"] == 2 and manifest["release_file"] == "NIAH/vh_single_test_1000_K8_dep6.jsonl"


def test_rows_are_counted_flagged_and_keep_the_official_id(built_release, counter):
    out, _ = built_release
    rows = list(iter_rows(out, "vh_single_8k"))
    assert [r["id"] for r in rows] == ["7", "8"]
    for row in rows:
        meta = json.loads(row["meta"])
        assert meta["provenance"] == "official release" and meta["official_id"] in (7, 8)
        assert row["num_tokens"] == counter.example(row["prompt"], [_size(i["bytes"]) for i in row["images"]])
        assert meta["over_budget"] == (row["num_tokens"] > 8192)
    icl = [json.loads(r["meta"]) for r in iter_rows(out, "cars196_8k", columns=["meta"])]
    assert all(m["exemplar_choice"] in (0, 1) and len(m["candidates"]) == 2 for m in icl)


def _size(data: bytes):
    from mmlbdata.core.tokens import image_size

    return image_size(data)


def test_over_budget_rows_are_kept_and_flagged(rel, tmp_path, tokenizer_path):
    root, img = rel
    many = tmp_path / "many"
    shutil.copytree(root / "mmlb_image", many / "mmlb_image")
    _write_jsonl(many / "mmlb_data/NIAH/vh_single_test_1000_K8_dep6.jsonl", [
        {"id": 1, "question": "q?", "answer": "No", "ctxs": img["photos"] * 4}])
    [result] = build_configs(["vh_single_8k"], {"mmlb_release": many}, tmp_path / "out", tokenizer=tokenizer_path,
                             store_root=tmp_path / "store", progress=False)
    [row] = list(iter_rows(tmp_path / "out", "vh_single_8k"))
    assert result.ok and row["num_tokens"] > 8192 and json.loads(row["meta"])["over_budget"] is True
    assert read_manifest(tmp_path / "out", "vh_single_8k")["official_lengths"]["over_budget"] == 1


def test_a_repeated_official_id_keeps_both_rows_and_reports_the_rename(rel, tmp_path, tokenizer_path):
    """Official releases repeat ids (data.py @22b9f27 ``load_vrag_occlusion`` L82-100 keeps the first
    row per id); both rows are built, the second as ``1#2``, which a prediction keyed by the official
    id ``1`` never matches: the note and the manifest name the file and line of each rename."""
    root, img = rel
    dup = tmp_path / "dup"
    shutil.copytree(root / "mmlb_image", dup / "mmlb_image")
    relative = "NIAH/vh_single_test_1000_K8_dep6.jsonl"
    _write_jsonl(dup / "mmlb_data" / relative, [
        {"id": 1, "question": "q?", "answer": "No", "ctxs": img["photos"][:1]},
        {"id": 1, "question": "q?", "answer": "Yes", "ctxs": img["photos"][:1]},
        {"id": 2, "question": "q?", "answer": "Yes", "ctxs": img["photos"][:1]}])
    [result] = build_configs(["vh_single_8k"], {"mmlb_release": dup}, tmp_path / "out", tokenizer=tokenizer_path,
                             store_root=tmp_path / "store", progress=False)
    assert result.ok
    assert [(r["id"], r["answers"]) for r in iter_rows(tmp_path / "out", "vh_single_8k")] == [
        ("1", ["No"]), ("1#2", ["Yes"]), ("2", ["Yes"])]
    manifest = read_manifest(tmp_path / "out", "vh_single_8k")
    assert manifest["renamed_ids"] == [{"official_id": "1", "id": "1#2", "file": relative, "record": "line 2",
                                        "first_record": "line 1"}]
    [note] = [n for n in manifest["report"]["notes"] if "repeat an official id" in n]
    assert f"1 row(s) of {relative}" in note and "line 2 repeats id '1' of line 1 -> '1#2'" in note


def test_missing_or_escaping_image_skips_the_row_and_reports_it(rel, tmp_path, tokenizer_path):
    root, img = rel
    bad = tmp_path / "bad"
    shutil.copytree(root / "mmlb_image", bad / "mmlb_image")
    _write_jsonl(bad / "mmlb_data/NIAH/vh_single_test_1000_K8_dep6.jsonl", [
        {"id": 1, "question": "q?", "answer": "No", "ctxs": ["coco/absent.jpg"]},
        {"id": 2, "question": "q?", "answer": "No", "ctxs": ["../../etc/passwd"]},
        {"id": 3, "question": "q?", "answer": "No"},
        {"id": 4, "question": "q?", "answer": "Yes", "ctxs": img["photos"][:1]}])
    [result] = build_configs(["vh_single_8k"], {"mmlb_release": bad}, tmp_path / "out", tokenizer=tokenizer_path,
                             store_root=tmp_path / "store", progress=False)
    assert result.ok and [r["id"] for r in iter_rows(tmp_path / "out", "vh_single_8k")] == ["4"]
    skipped = result.report["skipped"]
    assert [s["record"] for s in skipped] == ["line 1", "line 2", "line 3"]
    assert all("vh_single_test_1000_K8_dep6.jsonl" in s["file"] for s in skipped)
    assert "absent.jpg" in skipped[0]["reason"] and "escapes" in skipped[1]["reason"] and "ctxs" in skipped[2]["reason"]


def test_subset_option_is_validated(rel, tmp_path, tokenizer_path):
    root, _ = rel
    [result] = build_configs(["vh_single_8k"], {"mmlb_release": root}, tmp_path / "out", tokenizer=tokenizer_path,
                             options={"subset": "half"}, store_root=tmp_path / "store", progress=False)
    assert not result.ok and "subset must be 'all' or 'paper'" in result.error


# -- export -> import ------------------------------------------------------------------------------
ROUND_TRIP = ("id", "dataset", "length", "num_tokens", "prompt", "answers", "metric")


def _comparable(folder: Path, config: str) -> list[tuple]:
    return [tuple(r[k] for k in ROUND_TRIP) + (tuple(i["bytes"] for i in r["images"]),)
            for r in iter_rows(folder, config)]


def test_export_then_import_gives_the_same_rows_for_every_category(built_release, tmp_path, tokenizer_path):
    from mmlbdata.exports.mmlongbench import export_jsonl

    out, results = built_release
    names = sorted(n for n, r in results.items() if r.status == "built")
    export_jsonl(out, tmp_path / "rel", configs=names)
    assert json.loads((tmp_path / "rel/mmlb_data/ICL/cars196_K8.json").read_text()).keys()
    again = build_configs(names, {"mmlb_release": tmp_path / "rel"}, tmp_path / "again", tokenizer=tokenizer_path,
                          store_root=tmp_path / "store", progress=False)
    assert all(r.ok and not r.report["num_skipped"] for r in again), [(r.config, r.error, r.report) for r in again]
    for name in names:
        assert _comparable(tmp_path / "again", name) == _comparable(out, name), name


def test_export_of_document_qa_in_the_release_form(built_release, tmp_path):
    from mmlbdata.exports.mmlongbench import export_jsonl

    out, _ = built_release
    [path] = export_jsonl(out, tmp_path / "rel", configs=["mmlongdoc_8k"])
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert path.name == "mmlongdoc_K8.jsonl"
    assert [r["question"] for r in records] == ["What year?", "Which two?"]  # the loader adds the prefix once
    assert [r["answer_format"] for r in records] == ["Integer", "List"]
    assert json.loads(records[1]["answer"]) == ["a", "b"]


def test_export_of_built_visual_haystack_round_trips(coco_mini, tmp_path, tokenizer_path):
    """Rows of our own VH recipe (real COCO) through the export and back through the release reader."""
    from mmlbdata.exports.mmlongbench import export_jsonl

    built = build_configs(["vh_single_8k"], {"coco": coco_mini}, tmp_path / "built", limit=1,
                          store_root=tmp_path / "store", tokenizer=tokenizer_path, progress=False)
    assert built[0].ok
    export_jsonl(tmp_path / "built", tmp_path / "rel")
    [again] = build_configs(["vh_single_8k"], {"mmlb_release": tmp_path / "rel"}, tmp_path / "again",
                            store_root=tmp_path / "store", tokenizer=tokenizer_path, progress=False)
    assert again.ok and _comparable(tmp_path / "again", "vh_single_8k") == _comparable(tmp_path / "built", "vh_single_8k")


def test_card_reports_provenance_and_official_lengths(built_release):
    from mmlbdata.dataset.card import card_context, render_card

    out, _ = built_release
    context = card_context(out, ["vh_single_8k", "cars196_8k"])
    assert [c["name"] for c in context["official"]] == ["vh_single_8k", "cars196_8k"]
    render_card(out, repo_id="org/mmlb", configs=["vh_single_8k", "cars196_8k"], plot=False)
    body = (out / "README.md").read_text()
    lengths = read_manifest(out, "vh_single_8k")["official_lengths"]
    assert "### Official release" in body and "provenance: official release" in body
    assert f"| `vh_single_8k` | `NIAH/vh_single_test_1000_K8_dep6.jsonl` | all | 2 | 0 | {lengths['min_tokens']} |" in body


# -- lmms-eval: a standard error for the aggregate -------------------------------------------------
def _item(metric: str, score: float, answer: str = "x") -> dict:
    return {"metric": metric, "score": score, "parsed": answer, "extra": {},
            "example": {"answers": [answer], "meta": "{}"}}


def test_lmms_eval_stderr_of_a_mean_is_analytic():
    """scores 1, 0, 1, 1: mean 0.75, sample sd sqrt((3 * 0.25**2 + 0.75**2) / 3) = 0.5, se 0.5 / 2."""
    from mmlbdata.exports.lmms_eval_hooks import aggregate, aggregate_stderr

    items = [_item("binary_acc", s) for s in (1.0, 0.0, 1.0, 1.0)]
    assert aggregate(items) == 0.75 and aggregate_stderr(items) == pytest.approx(0.25)
    assert aggregate_stderr(items[:1]) == 0.0


def test_lmms_eval_stderr_of_docqa_is_analytic():
    """DocQA overrides ``aggregate`` only to add the scorer notes; its score is still the mean, so
    its standard error is lmms-eval's ``mean_stderr`` (lmms_eval/api/metrics.py: sample sd /
    sqrt(n)), not a bootstrap: scores 1, 0 -> sd 0.7071, se 0.5 (a bootstrap gave 0.3597);
    1, 0, 0 -> sd 0.5774, se 0.3333 (bootstrap 0.2645). The same for every metric of the registry."""
    from mmlbdata.evaluation.metrics import metric_names
    from mmlbdata.exports.lmms_eval_hooks import aggregate_stderr, get_metric

    assert aggregate_stderr([_item("docqa", s) for s in (1.0, 0.0)]) == pytest.approx(0.5)
    assert aggregate_stderr([_item("docqa", s) for s in (1.0, 0.0, 0.0)]) == pytest.approx(1 / 3)
    assert aggregate_stderr([_item("docqa", 1.0)] * 5) == 0.0
    assert all(get_metric(name).mean_score for name in metric_names())


def test_lmms_eval_stderr_of_summ_judge_in_parity_mode_counts_the_judged_only(monkeypatch):
    """eval_gpt4_summ.py leaves out examples without a parseable reply: so does the standard error."""
    from mmlbdata.exports.lmms_eval_hooks import aggregate_stderr

    monkeypatch.setenv("MMLB_PARITY", "official")
    items = [_item("summ_judge", s) for s in (1.0, 0.0, 0.5)]
    items[2]["extra"] = {"judge_failed": True}
    assert aggregate_stderr(items) == pytest.approx(0.5)


def test_lmms_eval_stderr_of_a_corpus_aggregate_is_a_seeded_bootstrap(monkeypatch):
    """A metric whose score is not a mean (``mean_score = False``: here the median) is bootstrapped."""
    from mmlbdata.exports import lmms_eval_hooks as hooks

    class Median:
        mean_score = False

        def aggregate(self, results, examples):
            scores = sorted(r.score for r in results)
            return {"score": scores[len(scores) // 2]}

    monkeypatch.setattr(hooks, "get_metric", lambda name, scope=(): Median())
    items = [_item("median", s) for s in (1.0, 0.0, 1.0, 0.0, 1.0, 1.0)]
    first = hooks.aggregate_stderr(items)
    assert first == hooks.aggregate_stderr(items) and 0.0 < first < 1.0
    assert hooks.aggregate_stderr([_item("median", 1.0)] * 5) == 0.0


def test_lmms_eval_task_lists_the_stderr_metric(tmp_path, built_release):
    from mmlbdata.exports.lmms_eval import export_lmms_eval
    from tests.lmms_eval_tasks import load_task_yaml

    out, _ = built_release
    export_lmms_eval(out, tmp_path, configs=["vh_single_8k"])
    task = load_task_yaml(tmp_path / "mmlb_vh" / "mmlb_vh_single_8k.yaml")
    assert [m["metric"] for m in task["metric_list"]] == ["mmlb_score", "mmlb_score_stderr"]
    doc = next(iter_rows(out, "vh_single_8k", columns=["id", "dataset", "length", "num_tokens", "prompt", "question",
                                                        "answers", "metric", "meta"]))
    scored = task["process_results"](doc, [f"Answer: {doc['answers'][0]}"])
    assert scored["mmlb_score"] is scored["mmlb_score_stderr"] and scored["mmlb_score"]["score"] == 1.0


# -- VLMEvalKit ------------------------------------------------------------------------------------
class _ImageBaseStandIn:
    """What VLMEvalKit's ImageBaseDataset.__init__ does that the class relies on (vlmeval/dataset/
    image_base.py: load_data, meta_only when there is no image column, image_path cells to lists).
    VLMEvalKit is not on PyPI, so the real base cannot be installed here."""

    def __init__(self, dataset="MMBench", skip_noimg=True):
        self.dataset_name = dataset
        data = self.load_data(dataset)
        self.meta_only = "image" not in data
        self.data = data


def test_vlmevalkit_class_interleaves_and_scores(built_release, tmp_path, monkeypatch):
    import types

    import pandas as pd

    from mmlbdata.exports.vlmevalkit import export_tsv
    from mmlbdata.exports.vlmevalkit_dataset import register

    out, _ = built_release
    export_tsv(out, tmp_path / "lmu", configs=["vh_single_8k", "mm_niah_retrieval_image_8k"], images="path")
    monkeypatch.setenv("LMUData", str(tmp_path / "lmu"))
    namespace = types.SimpleNamespace(DATASET_CLASSES=[object], SUPPORTED_DATASETS=[])
    cls = register(namespace, base=_ImageBaseStandIn)
    assert namespace.MMLBDataset is cls and namespace.DATASET_CLASSES[0] is cls and cls.TYPE == "VQA"
    assert cls.supported_datasets() == ["mm_niah_retrieval_image_8k", "vh_single_8k"]
    monkeypatch.chdir(tmp_path)  # image paths resolve from anywhere
    dataset = cls(dataset="mm_niah_retrieval_image_8k")
    raw = next(iter_rows(out, "mm_niah_retrieval_image_8k"))
    messages = dataset.build_prompt(0)
    assert "".join(m["value"] if m["type"] == "text" else "<image>" for m in messages) == raw["prompt"]
    images = [m["value"] for m in messages if m["type"] == "image"]
    assert all(Path(p).is_absolute() for p in images)
    assert [Path(p).read_bytes() for p in images] == [i["bytes"] for i in raw["images"]]
    assert [m["type"] for m in messages[-2:]] == ["text", "image"] and messages[-2]["value"].endswith("\nC. ")

    predictions = pd.read_csv(tmp_path / "lmu" / "vh_single_8k.tsv", sep="\t")
    predictions["prediction"] = ["Answer: " + a for a in predictions["answer"]]
    predictions.loc[0, "prediction"] = "Answer: " + ("No" if predictions.loc[0, "answer"] == "Yes" else "Yes")
    predictions.to_csv(tmp_path / "model_vh_single_8k.tsv", sep="\t", index=False)
    table = cls(dataset="vh_single_8k").evaluate(str(tmp_path / "model_vh_single_8k.tsv"))
    assert table.to_dict("records") == [{"category": "vh_single", "metric": "binary_acc", "n": 2, "score": 0.5,
                                         "unscorable": 0}]
    assert (tmp_path / "model_vh_single_8k_mmlb_score.csv").is_file()


def test_cli_build_from_the_release(rel, tmp_path, tokenizer_path):
    """`mmlb build CONFIG --source mmlb_release=DIR` and `--all --benchmark mmlongbench`: configs the
    release lacks are reported as missing, the others built; `--option subset=paper` is accepted."""
    from mmlbdata.cli import main

    root, _ = rel
    common = ["--source", f"mmlb_release={root}", "--tokenizer", str(tokenizer_path), "--no-progress",
              "--cache-dir", str(tmp_path / "cache")]
    assert main(["build", "vh_single_8k", "--out", str(tmp_path / "one"), "--option", "subset=paper", *common]) == 0
    assert read_manifest(tmp_path / "one", "vh_single_8k")["subset"] == "paper"
    assert main(["build", "--all", "--benchmark", "mmlongbench", "vh_*", "--out", str(tmp_path / "all"), *common]) == 0
    from mmlbdata.dataset.stats import configs_in

    assert configs_in(tmp_path / "all") == ["vh_multi_8k", "vh_single_8k"]


# -- MMNeedle's released haystacks (source mmneedle_release) ---------------------------------------
def _needle_release(root: Path, real_data: Path) -> list[str]:
    """Real COCO photos standing in for stitched grids, metadata as huggingface/mmneedle.py reads it."""
    names = _coco(real_data)
    grids = []
    for i, name in enumerate(names):
        target = root / "images_stitched" / "2_2" / f"COCO_val2014_stitched_{i:04d}.jpg"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(real_data / "coco_mini" / "val2017" / name, target)
        grids.append(f"images_stitched/2_2/{target.name}")
    captions = {"val2014/a.jpg": "A dog on a sofa.", "val2014/b.jpg": "Two buses.", "val2014/c.jpg": "A cake."}
    (root / "file_to_caption.json").write_text(json.dumps(captions))
    meta = root / "metadata_stitched"
    meta.mkdir(parents=True, exist_ok=True)
    (meta / "annotations_1_2_2.json").write_text(json.dumps([
        {"id": 0, "image_ids": [grids[0]], "index": 0, "row": 1, "col": 0, "target": "val2014/a.jpg"},
        {"id": 1, "image_ids": [grids[1]], "index": -1, "row": -1, "col": -1, "target": "val2014/b.jpg"},
        {"id": 2, "image_ids": ["../escape.jpg"], "index": 0, "row": 0, "col": 0, "target": "val2014/c.jpg"}]))
    (meta / "2_annotations_10_2_2.json").write_text(json.dumps([
        {"id": 0, "image_ids": (grids * 2)[:10], "index": [3, -1], "row": [0, -1], "col": [1, -1],
         "target": ["val2014/c.jpg", "val2014/b.jpg"]}]))
    return grids


def test_mmneedle_release_rows(tmp_path, real_data, tokenizer_path, counter):
    from mmlb_builders.mmneedle import build_prompt

    root = tmp_path / "mmneedle"
    grids = _needle_release(root, real_data)
    results = build_configs(["mmneedle_m1_n2_k1", "mmneedle_m10_n2_k2"], {"mmneedle_release": root}, tmp_path / "out",
                            tokenizer=tokenizer_path, store_root=tmp_path / "store", progress=False)
    assert all(r.ok for r in results), [r.error for r in results]
    single = list(iter_rows(tmp_path / "out", "mmneedle_m1_n2_k1"))
    # 0-based index/row/col in the release -> the 1-based "index, row, column" answer; -1 when absent
    assert [r["answers"] for r in single] == [["1, 2, 1"], ["-1"]]
    assert single[0]["prompt"] == build_prompt(1, 2, ["A dog on a sofa."])
    assert [i["bytes"] for i in single[0]["images"]] == [(root / grids[0]).read_bytes()]
    assert single[0]["num_tokens"] == counter.example(single[0]["prompt"], [_size(i["bytes"]) for i in single[0]["images"]])
    skipped = results[0].report["skipped"]
    assert [s["record"] for s in skipped] == ["entry 2"] and "escapes" in skipped[0]["reason"]
    [multi] = list(iter_rows(tmp_path / "out", "mmneedle_m10_n2_k2"))
    assert multi["answers"] == ["4, 1, 2; -1"] and len(multi["images"]) == 10
    assert multi["prompt"] == build_prompt(10, 2, ["A cake.", "Two buses."])
    manifest = read_manifest(tmp_path / "out", "mmneedle_m10_n2_k2")
    assert manifest["provenance"] == "official release" and list(manifest["sources"]) == ["mmneedle_release"]
    assert manifest["release_file"] == "metadata_stitched/2_annotations_10_2_2.json"


def test_mmneedle_release_limit_counts_built_rows_and_keeps_the_manifest(tmp_path, real_data, tokenizer_path):
    """A skipped (unusable) entry does not use up the limit, and stopping at the limit still
    records where the rows came from."""
    root = tmp_path / "mmneedle"
    _needle_release(root, real_data)
    path = root / "metadata_stitched" / "annotations_1_2_2.json"
    entries = json.loads(path.read_text())
    path.write_text(json.dumps(entries[2:] + entries[:2]))  # the escaping entry first
    [result] = build_configs(["mmneedle_m1_n2_k1"], {"mmneedle_release": root}, tmp_path / "out", limit=1,
                             tokenizer=tokenizer_path, store_root=tmp_path / "store", progress=False)
    assert result.ok, result.error
    assert [r["answers"] for r in iter_rows(tmp_path / "out", "mmneedle_m1_n2_k1")] == [["1, 2, 1"]]
    manifest = read_manifest(tmp_path / "out", "mmneedle_m1_n2_k1")
    assert manifest["release_file"] == "metadata_stitched/annotations_1_2_2.json"


def test_mmneedle_release_honours_answer_form(tmp_path, real_data, tokenizer_path):
    from mmlb_builders.mmneedle import build_prompt, instruction

    root = tmp_path / "mmneedle"
    _needle_release(root, real_data)
    [result] = build_configs(["mmneedle_m10_n2_k2"], {"mmneedle_release": root}, tmp_path / "out",
                             options={"answer_form": "official"}, tokenizer=tokenizer_path,
                             store_root=tmp_path / "store", progress=False)
    assert result.ok, result.error
    [multi] = list(iter_rows(tmp_path / "out", "mmneedle_m10_n2_k2"))
    captions = ["A cake.", "Two buses."]
    assert multi["answers"] == ["4, 1, 2; 0, 0, 0"]  # the official +1 on the -1 labels
    assert multi["prompt"] == build_prompt(10, 2, captions, True) != build_prompt(10, 2, captions)
    assert multi["question"] == instruction(10, 2, captions, True)
    assert json.loads(multi["meta"])["answer_form"] == "official"


@pytest.mark.parametrize("protocol", ["v1.1", "v1.0"])
def test_export_of_our_document_qa_rows_reassembles_exactly(real_data, tmp_path, tokenizer_path, caplog, protocol):
    """Our doc-QA recipe prints 'Document X: <image>' per page (v1.1, data.py @22b9f27 L436) or
    'Document X (page N): <image>' (v1.0, @26197d2 L426): the export re-assembles every row under the
    protocol its manifest records, without a mismatch warning."""
    from mmlbdata.exports.mmlongbench import export_jsonl

    [built] = build_configs(["longdocurl_8k"], {"longdocurl": real_data / "longdocurl_sample"}, tmp_path / "built",
                            store_root=tmp_path / "store", tokenizer=tokenizer_path, progress=False,
                            options={"protocol": protocol})
    assert built.ok, built.error
    with caplog.at_level("WARNING", logger="mmlbdata"):
        [path] = export_jsonl(tmp_path / "built", tmp_path / "rel")
    rows = list(iter_rows(tmp_path / "built", "longdocurl_8k"))
    assert rows and "official loader would read differently" not in caplog.text
    assert ("(page " in rows[0]["prompt"]) == (protocol == "v1.0")
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(records) == len(rows)
    assert all(not r["question"].startswith("Based on Document") for r in records)
    assert {r["answer_format"] for r in records} <= {"Integer", "Float", "String", "List", "None"}


def test_release_builds_are_byte_identical(rel, tmp_path, tokenizer_path):
    root, _ = rel
    for out in ("a", "b"):
        results = build_configs(["vh_single_8k", "cars196_8k"], {"mmlb_release": root}, tmp_path / out,
                                tokenizer=tokenizer_path, store_root=tmp_path / "store", progress=False)
        assert all(r.ok for r in results)
    files_a = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert sorted(p.relative_to(tmp_path / "b") for p in (tmp_path / "b").rglob("*") if p.is_file()) == files_a
    assert {f.parts[0] for f in files_a} >= {"images", "manifests", "vh_single_8k.metadata.parquet"}
    assert all((tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes() for f in files_a)


def test_paper_subset_of_mixed_id_types_is_a_clear_error(tmp_path):
    _write_jsonl(tmp_path / "mixed.jsonl", [{"id": 1, "question": "q", "answer": "Yes", "ctxs": []},
                                            {"id": "two", "question": "q", "answer": "No", "ctxs": []}])
    with pytest.raises(ValueError, match="mixed.jsonl: ids of mixed types"):
        list(release.read_release_file(tmp_path / "mixed.jsonl", "vh", BuildReport(), paper=100))


def test_the_release_4k_files_have_configs_of_their_own(tmp_path, real_data, tokenizer_path, coco_mini):
    """generate_configs.py names 4k files ("K4"); they build from the release only."""
    root = tmp_path / "release4k"
    write_release(root, real_data, k=4)
    results = build_configs(["vh_single_4k", "cars196_4k", "mmlongdoc_4k"], {"mmlb_release": root}, tmp_path / "out",
                            tokenizer=tokenizer_path, store_root=tmp_path / "store", progress=False)
    assert all(r.ok for r in results), [r.error for r in results]
    assert read_manifest(tmp_path / "out", "vh_single_4k")["release_file"] == "NIAH/vh_single_test_1000_K4_dep6.jsonl"
    assert {r["length"] for r in iter_rows(tmp_path / "out", "vh_single_4k")} == {4096}
    [without] = build_all(["vh_single_4k"], {"coco": coco_mini}, tmp_path / "none", progress=False)
    assert without.status == "missing sources" and "mmlb_release" in without.error
    [direct] = build_configs(["vh_single_4k"], {"coco": coco_mini}, tmp_path / "none", progress=False)
    assert not direct.ok and "needs source 'mmlb_release'" in direct.error


def test_export_of_built_icl_round_trips(real_data, tmp_path, tokenizer_path):
    """Rows of our ICL recipe (real photos, two class folders) -> one JSON object, one domain per row
    (single-item rounds, so the loader's shuffles cannot reorder them) -> the same rows."""
    from mmlbdata.exports.mmlongbench import export_jsonl

    [built] = build_configs(["cars196_8k"], {"cars196": real_data / "images" / "hymenoptera_val"}, tmp_path / "built",
                            options={"num_classes": 2, "num_test": 3}, store_root=tmp_path / "store",
                            tokenizer=tokenizer_path, progress=False)
    assert built.ok, built.error
    [path] = export_jsonl(tmp_path / "built", tmp_path / "rel")
    data = json.loads(path.read_text())
    assert list(data) == [r["id"] for r in iter_rows(tmp_path / "built", "cars196_8k", columns=["id"])]
    assert all(len(entry["exemplar_list"]) == 1 and all(len(rnd) == 1 for rnd in entry["exemplar_list"][0])
               for entry in data.values())
    [again] = build_configs(["cars196_8k"], {"mmlb_release": tmp_path / "rel"}, tmp_path / "again",
                            store_root=tmp_path / "store", tokenizer=tokenizer_path, progress=False)
    assert again.ok and _comparable(tmp_path / "again", "cars196_8k") == _comparable(tmp_path / "built", "cars196_8k")


def test_icl_paper_subset_replays_the_official_shuffle_then_draws(rel):
    """data.py load_icl_er with max_test_samples: random.shuffle(test_examples), truncate, then the
    draws of update() continue the same random sequence (set_seed(42) before the load)."""
    root, _ = rel
    data = json.loads((root / "mmlb_data" / "ICL" / "cars196_K8.json").read_text())
    data["cars"]["test_example"] = [dict(e, id=f"t{i}") for i, e in enumerate(data["cars"]["test_example"] * 3)]
    exemplars = copy.deepcopy(data["cars"]["exemplar_list"])
    random.seed(42)
    tests = [{"domain": "cars", "example": e} for e in data["cars"]["test_example"]]
    random.shuffle(tests)
    expected = []
    for sample in tests[:4]:
        chosen = random.choice(exemplars)
        for one_round in chosen:
            random.shuffle(one_round)
        expected.append((sample["example"]["id"], [item["id"] for rnd in chosen for item in rnd]))
    ours = [(r.official_id, r.meta["exemplar_ids"]) for r in release.icl_rows(data, paper=4)]
    assert ours == expected


# -- the paper's ablation sets ---------------------------------------------------------------------
def test_ablation_sets_build_from_a_named_release_file(rel, tmp_path, tokenizer_path):
    """data.py load_text_rag (passages + original_question, no image), load_vrag_occlusion (ctxs whose
    doc_id is a positive's removed; with max_test_samples the first row per id), load_text_doc_qa
    ('Document {doc_id:.15} (page {page_id}): \\n{page_text}' per page, no image)."""
    shared, img = rel
    root = tmp_path / "ablations"
    shutil.copytree(shared / "mmlb_image", root / "mmlb_image")
    data = root / "mmlb_data"
    passages = [{"title": "Louvre", "text": "A museum.", "doc_id": "d1"}, {"title": "Seine", "text": "A river.", "doc_id": "d2"}]
    _write_jsonl(data / "vrag/triviaqa_test.jsonl", [
        {"id": "t1", "question": "unused", "original_question": "Where is the Louvre?", "answer": ["Paris"],
         "ctxs": passages}])
    _write_jsonl(data / "vrag/occ_test.jsonl", [
        {"id": "o1", "question": "Where is it?", "answer": ["Paris"], "image": img["photos"][0], "ctxs": passages,
         "positive_ctxs": [{"doc_id": "d1"}]},
        {"id": "o1", "question": "Again?", "answer": ["Paris"], "image": img["photos"][0], "ctxs": passages,
         "positive_ctxs": []}])
    _write_jsonl(data / "documentQA/text_doc_test.jsonl", [
        {"id": "x1", "question": "What year?", "doc_name": "4055915", "answer": "2019", "answer_format": "Integer",
         "page_list": img["pages"][:2], "page_text_list": ["First page text.", "Second page text."]}])
    out = tmp_path / "out"
    for config, name in (("triviaqa_8k", "vrag/triviaqa_test.jsonl"), ("occ_vrag_8k", "vrag/occ_test.jsonl"),
                         ("text_doc_8k", "documentQA/text_doc_test.jsonl")):
        [result] = build_configs([config], {"mmlb_release": root}, out, options={"release_file": name},
                                 tokenizer=tokenizer_path, store_root=tmp_path / "store", progress=False)
        assert result.ok, result.error
    [trivia] = list(iter_rows(out, "triviaqa_8k"))
    assert trivia["prompt"] == ("Use the given documents to write a concise and short answer to the question about a "
                                "named entity. " + ANSWER_LINE + "Document (Title: Louvre): A museum.\n\nDocument "
                                "(Title: Seine): A river.\n\nQuestion: Where is the Louvre?")
    assert trivia["images"] == [] and trivia["metric"] == "sub_em"
    occ = list(iter_rows(out, "occ_vrag_8k"))
    assert [r["id"] for r in occ] == ["o1", "o1#2"]
    assert "Louvre" not in occ[0]["prompt"] and "Document (Title: Seine): A river.\n\nQuestion: <image>Where is it?" in occ[0]["prompt"]
    [doc] = list(iter_rows(out, "text_doc_8k"))
    assert doc["prompt"].endswith("Document 4055915 (page 0): \nFirst page text.\n\nDocument 4055915 (page 1): \n"
                                  "Second page text.\n\nQuestion: Based on Document 4055915, answer the following "
                                  "question. What year?") and doc["images"] == []
    # the paper subset of the occlusion set keeps the first row of each drawn id (drop_duplicates keep="first")
    rows = [row.official_id for _, row in release.read_release_file(data / "vrag/occ_test.jsonl", "vrag_occ",
                                                                     BuildReport(), paper=100)]
    assert rows == ["o1"]
    [unnamed] = build_configs(["triviaqa_8k"], {"mmlb_release": root}, tmp_path / "none", tokenizer=tokenizer_path,
                              store_root=tmp_path / "store", progress=False)
    assert not unnamed.ok and "--option release_file" in unnamed.error


def test_release_configs_are_kept_on_resume(rel, tmp_path, tokenizer_path):
    """A config built from the release records provenance 'official release'; a rerun of the full
    build keeps it (only demo configs are never taken as finished builds)."""
    from mmlbdata.dataset.build import build_all

    root, _ = rel
    kwargs = dict(tokenizer=tokenizer_path, store_root=tmp_path / "store", progress=False)
    [first] = build_all(["vh_single_8k"], {"mmlb_release": root}, tmp_path / "o", **kwargs)
    assert first.status == "built"
    assert json.loads((tmp_path / "o" / "manifests" / "vh_single_8k.json").read_text())["provenance"] == "official release"
    [again] = build_all(["vh_single_8k"], {"mmlb_release": root}, tmp_path / "o", **kwargs)
    assert again.status == "kept"
