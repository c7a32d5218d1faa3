"""MMLongBench's prompt assembly: the one set of templates its official ``data.py`` formats.

Both ways of making an MMLongBench row go through this module, so they cannot drift apart: the
family recipes (``mmlb_builders/vh.py``, ``mmniah.py``, ``vrag.py``, ``icl.py``, ``summ.py`` and the
document QA of ``docpack.py``) build their prompts with it, and ``sources/mmlb_release.py`` reads
the official release with it. Each loader of ``data.py`` formats ``user_template`` with a
``context`` (items joined by blank lines, single newlines for Visual Haystack) and a ``question``;
the loader's ``system_template`` (``Answer:``, ``label:``, ``Summary:``) is the answer prefix that
the official run appends after a newline: here it is kept apart (``meta.answer_prefix``), as every
family in this project keeps it. ``docs/prompts.md`` lists every template with its official line.
"""
from __future__ import annotations

from mmlbdata.core.tokens import IMAGE_PLACEHOLDER
from mmlbdata.official.protocol import get as get_protocol

ANSWER_LINE = "Write your answer in the following format:\nAnswer: [answer]\n\n{context}\n\nQuestion: {question}"
TEMPLATES = {
    "vrag": "Use the given documents to write a concise and short answer to the question about the entity "
            "shown in the image. " + ANSWER_LINE,
    "text_rag": "Use the given documents to write a concise and short answer to the question about a named "
                "entity. " + ANSWER_LINE,
    "text_doc": "You are given a document, and a question. Answer the question as concisely as you can, using a "
                "single phrase or sentence if possible. If the question cannot be answered based on the "
                "information in the article, write 'Not answerable.' " + ANSWER_LINE,
    "vh": "You are given a set of images. Please answer the question in Yes or No based on the given images. "
          + ANSWER_LINE,
    "niah": "You are given interleaved text and images. Please answer the question based on the given text "
            "and images. " + ANSWER_LINE,
    "niah_choice": "You are given interleaved text and images. Please answer the question with the option's "
                   "letter (A, B, etc.) based on the given text and images. " + ANSWER_LINE,
    "icl": "You need to recognize entities in images. Use the provided mapping from the image to label to "
           "assign a label to the test image. Only output \"label: {{label}}\" and nothing else.\n\nTraining "
           "examples:\n{context}\n\nNow classify this image: {question}",
    "gov": "You are given a government report from U.S. Government Accountability Office (GAO), and you are "
           "tasked to summarize the report. Write a concise summary (around 550 words) organized in multiple "
           "paragraphs. Where applicable, the summary should contain a short description of why GAO did this "
           "study, what GAO found, and what GAO recommends.\n\nGovernment Report:\n{context}\n\nNow please "
           "summarize the report.",
    "lexsum": "You are given the legal documents in a civil rights lawsuit, and you are tasked to summarize the "
              "case. Write a concise summary of one paragraph (200 to 250 words). The summary should contain a "
              "short description of the background, the parties involved, and the outcomes of the case.\n\n"
              "Legal documents:\n{context}\n\nNow please summarize the case.",
    "docqa": "You are given a document with text and images, and a question. Answer the question as concisely "
             "as you can, using a single phrase or sentence if possible. If the question cannot be answered "
             "based on the information in the article, write 'Not answerable.' " + ANSWER_LINE,
}
TEMPLATE_OF = {"niah_count": "niah", "vrag_occ": "vrag"}  # loader kinds sharing another kind's template
ANSWER_PREFIX = {"icl": "label:", "gov": "Summary:", "lexsum": "Summary:"}  # else "Answer:"
PASSAGE = "Document (Title: {title}): {text}"
PAGE = "Document {doc_id:.15} (page {page_id}): " + IMAGE_PLACEHOLDER
DOC_PAGE_V11 = "Document {doc_id:.15}: " + IMAGE_PLACEHOLDER  # load_doc_qa since ceedb4c (protocol v1.1)
TEXT_PAGE = "Document {doc_id:.15} (page {page_id}): \n{page_text}"  # the text_doc ablation's pages
DOC_QUESTION = "Based on Document {doc_id:.15}, answer the following question. "
ICL_ITEM = IMAGE_PLACEHOLDER + "\nlabel: {label}"
CHOICE_ITEM = "\n{letter}. " + IMAGE_PLACEHOLDER  # MM-NIAH image choices appended to the question


def render(kind: str, context: str, question: str = "") -> str:
    """``user_template.format(context=..., question=...)`` of the loader for ``kind``."""
    return TEMPLATES[TEMPLATE_OF.get(kind, kind)].format(context=context, question=question)


def answer_prefix(kind: str) -> str:
    """The loader's ``system_template``: what the answer starts with."""
    return ANSWER_PREFIX.get(kind, "Answer:")


def passage(title: str, text: str) -> str:
    """A VRAG context item."""
    return PASSAGE.format(title=title, text=text)


def page_item(doc_id: str, page_id) -> str:
    """A summary or document-QA page: ``Document <first 15 characters of the id> (page N): <image>``."""
    return PAGE.format(doc_id=doc_id, page_id=page_id)


def doc_page_item(doc_id: str, page_id, protocol=None) -> str:
    """A document-QA page: with its page id under protocol v1.0 (``PAGE``), without under v1.1
    (``DOC_PAGE_V11``); summaries keep ``page_item`` in both."""
    template = PAGE if get_protocol(protocol).doc_page_ids else DOC_PAGE_V11
    return template.format(doc_id=doc_id, page_id=page_id)


def text_page_item(doc_id: str, page_id, page_text: str) -> str:
    """A page of the text_doc ablation: the page label, then the page's text on the next line."""
    return TEXT_PAGE.format(doc_id=doc_id, page_id=page_id, page_text=page_text)


def doc_question(doc_id: str, question: str) -> str:
    """The document-QA question line, prefixed with the document it is about."""
    return DOC_QUESTION.format(doc_id=doc_id) + question


def icl_item(label) -> str:
    """One ICL demonstration: its image, then ``label: <id>``."""
    return ICL_ITEM.format(label=label)


def image_choices(count: int) -> str:
    """``\\nA. <image>\\nB. <image>...``: MM-NIAH's image options after the question."""
    return "".join(CHOICE_ITEM.format(letter=chr(ord("A") + i)) for i in range(count))


def vh_context(num_images: int) -> str:
    """Visual Haystack's context: one placeholder per image, one per line."""
    return "\n".join([IMAGE_PLACEHOLDER] * num_images)
