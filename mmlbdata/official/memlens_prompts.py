"""MemLens's prompt assembly: the templates its official ``data.py`` (xrenaf/MEMLENS @fd4c8d7) formats.

Two official ways to put a MemLens item in front of a model, both kept here so the recipe (the
flattened ``prompt`` column) and the runner (the multi-turn chat) cannot drift apart:

* text mode, ``build_context`` + ``USER_TEMPLATE``: every session under a header line, every turn
  ``[User]: ``/``[Assistant]: `` plus its text, images as ``<image>`` (``[Image k] `` before each when
  labels are asked for), then the instruction, the question date and the question;
* chat mode, ``build_messages``: a system message, one message per turn (the session header glued to
  the first turn of its session), then one user message with the instruction, date and question.

``tests/test_memlens.py`` checks every string below against the official ``data.py`` (read from the
fetched repository with :mod:`ast`), and the chat built from a row against ``build_messages`` run
unchanged.
"""
from __future__ import annotations

#: data.py INSTRUCTION_DEFAULT / INSTRUCTION_COT / INSTRUCTION_REASONING (``--cot``, ``--reasoning``)
INSTRUCTIONS = {
    "default": "Directly output the answer with no extra output.",
    "cot": "Think step by step before providing your answer.",
    "reasoning": ("First provide your reasoning inside [REASONING], then provide your final answer inside "
                  "[ANSWER].\nFormat:\n[REASONING] your reasoning here\n[ANSWER] your answer here"),
}

#: data.py SYSTEM_TEMPLATE: the system message of chat mode
SYSTEM = ('Provide answers based on the given conversation history. If the question cannot be answered based '
          'on the given conversation, respond with "Insufficient information".')

#: data.py QUESTION_TEMPLATE: the last user message of chat mode
QUESTION = "{instruction}\nQuestion Date: {question_date}\nQuestion: {question}\n"

#: data.py USER_TEMPLATE: the single user message of text mode
USER = SYSTEM + "\nConversation:\n{context}\n\n" + QUESTION

#: the session header both modes write (data.py build_context / build_messages)
SESSION_HEADER = "=== Session {index} (Date: {date}) ==="

#: build_context's role prefixes (any role but "user" is written as the assistant)
ROLE_PREFIX = {"user": "[User]: ", "assistant": "[Assistant]: "}

#: the placeholder the release's turn texts mark images with (the project's own, too)
IMAGE_MARK = "<image>"

#: what a date or question date missing from an item is written as
UNKNOWN = "unknown"


def image_label(number: int) -> str:
    """``[Image k]``: the label ``--label_images`` puts before the k-th image (1-based, whole item)."""
    return f"[Image {number}]"


def question_block(question: str, question_date: str, instruction: str = "default") -> str:
    """The last user message of chat mode (and the tail of text mode's prompt)."""
    return QUESTION.format(instruction=INSTRUCTIONS[instruction], question_date=question_date, question=question)


def user_prompt(context: str, question: str, question_date: str, instruction: str = "default") -> str:
    """Text mode's whole prompt: ``USER_TEMPLATE`` with the flattened conversation."""
    return USER.format(context=context, instruction=INSTRUCTIONS[instruction], question_date=question_date,
                       question=question)
