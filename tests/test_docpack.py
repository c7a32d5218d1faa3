"""Length control of document QA on synthetic documents with a hand-checkable measure."""
from __future__ import annotations

import pytest

from mmlbdata.dataset.docpack import BudgetError, DOCQA_TEMPLATE, docqa_prompt, select_pages
from mmlbdata.official import mmlongbench_prompts as prompts

# Every page costs 10 tokens, the fixed part 5: a selection of n pages costs 5 + 10 n.
def measure(pages):
    return 5 + 10 * len(pages)


def test_prompt_is_the_template_verbatim():
    pages = [("PG_2021.03.04_US-Views-on-China_FINAL.pdf", 0), ("other.pdf", 3)]
    question = prompts.doc_question("PG_2021.03.04_US-Views-on-China_FINAL.pdf", "Who?")
    assert question == "Based on Document PG_2021.03.04_U, answer the following question. Who?"
    prompt = docqa_prompt(pages, question, "v1.0")
    assert prompt.startswith("You are given a document with text and images, and a question. "
                             "Answer the question as concisely as you can, using a single phrase "
                             "or sentence if possible. If the question cannot be answered based "
                             "on the information in the article, write 'Not answerable.' Write "
                             "your answer in the following format:\nAnswer: [answer]\n\n")
    # protocol v1.0: data.py @26197d2 load_doc_qa item_template "Document {doc_id:.15} (page {page_id}): <image>" (L426)
    assert ("Document PG_2021.03.04_U (page 0): <image>\n\nDocument other.pdf (page 3): <image>\n\n"
            "Question: Based on Document PG_2021.03.04_U") in prompt
    assert prompt == DOCQA_TEMPLATE.format(
        context="Document PG_2021.03.04_U (page 0): <image>\n\nDocument other.pdf (page 3): <image>",
        question=question)
    # protocol v1.1 (default): data.py @22b9f27 L436 "Document {doc_id:.15}: <image>", no page id
    assert docqa_prompt(pages, question) == DOCQA_TEMPLATE.format(
        context="Document PG_2021.03.04_U: <image>\n\nDocument other.pdf: <image>", question=question)


def test_truncates_evenly_keeping_answer_pages():
    # 20 pages, budget for 8 pages (85 tokens); answer pages 3 and 5.
    selection = select_pages("a", {"a": 20, "b": 5}, [3, 5], 85, measure, ["b"])
    kept = [i for _, i in selection.pages]
    # removed alternately 0, 19, 1, 18, 2, 17; then only the right side has removable pages
    assert kept == list(range(3, 11))
    assert selection.truncated and selection.padding_docs == []
    assert selection.num_tokens == 85 <= 85 < selection.next_num_tokens == 95


def test_truncation_without_answer_pages_stays_centred():
    selection = select_pages("a", {"a": 21}, [], 55, measure, [])  # room for 5 pages
    assert [i for _, i in selection.pages] == [8, 9, 10, 11, 12]


def test_truncation_window_keeps_required_pages_when_they_fit():
    selection = select_pages("a", {"a": 30}, [0, 29], 305, measure, [])  # fits whole: no cut
    assert [i for _, i in selection.pages] == list(range(30)) and selection.exhausted
    assert selection.answer_pages_cut == ()


# When the answer pages alone exceed the budget, the release still has the question (the 8K and
# 64K mmlongdoc_K*.jsonl number MMLongBench-Doc rows 111 and 114 alike, lines 190 and 192) with
# some answer page missing and one contiguous window (an evaluation report that skips rows missing
# a target page skips every such row at 8K, even those whose two answer pages alone would fit).


def test_answer_pages_over_budget_keep_one_window_with_the_most_of_them():
    # 20 pages, room for 4 (45 tokens); answer window 3..12 = 10 pages (105). Windows of 4 pages
    # holding 2 answer pages: 9-12 and 10-13; the middle of 9-12 (10.5) is nearer 7.5, the middle
    # of the answer pages, than that of 10-13 (11.5). Page 3 is cut.
    selection = select_pages("a", {"a": 20, "b": 5}, [3, 10, 12], 45, measure, ["b"])
    assert [i for _, i in selection.pages] == [9, 10, 11, 12]
    assert selection.answer_pages_cut == (3,)
    assert selection.truncated and selection.padding_docs == []
    assert selection.num_tokens == 45 <= 45 < selection.next_num_tokens == 55


def test_cut_window_ties_go_to_the_first_answer_page():
    # room for 19 pages of 30: 0-18 keeps page 0, 11-29 keeps page 29; both middles are 5.5 pages
    # from 14.5: the first wins.
    selection = select_pages("a", {"a": 30}, [0, 29], 200, measure, [])
    assert [i for _, i in selection.pages] == list(range(19))
    assert selection.answer_pages_cut == (29,)
    assert selection.num_tokens == 195 < selection.next_num_tokens == 205


def test_cut_window_with_pages_of_different_sizes():
    costs = [10, 10, 50, 10, 10, 10, 50, 10]

    def sized(pages):
        return 5 + sum(costs[i] for _, i in pages)

    # answer pages 2 and 6 with those between them: 135 > 90. The widest windows holding one answer
    # page nearest the middle (4): 2-5 (middle 3.5) and 3-6 (4.5), 85 tokens each; first wins.
    selection = select_pages("a", {"a": 8}, [2, 6], 90, sized, [])
    assert [i for _, i in selection.pages] == [2, 3, 4, 5]
    assert selection.answer_pages_cut == (6,)
    # next: page 1 on the left (95) is the cheaper neighbour (page 6 on the right: 135)
    assert selection.num_tokens == 85 < selection.next_num_tokens == 95


def test_no_single_page_fits_is_a_budget_error():
    with pytest.raises(BudgetError):
        select_pages("a", {"a": 30}, [0, 29], 10, measure, [])


def test_pads_alternately_left_and_right_with_other_documents():
    sizes = {"q": 3, "b": 2, "c": 2, "d": 4, "e": 2}
    # budget for 3 + 2 + 2 + 2 pages = 9 pages (95 tokens): b left, c right, d left (cut to 2).
    selection = select_pages("q", sizes, [1], 95, measure, ["q", "b", "c", "d", "e"])
    assert selection.pages == [("d", 0), ("d", 1), ("b", 0), ("b", 1), ("q", 0), ("q", 1), ("q", 2),
                               ("c", 0), ("c", 1)]
    assert selection.padding_docs == ["b", "c", "d"]
    assert not selection.truncated
    assert selection.num_tokens == 95 < selection.next_num_tokens == 105


def test_padding_skips_the_question_document_and_reports_exhaustion():
    selection = select_pages("q", {"q": 2, "b": 1}, [0], 1000, measure, ["q", "b", "q"])
    assert [d for d, _ in selection.pages].count("q") == 2
    assert selection.padding_docs == ["b"] and selection.exhausted


def test_document_that_fits_exactly_still_pads():
    selection = select_pages("q", {"q": 2, "b": 3}, [0], 25, measure, ["b"])
    assert selection.pages == [("q", 0), ("q", 1)] and selection.padding_docs == []
    assert selection.next_num_tokens == 35


def test_page_grid_batches_and_layout():
    from PIL import Image

    from mmlbdata.media.page_grid import batches, draw_grid, grid_size

    assert batches(120, 5) == [range(0, 24), range(24, 48), range(48, 72), range(72, 96), range(96, 120)]
    assert batches(10, 3) == [range(0, 4), range(4, 8), range(8, 10)]
    assert batches(2, 5) == [range(0, 1), range(1, 2)]
    assert batches(0, 5) == []
    # mixed sizes: cells take the largest page; always `columns` cells wide
    assert grid_size([(10, 20), (30, 10)], 3) == (90, 20)
    red, blue = Image.new("RGB", (10, 20), "red"), Image.new("RGB", (30, 10), "blue")
    grid = draw_grid([red, blue, red, blue], columns=3)
    assert grid.size == (90, 40)
    assert grid.getpixel((5, 5)) == (255, 0, 0) and grid.getpixel((35, 5)) == (0, 0, 255)
    assert grid.getpixel((35, 15)) == (255, 255, 255)  # below the short blue page: white
    assert grid.getpixel((5, 25)) == (0, 0, 255)  # fourth page starts the second row
