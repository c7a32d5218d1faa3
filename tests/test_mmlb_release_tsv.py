"""MMLongBench's extended release (VLMEvalKit TSVs) as a source (``mmlb_release_tsv``).

The TSVs are written here in the column layout of VLMEvalKit ``scripts/build_mmlongbench_tsv.py``
(``make_tsv_row``, commit 981e805d: index, question_id, question, answer, image_path, mmlb_subset,
task, source_dataset, question_type, tags, extra_info; pandas ``to_csv(sep='\\t')`` quoting) with
made-up content and real COCO photos from ``MMLB_TEST_DATA``. Expected prompts are written out by
hand from the template lines of that script.
"""
from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from mmlbdata.dataset.build import build_configs
from mmlbdata.exports import iter_rows
from mmlbdata.dataset.registry import resolve
from mmlbdata.core.report import BuildReport
from mmlbdata.sources import mmlb_release_tsv as tsv
from mmlbdata.dataset.writer import read_manifest

COLUMNS = ["index", "question_id", "question", "answer", "image_path", "mmlb_subset", "task",
           "source_dataset", "question_type", "tags", "extra_info"]
VH_HEAD = ("You are given a set of images. Please answer the question in Yes or No based on the given images. "
           "Write your answer in the following format:\nAnswer: [answer]\n\n")
NIAH_MC_HEAD = ("You are given interleaved text and images. Please answer the question with the option's letter "
                "(A, B, etc.) based on the given text and images. Write your answer in the following format:\n"
                "Answer: [answer]\n\n")
GOV_HEAD = ("You are given a government report from U.S. Government Accountability Office (GAO), and you are "
            "tasked to summarize the report. Write a concise summary (around 550 words) organized in multiple "
            "paragraphs. Where applicable, the summary should contain a short description of why GAO did this "
            "study, what GAO found, and what GAO recommends.\n\nGovernment Report:\n")
DOC_HEAD = ("You are given a document with text and images, and a question. Answer the question as concisely as "
            "you can, using a single phrase or sentence if possible. If the question cannot be answered based on "
            "the information in the article, write 'Not answerable.' Write your answer in the following format:\n"
            "Answer: [answer]\n\n")


def row(index, qid, question, answer, images, subset, task, source, extra) -> dict:
    """One row as make_tsv_row writes it (image_path and extra_info JSON, tags a JSON list)."""
    return {"index": index, "question_id": qid, "question": question, "answer": str(answer),
            "image_path": json.dumps(images), "mmlb_subset": subset, "task": task, "source_dataset": source,
            "question_type": "open", "tags": json.dumps(["multi"]), "extra_info": json.dumps(extra)}


def write_tsv(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS, delimiter="\t", lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def photos(root: Path, real_data: Path, folder: str) -> list[str]:
    names = sorted(p.name for p in (real_data / "coco_mini" / "val2017").glob("*.jpg"))[:4]
    for name in names:
        target = root / "mmlb_image" / folder / "coco" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(real_data / "coco_mini" / "val2017" / name, target)
    return [f"coco/{n}" for n in names]


def vh_prompt(n: int, question: str) -> str:
    return VH_HEAD + "\n".join(["<image token>"] * n) + f"\n\nQuestion: {question}"


@pytest.fixture(scope="module")
def release(tmp_path_factory, real_data):
    """A 512K TSV (vh_single, image MM-NIAH, gov, document QA) with images under mmlb_image/512K/."""
    root = tmp_path_factory.mktemp("tsv")
    p = photos(root, real_data, "512K")
    q7, q12 = "For the image with a kite, is there a boat?", "For the image with a cup, is there a fork?"
    mc_question = "Which image appeared in the text?" + "\nA. <image token>\nB. <image token>"
    sections = [{"section_title": "Why GAO Did This Study", "paragraphs": ["It was asked.", "Twice."]},
                {"section_title": "What GAO Found", "paragraphs": ["Little."]}]
    write_tsv(root / "vlmevalkit" / "MMLongBench_512K.tsv", [
        row(0, "7", vh_prompt(3, q7), "Yes", p[:3], "NIAH_512_sr25", "NIAH", "vh_single",
            {"question": q7, "answer": "Yes", "dataset_name": "vh_single"}),
        row(1, "12", vh_prompt(2, q12), "No", p[1:3], "NIAH_512_sr25", "NIAH", "vh_single",
            {"question": q12, "answer": "No", "dataset_name": "vh_single"}),
        row(2, "ri9", NIAH_MC_HEAD + "A passage.\n\n<image token>\n\nQuestion: " + mc_question, "1", p[:3],
            "NIAH_512_sr25", "NIAH", "retrieval-image", {"question": mc_question, "answer": 1}),
        row(3, "GAO-21-1", GOV_HEAD + "Document GAO-21-1 (page 0): <image token>\n\nNow please summarize the "
            "report.", "joined", [p[3]], "summ_512_sr50", "summ", "gov",
            {"summary": sections, "answer": "joined", "dataset_name": "gov"}),
        row(4, "d1", DOC_HEAD + "Document 4055915: <image token>\n\nQuestion: Based on Document 4055915, answer "
            "the following question. Which years?", '["2019", "2020"]', [p[0]], "documentQA_512_sr50",
            "documentQA", "longdocurl", {"answer": '["2019", "2020"]', "answer_format": "List",
                                        "doc_name": "4055915", "question": "Which years?"}),
    ])
    return root, p


def test_rows_keep_the_reference_ids_and_the_prompt_as_vlmevalkit_interleaves_it(release):
    root, p = release
    path = tsv.tsv_path(root, 524288)
    assert path == root / "vlmevalkit" / "MMLongBench_512K.tsv"
    rows = list(tsv.read_tsv(path, "vh_single", BuildReport()))
    assert [(n, r.official_id) for n, r in rows] == [(1, "7"), (2, "12")]
    first = rows[0][1]
    assert first.prompt == VH_HEAD + "<image>\n<image>\n<image>\n\nQuestion: For the image with a kite, is there a boat?"
    assert first.images == p[:3] and first.answers == ["Yes"] and first.meta["mmlb_subset"] == "NIAH_512_sr25"
    assert first.meta["tsv_index"] == "0" and "image_markers" not in first.meta


def test_answers_go_through_the_jsonl_readers_gold(release):
    root, _ = release
    path = tsv.tsv_path(root, 524288)
    [(_, mc)] = tsv.read_tsv(path, "mm_niah_retrieval_image", BuildReport())
    assert mc.answers == ["B"] and mc.meta["answer_index"] == 1  # the typed answer of extra_info
    assert mc.question == "Which image appeared in the text?\nA. <image>\nB. <image>"
    [(_, gov)] = tsv.read_tsv(path, "gov_report", BuildReport())
    assert gov.answers == ["Why GAO Did This Study:\nIt was asked.\nTwice.\n\nWhat GAO Found:\nLittle."]
    [(_, doc)] = tsv.read_tsv(path, "longdocurl", BuildReport())
    assert doc.answers == ['["2019", "2020"]'] and "answer_json" not in doc.meta  # the release's JSON text
    assert doc.meta["answer_format"] == "List" and doc.meta["doc_name"] == "4055915"
    assert not any("template_mismatch" in r.meta for r in (mc, gov, doc))  # each in its data.py template


@pytest.mark.parametrize("text, images, prompt, note", [
    ("a <image token> b <image> c", 2, "a <image> b <image> c", None),
    ("no marker", 2, "<image><image>no marker", "no image marker: the 2 images come first"),
    ("a <image token> b", 3, "a <image> b<image><image>", "1 markers for 3 images: the rest follow the text"),
    ("a <image token> b <image token> c", 1, "a <image> b  c", "2 markers for 1 images: the extra markers are dropped"),
    ("only text", 0, "only text", None),
])
def test_interleave_places_images_as_build_prompt_does(text, images, prompt, note):
    """mmlongbench.py build_prompt (981e805d): markers take images in order, extras dropped, no marker:
    images first, images left over: appended."""
    assert tsv.interleave(text, images) == (prompt, note)


def test_build_counts_flags_and_keeps_ids(release, tmp_path, tokenizer_path, counter):
    root, _ = release
    [result] = build_configs(["vh_single_512k"], {"mmlb_release_tsv": root}, tmp_path / "out",
                             tokenizer=tokenizer_path, store_root=tmp_path / "store", progress=False)
    assert result.ok, result.error
    rows = list(iter_rows(tmp_path / "out", "vh_single_512k"))
    assert [r["id"] for r in rows] == ["7", "12"]
    for built in rows:
        meta = json.loads(built["meta"])
        assert meta["provenance"] == "official release" and meta["mmlb_subset"] == "NIAH_512_sr25"
        sizes = [_size(i["bytes"]) for i in built["images"]]
        assert built["num_tokens"] == counter.example(built["prompt"], sizes) and meta["over_budget"] is False
    manifest = read_manifest(tmp_path / "out", "vh_single_512k")
    assert manifest["release_format"] == "vlmevalkit_tsv" and manifest["subset"] == "NIAH_512_sr25"
    assert manifest["official_lengths"]["rows"] == 2 and manifest["release_file"] == "MMLongBench_512K.tsv"


def _size(data: bytes):
    from mmlbdata.core.tokens import image_size

    return image_size(data)


def test_over_budget_rows_are_kept_and_flagged_and_bad_rows_reported(tmp_path, real_data, tokenizer_path):
    """A 32K TSV: 120 photos overfill 32K (kept, flagged); a missing image and a broken image_path are
    reported by row and skipped; images found under mmlb_image/ without a length folder."""
    p = photos(tmp_path, real_data, "")
    many = p * 30
    write_tsv(tmp_path / "MMLongBench_32K.tsv", [
        row(0, "1", vh_prompt(len(many), "q?"), "No", many, "NIAH_32", "NIAH", "vh_single", {"answer": "No"}),
        row(1, "2", vh_prompt(1, "q?"), "No", ["coco/absent.jpg"], "NIAH_32", "NIAH", "vh_single", {}),
        {**row(2, "3", vh_prompt(1, "q?"), "No", [], "NIAH_32", "NIAH", "vh_single", {}), "image_path": "[oops"},
        row(3, "4", vh_prompt(1, "q?"), "Yes", p[:1], "NIAH_32", "NIAH", "vh_single", {"answer": "Yes"}),
    ])
    [result] = build_configs(["vh_single_32k"], {"mmlb_release_tsv": tmp_path}, tmp_path / "out",
                             tokenizer=tokenizer_path, store_root=tmp_path / "store", progress=False)
    assert result.ok, result.error
    rows = list(iter_rows(tmp_path / "out", "vh_single_32k"))
    assert [r["id"] for r in rows] == ["1", "4"]
    assert rows[0]["num_tokens"] > 32768 and json.loads(rows[0]["meta"])["over_budget"] is True
    assert json.loads(rows[1]["meta"])["over_budget"] is False
    skipped = result.report["skipped"]
    assert [s["record"] for s in skipped] == ["row 2", "row 3"]
    assert all(s["file"].endswith("MMLongBench_32K.tsv") for s in skipped)
    assert "absent.jpg" in skipped[0]["reason"] and "JSONDecodeError" in skipped[1]["reason"]
    assert read_manifest(tmp_path / "out", "vh_single_32k")["official_lengths"]["over_budget"] == 1


def test_the_jsonl_release_wins_up_to_128k_the_tsv_beyond(tmp_path):
    config = resolve("vh_single_512k").config
    both = {"mmlb_release": tmp_path, "mmlb_release_tsv": tmp_path}
    assert config.source_keys(both) == ("mmlb_release_tsv",)
    assert config.missing_sources(both) == [f"mmlb_release_tsv file {tmp_path / 'MMLongBench_512K.tsv'}"]
    small = resolve("vh_single_32k").config
    assert small.source_keys(both) == ("mmlb_release",)
    assert small.source_keys({"mmlb_release_tsv": tmp_path}) == ("mmlb_release_tsv",)
    eight = resolve("vh_single_8k").config
    assert eight.source_keys({"mmlb_release_tsv": tmp_path}) == ("coco",)  # no 8K TSV


def test_a_file_that_is_not_the_release_tsv_is_a_clear_error(tmp_path, tokenizer_path):
    (tmp_path / "MMLongBench_256K.tsv").write_text("a\tb\n1\t2\n")
    [result] = build_configs(["gov_report_256k"], {"mmlb_release_tsv": tmp_path}, tmp_path / "out",
                             tokenizer=tokenizer_path, store_root=tmp_path / "store", progress=False)
    assert not result.ok and "MMLongBench_256K.tsv" in result.error and "no column" in result.error


def test_32k_tsv_is_cross_checked_against_the_jsonl_release(tmp_path, real_data, tokenizer_path):
    """Both releases given at 32K: the rows come from the JSON-lines files, and the TSV's rows are
    matched by id: one agrees, one has another answer, one id the JSON-lines file lacks."""
    from test_mmlb_release import write_release

    img = write_release(tmp_path, real_data, k=32)
    p = img["photos"]
    q7, q8 = "For the image with a dog, is there a cat?", "For the image with a dog, is there a cow?"
    write_tsv(tmp_path / "MMLongBench_32K.tsv", [
        row(0, "7", vh_prompt(3, q7), "Yes", p[:3], "NIAH_32", "NIAH", "vh_single", {"answer": "Yes"}),
        row(1, "8", vh_prompt(2, q8), "Yes", p[1:3], "NIAH_32", "NIAH", "vh_single", {"answer": "Yes"}),
        row(2, "99", vh_prompt(1, q8), "No", p[:1], "NIAH_32", "NIAH", "vh_single", {"answer": "No"}),
    ])
    sources = {"mmlb_release": tmp_path, "mmlb_release_tsv": tmp_path}
    [result] = build_configs(["vh_single_32k"], sources, tmp_path / "out", tokenizer=tokenizer_path,
                             store_root=tmp_path / "store", progress=False)
    assert result.ok, result.error
    manifest = read_manifest(tmp_path / "out", "vh_single_32k")
    assert manifest["release_file"] == "NIAH/vh_single_test_1000_K32_dep6.jsonl"
    assert manifest["tsv_cross_check"] == {"tsv_rows": 3, "matched": 2, "prompts_differ": 0, "images_differ": 0,
                                           "answers_differ": 1, "missing_from_jsonl": 1}


def test_unusual_rows_are_kept_flagged_and_counted(tmp_path, real_data, tokenizer_path):
    """A VH row whose markers miss an image, and one whose prompt is not data.py's VH template (a
    different instruction): both kept as released, flagged in meta, counted in the build report."""
    p = photos(tmp_path, real_data, "")
    write_tsv(tmp_path / "MMLongBench_128K.tsv", [
        row(0, "1", vh_prompt(1, "q?"), "No", p[:2], "NIAH_128", "NIAH", "vh_single", {"answer": "No"}),
        row(1, "2", "Look: <image token>\n\nQuestion: q?", "No", p[:1], "NIAH_128", "NIAH", "vh_single", {}),
    ])
    [result] = build_configs(["vh_single_128k"], {"mmlb_release_tsv": tmp_path}, tmp_path / "out",
                             tokenizer=tokenizer_path, store_root=tmp_path / "store", progress=False)
    rows = list(iter_rows(tmp_path / "out", "vh_single_128k"))
    first, second = (json.loads(r["meta"]) for r in rows)
    assert rows[0]["prompt"].endswith("<image>\n\nQuestion: q?<image>") and len(rows[0]["images"]) == 2
    assert first["image_markers"] == "1 markers for 2 images: the rest follow the text"
    assert "template_mismatch" not in first and "not in the official vh template" in second["template_mismatch"]
    assert any("1 rows with image markers" in n and "1 prompts not in data.py's template" in n
               for n in result.report["notes"])


def test_ablation_sets_are_not_read_from_the_tsv(tmp_path):
    """triviaqa / occ_vrag / text_doc are in the JSON-lines release only (build_mmlongbench_tsv.py
    converts the five tasks' main files)."""
    config = resolve("triviaqa_32k").config
    assert not config.in_release_tsv and config.source_keys({"mmlb_release_tsv": tmp_path}) == ("mmlb_release",)


def test_without_extra_info_the_answer_column_is_the_gold():
    """mmlongbench.py L283 `extra.get('answer', row['answer'])`: the stringified column. GovReport's
    column is already the joined summary (build_mmlongbench_tsv.py convert_summ)."""
    gov = tsv.tsv_row("gov_report", {"question": GOV_HEAD + "Document X (page 0): <image token>\n\nNow please "
                                     "summarize the report.", "answer": "Why:\nA.\n\nFound:\nB.",
                                     "image_path": '["gov/X/page0.png"]', "extra_info": "not json"})
    assert gov.answers == ["Why:\nA.\n\nFound:\nB."] and gov.images == ["gov/X/page0.png"]
    vh = tsv.tsv_row("vh_single", {"question": vh_prompt(1, "q?"), "answer": "Yes", "image_path": "coco/a.jpg"})
    assert vh.answers == ["Yes"] and vh.images == ["coco/a.jpg"] and vh.prompt.endswith("<image>\n\nQuestion: q?")


def test_image_path_as_a_python_list_literal_is_read_as_toliststr_reads_it():
    """VLMEvalKit's toliststr (smp/misc.py, 981e805d) evals image_path: a pandas-written ``str(list)``
    (single quotes) loads there, so it is read here too (with ast.literal_eval, never eval)."""
    vh = tsv.tsv_row("vh_single", {"question": vh_prompt(2, "q?"), "answer": "Yes",
                                   "image_path": str(["coco/a.jpg", "coco/b's.jpg"])})
    assert vh.images == ["coco/a.jpg", "coco/b's.jpg"] and "image_markers" not in vh.meta
    with pytest.raises(json.JSONDecodeError):
        tsv.tsv_row("vh_single", {"question": vh_prompt(1, "q?"), "image_path": "[__import__('os')]"})


def test_a_byte_that_is_not_utf8_costs_its_row_only(tmp_path):
    """As for the JSON-lines release (#27): one bad byte is reported by row, the other rows are read."""
    path = tmp_path / "MMLongBench_512K.tsv"
    write_tsv(path, [row(i, str(i), vh_prompt(1, f"q{i} XX?"), "No", ["coco/a.jpg"], "NIAH_512_sr25", "NIAH",
                         "vh_single", {"answer": "No"}) for i in range(3)])
    path.write_bytes(path.read_bytes().replace(b"q1 XX", b"q1 \xff\xfe"))
    report = BuildReport()
    rows = list(tsv.read_tsv(path, "vh_single", report))
    assert [(n, r.official_id) for n, r in rows] == [(1, "0"), (3, "2")]
    assert [(s["record"], s["reason"]) for s in report.to_dict()["skipped"]] == \
        [("row 2", "not UTF-8: a byte in column question")]


@pytest.mark.parametrize("dataset, answer", [
    ("vh_single", {"x": 1}), ("vh_single", None), ("infoseek", []), ("infoseek", [3]),
    ("mm_niah_retrieval_image", True), ("cars196", ["a"]), ("multi_lexsum", 5), ("gov_report", ["a"]),
])
def test_a_typed_answer_the_release_schema_refuses_is_reported_not_built(tmp_path, dataset, answer):
    """extra_info's typed answer is what VLMEvalKit scores: it meets the JSON-lines release's schema
    for its kind (#27: an ``{"x": 1}`` answer was built silently, as ``"{'x': 1}"``)."""
    task, source = next(k for k, v in tsv.DATASET_OF.items() if v == dataset)
    name = "summary" if dataset in ("gov_report", "multi_lexsum") else "answer"
    path = tmp_path / "MMLongBench_512K.tsv"
    write_tsv(path, [row(0, "1", vh_prompt(1, "q?"), "x", ["coco/a.jpg"], "s", task, source, {name: answer}),
                     row(1, "2", vh_prompt(1, "q?"), "Yes", ["coco/a.jpg"], "s", task, source, {})])
    report = BuildReport()
    assert [r.official_id for _n, r in tsv.read_tsv(path, dataset, report)] == ["2"]
    [skip] = report.to_dict()["skipped"]
    assert skip["record"] == "row 1" and f"extra_info {name}" in skip["reason"]


def test_columns_nested_too_deep_to_parse_cost_their_row_only(tmp_path):
    """A deeply nested extra_info reads as {} (mmlongbench.py _parse_extra_info swallows any error);
    a deeply nested image_path is reported; neither fails the file (json raises RecursionError)."""
    deep = "[" * 100_000 + "]" * 100_000
    rows = [row(i, str(i), vh_prompt(1, "q?"), "Yes", ["coco/a.jpg"], "s", "NIAH", "vh_single", {"answer": "Yes"})
            for i in range(3)]
    rows[0]["extra_info"], rows[1]["image_path"] = deep, deep
    path = tmp_path / "MMLongBench_512K.tsv"
    write_tsv(path, rows)
    report = BuildReport()
    assert [(n, r.official_id, r.answers) for n, r in tsv.read_tsv(path, "vh_single", report)] == \
        [(1, "0", ["Yes"]), (3, "2", ["Yes"])]
    [skip] = report.to_dict()["skipped"]
    assert skip["record"] == "row 2" and "RecursionError" in skip["reason"]


def test_images_resolve_per_image_from_the_length_folder_then_the_base(tmp_path, real_data, tokenizer_path):
    """mmlongbench.py _resolve_image_path tries mmlb_image/<L>/name, then mmlb_image/name, for each
    image: names that already start with 512K/ (or that lie in the base) are found although the
    512K folder exists."""
    p = photos(tmp_path, real_data, "512K")
    shutil.copy(tmp_path / "mmlb_image" / "512K" / p[3], tmp_path / "mmlb_image" / "base.jpg")
    write_tsv(tmp_path / "MMLongBench_512K.tsv", [
        row(0, "1", vh_prompt(2, "q?"), "No", [f"512K/{p[0]}", p[1]], "NIAH_512_sr25", "NIAH", "vh_single", {}),
        row(1, "2", vh_prompt(2, "q?"), "No", ["base.jpg", p[2]], "NIAH_512_sr25", "NIAH", "vh_single", {}),
    ])
    [result] = build_configs(["vh_single_512k"], {"mmlb_release_tsv": tmp_path}, tmp_path / "out",
                             tokenizer=tokenizer_path, store_root=tmp_path / "store", progress=False)
    assert result.ok, result.error
    assert not result.report["skipped"]
    assert [len(r["images"]) for r in iter_rows(tmp_path / "out", "vh_single_512k")] == [2, 2]


def test_a_lone_surrogate_escape_in_extra_info_costs_its_row_only(tmp_path):
    path = tmp_path / "MMLongBench_512K.tsv"
    rows = [row(i, str(i), vh_prompt(1, "q?"), "Yes", ["coco/a.jpg"], "s", "NIAH", "vh_single", {"answer": "Yes"})
            for i in range(2)]
    rows[0]["extra_info"] = '{"answer": "Yes\\ud800"}'
    write_tsv(path, rows)
    report = BuildReport()
    assert [r.official_id for _n, r in tsv.read_tsv(path, "vh_single", report)] == ["1"]
    assert "lone surrogate" in report.to_dict()["skipped"][0]["reason"]


def test_the_manifest_records_the_protocol_of_the_tsv_prompts(release, tmp_path, tokenizer_path):
    """--protocol v1.0 asks for page ids in document-QA prompts; the TSV's are v1.1 (no page ids), so
    a document-QA config records v1.1 (the card showed the v1.0 asked for) and says why; a config whose
    prompts do not depend on the protocol records the one asked for."""
    root, _ = release
    results = build_configs(["longdocurl_512k", "vh_single_512k"], {"mmlb_release_tsv": root}, tmp_path / "out",
                            tokenizer=tokenizer_path, store_root=tmp_path / "store", progress=False,
                            options={"protocol": "v1.0"})
    assert all(r.ok for r in results), [r.error for r in results]
    assert read_manifest(tmp_path / "out", "longdocurl_512k")["protocol"] == "v1.1"
    assert read_manifest(tmp_path / "out", "vh_single_512k")["protocol"] == "v1.0"
    assert any("protocol v1.0 cannot be applied" in n for n in results[0].report["notes"])
