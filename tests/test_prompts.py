"""MMLongBench's prompt assembly (``mmlbdata.official.mmlongbench_prompts``) against its official ``data.py``.

Every expected string below is typed from the official lines (EdinburghNLP/MMLongBench ``data.py``,
read at commit 26197d25, the version the search index holds; line numbers are that file's): the
loader's ``user_template`` formatted with the context and question its ``update`` builds. None is
produced by the code under test.
"""
from __future__ import annotations

import pytest

from mmlbdata.official import mmlongbench_prompts as prompts
from mmlbdata.sources import mmlb_release

ANSWER_FORMAT = "Write your answer in the following format:\nAnswer: [answer]\n\n"


def test_vrag_prompt():
    # load_vrag: user_template L41, passage_template L53, "\n\n".join L56, "<image>" + question L57
    context = "\n\n".join([prompts.passage("Ant", "An insect."), prompts.passage("Bee", "Makes honey.")])
    assert prompts.render("vrag", context, "<image>What is it?") == (
        "Use the given documents to write a concise and short answer to the question about the entity shown "
        "in the image. " + ANSWER_FORMAT + "Document (Title: Ant): An insect.\n\nDocument (Title: Bee): "
        "Makes honey.\n\nQuestion: <image>What is it?")


def test_visual_haystack_prompt():
    # load_visual_haystack: user_template L160, context "\n".join(["<image>"] * n) L174
    assert prompts.render("vh", prompts.vh_context(3), "For the image with a dog, is there a cat?") == (
        "You are given a set of images. Please answer the question in Yes or No based on the given images. "
        + ANSWER_FORMAT + "<image>\n<image>\n<image>\n\nQuestion: For the image with a dog, is there a cat?")


def test_mm_niah_prompts():
    # load_mm_niah_text L202 / load_mm_niah_image_count L240 (same template), paragraphs "\n\n" L216
    assert prompts.render("niah", "p1\n\n<image>\n\np2", "How many?") == (
        "You are given interleaved text and images. Please answer the question based on the given text and "
        "images. " + ANSWER_FORMAT + "p1\n\n<image>\n\np2\n\nQuestion: How many?")
    assert prompts.render("niah_count", "x", "q") == prompts.render("niah", "x", "q")
    # load_mm_niah_image_mc: user_template L275, choices appended to the question L292
    question = "Which image appears?" + prompts.image_choices(3)
    assert question == "Which image appears?\nA. <image>\nB. <image>\nC. <image>"
    assert prompts.render("niah_choice", "p1", question) == (
        "You are given interleaved text and images. Please answer the question with the option's letter "
        "(A, B, etc.) based on the given text and images. " + ANSWER_FORMAT
        + "p1\n\nQuestion: Which image appears?\nA. <image>\nB. <image>\nC. <image>")


def test_icl_prompt():
    # load_icl_er: user_template L311 ("{{label}}" prints "{label}"), item_template L312,
    # "\n\n".join L340, question "<image>" L337
    context = "\n\n".join([prompts.icl_item(2), prompts.icl_item(0)])
    assert prompts.render("icl", context, "<image>") == (
        "You need to recognize entities in images. Use the provided mapping from the image to label to assign "
        "a label to the test image. Only output \"label: {label}\" and nothing else.\n\nTraining examples:\n"
        "<image>\nlabel: 2\n\n<image>\nlabel: 0\n\nNow classify this image: <image>")


def test_summary_prompts():
    # load_gov_report L359 / load_multi_lexsum L393, item_template L360 / L394 (".15" cuts the id)
    pages = "\n\n".join([prompts.page_item("gao-12-156", 0), prompts.page_item("EE-AL-0045-0001-extra", 7)])
    assert pages == "Document gao-12-156 (page 0): <image>\n\nDocument EE-AL-0045-0001 (page 7): <image>"
    assert prompts.render("gov", pages) == (
        "You are given a government report from U.S. Government Accountability Office (GAO), and you are "
        "tasked to summarize the report. Write a concise summary (around 550 words) organized in multiple "
        "paragraphs. Where applicable, the summary should contain a short description of why GAO did this "
        "study, what GAO found, and what GAO recommends.\n\nGovernment Report:\n" + pages
        + "\n\nNow please summarize the report.")
    assert prompts.render("lexsum", pages) == (
        "You are given the legal documents in a civil rights lawsuit, and you are tasked to summarize the "
        "case. Write a concise summary of one paragraph (200 to 250 words). The summary should contain a "
        "short description of the background, the parties involved, and the outcomes of the case.\n\n"
        "Legal documents:\n" + pages + "\n\nNow please summarize the case.")


def test_document_qa_prompt():
    # load_doc_qa: user_template L425, item_template L426, question prefix L444
    question = prompts.doc_question("PG_2021.03.04_US-Views-on-China_FINAL.pdf", "Who?")
    assert question == "Based on Document PG_2021.03.04_U, answer the following question. Who?"
    context = prompts.page_item("4057524", 113)
    assert prompts.render("docqa", context, question) == (
        "You are given a document with text and images, and a question. Answer the question as concisely as "
        "you can, using a single phrase or sentence if possible. If the question cannot be answered based on "
        "the information in the article, write 'Not answerable.' " + ANSWER_FORMAT
        + "Document 4057524 (page 113): <image>\n\nQuestion: Based on Document PG_2021.03.04_U, answer the "
          "following question. Who?")


@pytest.mark.parametrize("kind, prefix", [("vrag", "Answer:"), ("vh", "Answer:"), ("niah", "Answer:"),
                                          ("niah_choice", "Answer:"), ("icl", "label:"), ("gov", "Summary:"),
                                          ("lexsum", "Summary:"), ("docqa", "Answer:")])
def test_answer_prefix_is_the_system_template(kind, prefix):
    # system_template of each loader: L42, L161, L203, L276, L313, L361, L395, L427
    assert prompts.answer_prefix(kind) == prefix


def test_recipes_build_with_the_shared_templates():
    from mmlb_builders import icl, mmniah, summ, vh, vrag
    from mmlbdata.dataset import docpack

    assert vh.build_prompt(2, "q") == prompts.render("vh", "<image>\n<image>", "q")
    assert vrag.build_prompt([{"title": "T", "text": "x"}], "q") == \
        prompts.render("vrag", "Document (Title: T): x", "<image>q")
    assert icl.build_prompt([1]) == prompts.render("icl", "<image>\nlabel: 1", "<image>")
    assert summ.Page("doc", 4, 1, 1, None).intro == "Document doc (page 4): <image>"
    assert docpack.docqa_prompt([("doc", 2)], "q", "v1.0") == prompts.render("docqa", "Document doc (page 2): <image>", "q")
    # v1.1 (the default): data.py @22b9f27 L436 item_template "Document {doc_id:.15}: <image>"
    assert docpack.docqa_prompt([("doc", 2)], "q") == prompts.render("docqa", "Document doc: <image>", "q")
    units = [mmniah.Unit(text="p"), mmniah.Unit(path="x.jpg")]
    assert mmniah.render(units, "q", "niah_choice") == prompts.render("niah_choice", "p\n\n<image>", "q")


def test_release_page_label_reads_what_the_recipes_write():
    """A page file named as the export names it reads back to the recipe's page item."""
    item = prompts.page_item("EE-AL-0045-0001", 12)
    assert mmlb_release.page_label("ab/abcdef/EE-AL-0045-0001/page12.png", -1) == item
    assert mmlb_release.page_label("ab/abcdef/EE-AL-0045-0001/page12.png", 1) == item


def _niah(task, modality, **kw):
    from mmlbdata.sources.mmniah import NiahRecord

    return NiahRecord(id="1", task=task, modality=modality, documents=[], question="Which one?",
                      question_images=[], answer=0, needles=[], depths=[], **kw)


def test_mm_niah_loader_choice_follows_load_data():
    """data.py load_data (its mm_niah branch): image retrieval/reasoning -> the multiple-choice loader (choices
    appended, L292); image counting -> load_mm_niah_image_count; text -> load_mm_niah_text, which
    leaves the question as released (no choice appended, whatever the record holds)."""
    from mmlb_builders.mmniah import loader_kind, question_text

    image_mc = _niah("retrieval", "image", choice_images=["a.jpg", "b.jpg"])
    assert (loader_kind(image_mc), question_text(image_mc)) == \
        ("niah_choice", "Which one?\nA. <image>\nB. <image>")
    assert loader_kind(_niah("reasoning", "image", choice_images=["a.jpg"])) == "niah_choice"
    assert loader_kind(_niah("counting", "image")) == "niah_count"
    text = _niah("reasoning", "text", choices=["red", "blue"])
    assert (loader_kind(text), question_text(text)) == ("niah", "Which one?")


@pytest.mark.parametrize("config, source, folder, kind", [
    ("longdocurl_8k", "longdocurl", "longdocurl_sample", "docqa"),
    ("vh_single_8k", "coco", "coco_mini", "vh"),
])
def test_rebuilt_rows_are_what_the_official_loader_assembles_from_their_records(
        config, source, folder, kind, real_data, tokenizer_path, tmp_path):
    """A row built from the real sample, written as the release record the official loader reads
    (page files named ``<doc_id>/page<N>``), is assembled back by the loader's rules (load_doc_qa /
    load_visual_haystack) into the same prompt and image order: nothing differs."""
    from mmlbdata.dataset.build import build_configs
    from mmlbdata.exports import iter_rows
    from mmlbdata.exports.mmlongbench import official_record

    [result] = build_configs([config], {source: real_data / folder}, tmp_path / "out", limit=1,
                             store_root=tmp_path / "store", tokenizer=tokenizer_path, progress=False)
    assert result.ok, result.error
    rows = list(iter_rows(tmp_path / "out", config))
    assert rows
    for row in rows:
        record, problem = official_record(row, kind, tmp_path / "mmlb_image")
        assert problem is None, f"{row['id']}: {problem}"
        if kind == "docqa":
            assert all("/page" in path for path in record["page_list"])


def test_rebuilt_icl_row_is_what_the_official_icl_loader_assembles(real_data, tokenizer_path, tmp_path):
    """load_icl_er on the release entry of a row built from real photos (one exemplar per round, so
    the loader's shuffles cannot move them) gives back the row's prompt and image order."""
    from mmlbdata.dataset.build import build_configs
    from mmlbdata.exports import iter_rows
    from mmlbdata.exports.mmlongbench import icl_entry

    source = real_data / "images" / "hymenoptera_val"
    [result] = build_configs(["food101_8k"], {"food101": source}, tmp_path / "out", limit=1,
                             store_root=tmp_path / "store", tokenizer=tokenizer_path, progress=False)
    assert result.ok, result.error
    rows = list(iter_rows(tmp_path / "out", "food101_8k"))
    assert rows
    for row in rows:
        entry, problem = icl_entry(row, tmp_path / "mmlb_image")
        assert problem is None and len(entry["exemplar_list"][0]) == row["prompt"].count("<image>") - 1


def test_rebuilt_gov_report_row_is_what_the_official_summary_loader_assembles(tokenizer_path, tmp_path):
    """load_gov_report on the exported record (page files ``<doc_id>/page<N>``, page id read with
    ``split("page")[1]``) gives back the row's prompt: pages numbered from 0 as the recipe writes them."""
    from summ_fixtures import make_govreport_release

    from mmlbdata.dataset.build import build_configs
    from mmlbdata.exports import iter_rows
    from mmlbdata.exports.mmlongbench import official_record

    root = make_govreport_release(tmp_path / "gov", ["GAO-12-604"], body_pages=6, highlights_pages=1,
                                  size=(200, 260)).parent
    [result] = build_configs(["gov_report_8k"], {"govreport": root}, tmp_path / "out", limit=1,
                             store_root=tmp_path / "store", tokenizer=tokenizer_path, progress=False)
    assert result.ok, result.error
    [row] = list(iter_rows(tmp_path / "out", "gov_report_8k"))
    assert "Document gao-12-604 (page 0): <image>" in row["prompt"]
    record, problem = official_record(row, "gov", tmp_path / "mmlb_image")
    assert problem is None and record["image_list"][0].endswith("/gao-12-604/page0.png")
