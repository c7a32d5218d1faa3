"""Source readers of the document-QA releases: MMLongBench-Doc, LongDocURL, SlideVQA."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from PIL import Image

from mmlbdata.sources import longdocurl, mmlongbench_doc as mmld, slidevqa
from mmlbdata.sources.docqa import DocQuestion
from mmlbdata.sources.records import BadRecord

# ------------------------------------------------------------------ MMLongBench-Doc


@pytest.fixture(scope="module")
def mmld_rows(real_data):
    return list(mmld.read_samples(real_data / "mmlongbench_doc"))


def test_mmld_reads_all_rows_and_flags_known_defects(mmld_rows):
    assert len(mmld_rows) == 1082 and not any(isinstance(r, BadRecord) for r in mmld_rows)
    flagged = Counter(flag for row in mmld_rows for flag in row.flags)
    assert flagged[mmld.INT_NOT_INTEGER] == 4
    assert flagged[mmld.NO_EVIDENCE_PAGES] == 12
    not_int = sorted(r.index for r in mmld_rows if mmld.INT_NOT_INTEGER in r.flags)
    assert not_int == [210, 732, 734, 972]
    assert mmld_rows[734].answer == "yes"  # kept as released, not crashed on


def test_mmld_typed_answers(mmld_rows):
    by_index = {row.index: row for row in mmld_rows}
    assert by_index[881].answer == 5 and by_index[881].evidence_pages == (3, 6, 8, 9, 10)
    assert by_index[1024].answer == 714.3
    assert by_index[1081].answer == "-3.65%"  # percent strings stay strings
    assert isinstance(by_index[115].answer, list) and by_index[115].answer[0] == "China"
    assert by_index[0].evidence_sources == ("Chart",)
    assert by_index[880].answer == "Not answerable" and by_index[880].evidence_pages == ()


def test_mmld_never_evals(tmp_path):
    marker = tmp_path / "pwned"
    row = {"doc_id": "a.pdf", "doc_type": "x", "question": "q", "answer_format": "List",
           "answer": f"__import__('pathlib').Path({str(marker)!r}).touch()",
           "evidence_pages": "[1]", "evidence_sources": "[]"}
    (tmp_path / "samples.json").write_text(json.dumps([row, {"doc_id": "b.pdf"}]))
    rows = list(mmld.read_samples(tmp_path))
    assert not marker.exists()
    assert mmld.SCALAR_STORED_AS_LIST in rows[0].flags
    assert isinstance(rows[1], BadRecord) and "row 1" in rows[1].record


def test_mmld_clean_for_docvqa(mmld_rows):
    """MMLongBench appendix B.5 on the real samples.json, as the released files apply it."""
    kept, dropped = {}, {}
    for row in mmld_rows:
        question, why = mmld.clean_for_docvqa(row)
        (kept if question else dropped)[row.index] = question or why
    assert (kept[682].answer_format, kept[682].answer) == ("Int", 92)  # scalar stored as List
    assert (kept[214].answer_format, kept[214].answer) == ("Int", 7)  # '7.0' labelled Float
    assert (kept[1078].answer_format, kept[1078].answer) == ("Int", 1577)  # '$1577.00'
    assert (kept[1057].answer_format, kept[1057].answer) == ("Float", 0.66)
    assert (kept[210].answer_format, kept[210].answer) == ("Float", "21%")
    assert (kept[148].answer_format, kept[148].answer) == ("Str", "89706")  # a zip code stays text
    assert (kept[41].answer_format, kept[41].answer) == ("Int", 300)  # '300 million', "an integer"
    assert [(kept[i].answer_format, kept[i].answer) for i in (732, 734, 972)] == [
        ("Int", "14:04 CET"), ("Int", "yes"), ("Int", "GPT-4")]  # the release keeps the label
    # one-element lists ('["Stage 5"]', ['Fact Checker']) are dropped, and so are mixed ones
    assert all("1 item" in dropped[i] for i in (238, 633, 721))
    assert "mixes numbers and strings" in dropped[6]  # ['White', '10%']
    assert all(4 <= len(q.answer) <= 30 and len(q.answer.split()) <= 5
               for q in kept.values() if q.answer_format == "Str")
    assert all(len(str(item)) <= 30 and len(str(item).split()) <= 5 for q in kept.values()
               if q.answer_format == "List" for item in q.answer)
    # a List answer keeps its items' JSON types, and its gold is the release's JSON text (issue 35:
    # utils.py @22b9f27 L326 json.loads it, L468 shows it to the judge)
    numeric = [q for q in kept.values() if q.answer_format == "List" and q.answer == [16, 19, 25]]
    assert numeric and numeric[0].answers() == ["[16, 19, 25]"]
    strings = [q for q in kept.values() if q.answer_format == "List" and isinstance(q.answer[0], str)]
    assert strings and all(q.answers()[0].startswith('["') for q in strings)
    assert kept[881].answer_pages == (2, 5, 7, 8, 9)  # 0-based
    assert len(kept) == 1082 - len(dropped)


# Where questions sit in the released documentQA/mmlongdoc_K*.jsonl (numbered alike at 8K..128K):
# a public evaluation report of those files heads each question "Sample ID: mmlongdoc_<line>"
# with its gold answer. Lines 0-165 are strings, 166-494 integers, 495-626 floats, 627-849
# "Not answerable", 850-964 lists, each block in samples.json order: 965 lines.
# (release line, samples.json row), read off that report by hand:
RELEASE_LINES = {
    "Str": (0, [(0, 0), (1, 2), (2, 5), (3, 10), (7, 21), (9, 28), (17, 71), (25, 97),
                (55, 334), (98, 588), (117, 716), (165, 1062)]),
    "Int": (166, [(166, 3), (169, 12), (180, 64), (190, 111), (192, 114), (215, 214),
                  (297, 469), (323, 566), (419, 862), (433, 897)]),
    "Float": (495, [(511, 192), (512, 210), (515, 242), (521, 302), (525, 347)]),
    "List": (850, [(860, 81), (861, 85), (863, 115), (864, 119), (865, 134), (866, 135),
                   (870, 182), (874, 223), (875, 234), (877, 249), (883, 297), (884, 298),
                   (885, 322), (902, 478), (905, 506), (907, 556), (908, 562), (909, 591),
                   (910, 592), (915, 641), (916, 644), (918, 661), (919, 675), (922, 688),
                   (923, 695), (924, 699), (925, 710), (933, 769), (935, 794), (951, 868),
                   (952, 869), (953, 873), (955, 889), (956, 895), (957, 912), (964, 965)]),
}


def kept_rows(mmld_rows, fmt):
    return [row.index for row in mmld_rows
            if (q := mmld.clean_for_docvqa(row)[0]) is not None and q.answer_format == fmt]


@pytest.mark.parametrize("fmt", list(RELEASE_LINES))
def test_mmld_selection_reproduces_the_release_lines(mmld_rows, fmt):
    """Every question seen in the release sits at its block's first line + its rank among the
    kept questions of that format. Line 1 is row 2: row 1 ('Latinos interviewed by cellphone',
    32 characters) is out; line 25 is 'Wake up the voice assistant.' (five words, in: appendix B.5
    drops '> 5 words'); line 512 is row 210 ('21%' labelled Int) among the floats."""
    first, lines = RELEASE_LINES[fmt]
    rows = kept_rows(mmld_rows, fmt)
    assert [(first + rows.index(row), row) for _, row in lines] == lines


def test_mmld_selection_count_against_the_paper(mmld_rows):
    """The paper keeps 961 of 1,082 (Table 2); the official figure script
    (EdinburghNLP/MMLongBench figure_scripts/16_docqa_pie_figure.py, ``mmlongdoc_formats``)
    gives the shares String 17.2%, Integer 34.1%, Float 13.5%, List 12.0%, None 23.2%, i.e.
    165 / 328 / 130 / 115 / 223. The released files hold 965 (lines above): 166 / 329 / 132 /
    115 / 223. This selection keeps the release's 965; one of its floats is an integer there."""
    formats = Counter()
    for row in mmld_rows:
        question, _ = mmld.clean_for_docvqa(row)
        if question:
            formats[question.answer_format] += 1
    assert formats == {"Int": 328, "None": 223, "Str": 166, "Float": 133, "List": 115}
    assert sum(formats.values()) == 965


@pytest.mark.parametrize("fmt, answer, expected", [
    # appendix B.5: a list labelled as a string is a List
    ("Str", "['Top 10 File', 'Disk Space History']", ("List", ["Top 10 File", "Disk Space History"])),
    ("List", "['3', '4']", ("List", ["3", "4"])),   # all numbers (release line 885: ["0", "0"])
    ("List", ["gray", "red"], ("List", ["gray", "red"])),  # release line 861: short items stay
    ("List", "92", ("Int", 92)),           # a scalar stored as a list (row 682)
    ("Float", "45", ("Int", 45)),          # a whole number is scored by exact match
    ("Float", "7.0", ("Int", 7)),          # release line 215 sits among the integers
    ("Float", 13929.0, ("Int", 13929)),
    ("Float", "18.29%", ("Float", "18.29%")),
    ("Int", "21%", ("Float", "21%")),
    ("Float", "$49.99", ("Float", "$49.99")),
    ("Float", "$1577.00", ("Int", 1577)),   # a whole amount is scored as an integer
    ("Int", "GPT-4", ("Int", "GPT-4")),    # row 972: the release keeps the label on text
    ("Str", "89706", ("Str", "89706")),    # row 148: lines 31-39 need it among the strings
    ("Str", "Wake up the voice assistant.", ("Str", "Wake up the voice assistant.")),  # line 25
    ("Str", "Leaders in Education Programme", ("Str", "Leaders in Education Programme")),  # 30 chars, line 55
    ("String", "Dywegy.Merger Transaction", ("Str", "Dywegy.Merger Transaction")),
    ("None", "Not answerable", ("None", "Not answerable")),
])
def test_correct_answer_formats(fmt, answer, expected):
    from mmlbdata.sources.docqa import correct_answer

    assert correct_answer(fmt, answer) == expected


@pytest.mark.parametrize("fmt, answer, why", [
    ("Str", "a string answer of six words", "more than 5 words"),  # appendix B.5: "> 5 words"
    ("Str", "Golden Gate Park & the Avenues", "more than 5 words"),  # 30 chars: row 787, no line
    ("Str", "Latinos interviewed by cellphone", "more than 30 characters"),  # row 1, no line
    ("Str", "Yes", "fewer than 4 characters"),      # rows 973-975 between lines 153 and 154
    ("Str", "SGD", "fewer than 4 characters"),      # row 765 between lines 124 and 125
    ("List", ["PRIVACY SCREEN OPTIONS"], "1 item"),  # ['Fact Checker'] (row 633) has no line
    ("List", "['3']", "1 item"),
    ("List", ["ok", "Nucleotide Excision Repair (NER)"], "more than 30 characters"),  # row 708
    ("List", ["ok", "an item of six words here"], "more than 5 words"),
    ("List", ["3", "Esia", "Smartfren"], "mixes numbers and strings"),  # row 258, lines 877-883
    ("List", "[]", "0 item"),
    ("List", "[1, 2", "does not parse"),
])
def test_correct_answer_discards(fmt, answer, why):
    from mmlbdata.sources.docqa import correct_answer

    assert why in correct_answer(fmt, answer)


def test_correct_answer_integer_asked_for():
    """Row 41 ('300 million', "What is this value in USD million? Give me an integer") is an
    integer in the release: one more string before line 17 and one more integer before 180."""
    from mmlbdata.sources.docqa import correct_answer

    asked = "What is this value in USD million? Give me an integer"
    assert correct_answer("Str", "300 million", asked) == ("Int", 300)
    assert correct_answer("Str", "300 million") == ("Str", "300 million")
    assert correct_answer("Str", "399 million", "How many people used a debit card?") == \
        ("Str", "399 million")  # row 418 stays a string (lines 56-63)


def test_mmld_page_flags(mmld_rows):
    row = next(r for r in mmld_rows if r.index == 885)  # evidence up to page 47
    assert mmld.page_flags(row, 49) == []
    assert mmld.page_flags(row, 40) == [mmld.EVIDENCE_OUT_OF_RANGE]
    assert mmld.page_flags(row, 49, max_pages=40) == [mmld.EVIDENCE_BEYOND_MAX_PAGES]


# ------------------------------------------------------------------ LongDocURL


def test_longdocurl_reads_sample(real_data):
    root = real_data / "longdocurl_sample"
    questions = list(longdocurl.read_questions(root))
    assert [q.doc_id for q in questions] == ["4055915", "4127644", "4151603"]
    first = questions[0]
    assert first.answer == 5 and first.answer_format == "Int" and first.answer_pages == (53,)
    assert questions[2].answer_format == "List" and len(questions[2].answer) == 2
    assert questions[1].answer_format == "Str"
    assert "images" not in first.raw and first.raw["total_pages"] == 84
    assert longdocurl.window(first) == range(41, 71)  # the 30 pages the release showed
    for question in questions:
        pages = longdocurl.page_images(root, question.doc_id)
        assert len(pages) == question.raw["total_pages"]
        assert pages[53].name == f"{question.doc_id}_53.png"


def test_longdocurl_bad_lines_and_missing_pages(tmp_path):
    (tmp_path / "LongDocURL.jsonl").write_text(
        "not json\n"
        + json.dumps({"question_id": "q", "doc_no": "4000001"}) + "\n"
        + json.dumps({"question_id": "ok", "doc_no": "4000001", "total_pages": 3, "question": "?",
                      "answer": "x", "evidence_pages": [2], "answer_format": "String"}) + "\n")
    items = list(longdocurl.read_questions(tmp_path))
    assert [type(i) for i in items] == [BadRecord, BadRecord, DocQuestion]
    assert "line 1" in items[0].record and "missing fields" in items[1].reason
    folder = longdocurl.doc_dir(tmp_path, "4000001")
    assert folder == tmp_path / "pdf_pngs" / "4000-4999" / "4000"
    folder.mkdir(parents=True)
    for page in (0, 2):
        Image.new("RGB", (10, 10)).save(folder / f"4000001_{page}.png")
    with pytest.raises(ValueError, match=r"lacks page images \[1\]"):
        longdocurl.page_images(tmp_path, "4000001")


# ------------------------------------------------------------------ SlideVQA (release schema)


def write_slidevqa(root: Path, decks: dict[str, tuple[int, tuple[int, int]]],
                   questions: list[dict], split: str = "test") -> None:
    """A SlideVQA release in miniature: annotations/qa/<split>.jsonl + images/<split>/<deck>/."""
    lines = []
    for number, q in enumerate(questions):
        deck = q["deck_name"]
        count, _ = decks[deck]
        urls = [f"https://image.slidesharecdn.com/{deck}-150101/95/{deck}-{k}-1024.jpg?cb=1420070400"
                for k in range(1, count + 1)]
        lines.append(json.dumps({
            "deck_name": deck, "deck_url": f"https://www.slideshare.net/someone/{deck}",
            "image_urls": urls, "qa_id": q.get("qa_id", number), "question": q["question"],
            "answer": q["answer"], "arithmetic_expression": q.get("arithmetic_expression", "None"),
            "evidence_pages": q["evidence_pages"], "reasoning_type": q.get("reasoning_type", "single-hop"),
            "answer_type": q.get("answer_type", "Single-Span")}))
    qa = root / "annotations" / "qa"
    qa.mkdir(parents=True, exist_ok=True)
    (qa / f"{split}.jsonl").write_text("\n".join(lines) + "\n")
    for deck, (count, size) in decks.items():
        folder = root / "images" / split / deck
        folder.mkdir(parents=True, exist_ok=True)
        for k in range(1, count + 1):
            image = Image.new("RGB", size, ((37 * k) % 256, (91 * k) % 256, 120))
            image.save(folder / f"{deck}-{k}-1024.jpg", quality=70)


def test_slidevqa_reads_release_schema(tmp_path):
    write_slidevqa(tmp_path, {"deck-a": (4, (1024, 768)), "deck-b": (3, (720, 720))}, [
        {"deck_name": "deck-a", "question": "How many?", "answer": "1,200", "evidence_pages": [2],
         "arithmetic_expression": "600 + 600", "answer_type": "Non-Span"},
        {"deck_name": "deck-b", "question": "Who?", "answer": "Alice", "evidence_pages": [1, 3]},
        {"deck_name": "deck-b", "question": "Bad", "answer": "x", "evidence_pages": [9]},
    ])
    items = list(slidevqa.read_questions(tmp_path, "test"))
    first, second, bad = items
    assert first.answer == 1200 and first.answer_format == "Int" and first.answer_pages == (1,)
    assert first.raw["arithmetic_expression"] == "600 + 600"
    assert second.answer == "Alice" and second.answer_pages == (0, 2)
    assert isinstance(bad, BadRecord) and "outside the deck" in bad.reason
    decks = slidevqa.read_decks(tmp_path, "test")
    pages = slidevqa.deck_pages(tmp_path, "test", "deck-b", decks["deck-b"])
    assert [p.name for p in pages] == [f"deck-b-{k}-1024.jpg" for k in (1, 2, 3)]
    (pages[1]).unlink()
    with pytest.raises(ValueError, match="slide 2 of deck 'deck-b' missing"):
        slidevqa.deck_pages(tmp_path, "test", "deck-b", decks["deck-b"])


def test_one_word_rule_read_with_each_sources_limit():
    """SlideVQA drops 5 words (the paper's "less than 5 words"), MMLongBench-Doc/LongDocURL 6
    (their release's "> 5 words"): the same rule, over_word_limit, at two limits."""
    from mmlbdata.sources.docqa import long_answer_problem, over_word_limit, string_answer_problem

    five = "one two three four five"
    assert over_word_limit(five, 4) and not over_word_limit(five, 5)
    assert long_answer_problem("Str", five) == "string answer of 5 words or more"
    assert long_answer_problem("Str", "one two three four") == ""
    assert string_answer_problem(five) == ""
    assert string_answer_problem(five + " six") == "string answer of more than 5 words"
