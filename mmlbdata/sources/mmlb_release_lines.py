"""What each kind of MMLongBench release record must hold: one :class:`~.lineschema.Schema` per loader.

Read off the official ``data.py`` (EdinburghNLP/MMLongBench @22b9f27), loader by loader: a schema
names the fields that loader reads and accepts the types it works with; the few values it would
take and a schema refuses are named below, with why:

- ids (``id``): an integer or a string, optional (a row without one gets ``<kind>_<line>``).
  ``data.py`` puts them in a ``set`` and sorts them for the paper's draw: a list or object cannot
  be put in a set, and a float, boolean or null id is no id of any released file.
- texts joined or concatenated by the loader (questions, NIAH passages, page texts, summaries):
  strings, as ``"<image>" + question`` and ``"\\n\\n".join`` demand; doc names too, though
  ``{doc_id:.15}`` would also print a float (a document name is no number). VRAG passages go
  through ``passage_template.format(**c)``, which prints numbers too: their title and text may be
  numbers.
- image and page paths: strings (``os.path.join``); page paths need the parent folder the page
  label is read from, and summary pages the ``page`` the page number follows.
- answers, in the types the official scoring compares: a string or a list of strings for
  ``sub_em`` (VRAG, MM-NIAH retrieval/reasoning; the list of lists ``sub_em`` would flatten is
  refused: our answers column is one flat list), a list of numbers for MM-NIAH counting
  (``sum``), a choice index or letter for MM-NIAH choices, a string for Visual Haystack (yes/no),
  a label for ICL, GovReport's ``summary`` sections, a document-QA answer as released (a string,
  a number, or for ``answer_format`` List a list or the JSON text of one). An empty answer list is
  refused: there is nothing to score against (``drqa_metric_max_over_ground_truths`` reads
  ``ground_truths[0]``).
"""
from __future__ import annotations

import json

from mmlbdata.sources.lineschema import NULL, Field, Rule, Schema

STRING = Field((str,))
IMAGE = Field((str,))
IMAGES = Field((list,), items=IMAGE)
ID = Field((int, str), required=False)
#: a passage ``passage_template.format(**c)`` prints: title and text, strings or numbers
PASSAGE = Field((dict,), keys={"title": Field((str, int, float)), "text": Field((str, int, float))})
#: a MM-NIAH haystack paragraph, joined as text: ``"\n\n".join([p["text"] ...])``
PARAGRAPH = Field((dict,), keys={"text": STRING})
SHORT_ANSWERS = Field((str, list), items=STRING, nonempty=True)


def _page_path(summary: bool) -> Field:
    """A page image path: ``path.split("/")[-2]`` is the document, after ``page`` its number (summaries)."""
    if summary:
        return Field((str,), rule=(lambda p: "/" in p and "page" in p, "a path <doc>/...page<N>..."))
    return Field((str,), rule=(lambda p: "/" in p, "a path <doc>/<page image>"))


def _list_answer_ok(record: dict) -> bool:
    """A List answer is a list, or the JSON text of one (utils.py reads it with json.loads)."""
    if record.get("answer_format") != "List":
        return True
    answer = record["answer"]
    return isinstance(json.loads(answer) if isinstance(answer, str) else answer, list)


DOC_ANSWER = Field((str, int, float, list), items=Field((str, int, float, bool, NULL)))
LIST_ANSWER = Rule("answer", _list_answer_ok, "an answer_format List answer must be a list or the JSON text of one")
_DOC_QA = {"id": ID, "question": STRING, "doc_name": STRING, "answer": DOC_ANSWER,
           "answer_format": Field((str, NULL), required=False)}
_VRAG = {"id": ID, "question": STRING, "answer": SHORT_ANSWERS, "image": IMAGE,
         "ctxs": Field((list,), items=PASSAGE)}
_NIAH = {"id": ID, "question": STRING, "ctxs": Field((list,), items=PARAGRAPH), "image_list": IMAGES}

#: release kind (ReleaseFile.kind) -> what each of its JSON lines must hold
LINE_SCHEMAS: dict[str, Schema] = {
    # load_vrag: ctxs passages, "<image>" + question, image
    "vrag": Schema(_VRAG),
    # load_vrag_occlusion: as load_vrag, passages carry doc_id, positives removed by doc_id
    "vrag_occ": Schema({**_VRAG, "ctxs": Field((list,), items=Field((dict,), keys={
        **PASSAGE.keys, "doc_id": Field((str, int))})),
        "positive_ctxs": Field((list,), items=Field((dict,), keys={"doc_id": Field((str, int))}))}),
    # load_text_rag: passages and original_question, no image (question is only kept, if there)
    "text_rag": Schema({"id": ID, "original_question": STRING, "question": Field((str,), required=False),
                        "answer": SHORT_ANSWERS, "ctxs": Field((list,), items=PASSAGE)}),
    # load_visual_haystack: ctxs are the image paths; the answer is yes/no text
    "vh": Schema({"id": ID, "question": STRING, "answer": STRING, "ctxs": IMAGES}),
    # load_mm_niah_text: retrieval/reasoning answers for sub_em, counting a list of numbers (soft_acc)
    "niah": Schema({**_NIAH, "answer": Field((str, list), items=Field((str, int, float)), nonempty=True)}),
    # load_mm_niah_image_count: image_list + needle_image_list; soft_acc sums the answer
    "niah_count": Schema({**_NIAH, "needle_image_list": IMAGES,
                          "answer": Field((list,), items=Field((int, float)), nonempty=True)}),
    # load_mm_niah_image_mc: choices_image appended; the answer a choice index (or its letter)
    "niah_choice": Schema({**_NIAH, "choices_image": IMAGES, "answer": Field(
        (int, str), rule=(lambda a: not isinstance(a, int) or a >= 0, "a choice index of 0 or more"))}),
    # load_gov_report: page images; summary sections joined as "title:\nparagraphs"
    "gov": Schema({"id": ID, "image_list": Field((list,), items=_page_path(True)),
                   "summary": Field((list,), items=Field((dict,), keys={
                       "section_title": STRING, "paragraphs": Field((list,), items=STRING)}))}),
    # load_multi_lexsum: page images; the summary text
    "lexsum": Schema({"id": ID, "image_list": Field((list,), items=_page_path(True)), "summary": STRING}),
    # load_doc_qa: page images, "Based on Document {doc_name:.15}, ..." + question
    "docqa": Schema({**_DOC_QA, "page_list": Field((list,), items=_page_path(False))}, (LIST_ANSWER,)),
    # load_text_doc_qa: page labels from page_list, texts from page_text_list (same length), no image
    "text_doc": Schema({**_DOC_QA, "page_list": Field((list,), items=_page_path(False)),
                        "page_text_list": Field((list,), items=STRING)},
                       (LIST_ANSWER, Rule("page_text_list", lambda r: len(r["page_text_list"]) == len(r["page_list"]),
                                          "one page text per page of page_list"))),
}

# load_icl_er: one JSON object {domain: {exemplar_list, test_example}}
#: an exemplar: its image and the label printed as ``label: {id}``
ICL_EXEMPLAR = Field((dict,), keys={"image": IMAGE, "id": Field((int, str))})
#: a domain's entry: candidate round sets (random.choice), each a list of rounds of exemplars
ICL_DOMAIN = Schema({"exemplar_list": Field((list,), nonempty=True,  # random.choice of an empty list fails
                                           items=Field((list,), items=Field((list,), items=ICL_EXEMPLAR))),
                     "test_example": Field((list,))})
#: a test example: its image and the label (cls_acc compares the parsed class with it)
ICL_TEST = Schema({"id": ID, "image": IMAGE, "answer": Field((int, str))})
