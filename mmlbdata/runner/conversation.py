"""A row's multi-session conversation (MemLens's ``sessions`` column) as the chat the official
``build_messages`` sends (xrenaf/MEMLENS @fd4c8d7, ``data.py``).

The messages are backend-neutral, like :mod:`.chat`'s content: text items ``{"type": "text"}`` and
image items ``{"type": "image", "index": i}`` (i into the row's ``images``). Each backend turns
them into its own form (an HF chat template's ``{"type": "image"}``, an OpenAI data URI).

What ``build_messages`` does, and so this module:

* a system message (``SYSTEM_TEMPLATE``);
* one message per turn, ``assistant`` for an assistant turn and ``user`` for any other role; a
  turn's text is cut at its ``<image>`` marks and each mark becomes the turn's next image (marks
  beyond the images are dropped, images beyond the marks follow the text); without marks the
  images come first, then the stripped text; ``[Image k]`` before each image when labels are asked
  for (k counts the images of the whole conversation, from 1);
* the session header ``=== Session i (Date: d) ===`` on a line before the first text of the
  session's first turn (its own text item when that turn begins with an image); a turn left with
  nothing is not sent;
* a last user message: the instruction, the question date, the question (``QUESTION_TEMPLATE``; the
  date as the row holds it, an empty one empty: ``item.get("question_date", "unknown")`` keeps ``""``).

``text_only`` (the official ``--text_only``) strips the images and their marks; ``no_context``
(``--no_context``) sends the system message and the question only.
"""
from __future__ import annotations

import re
from typing import Any, Sequence

from mmlbdata.official import memlens_prompts as prompts

_MARK_SPLIT = re.compile("(" + re.escape(prompts.IMAGE_MARK) + ")")


def _text(text: str) -> dict:
    return {"type": "text", "text": text}


def _image(index: int) -> dict:
    return {"type": "image", "index": index}


def _turn_items(text: str, images: Sequence[int], label_images: bool, offset: int) -> list[dict]:
    """One turn's items; ``offset``: the images of the conversation before this turn."""
    items: list[dict] = []

    def put(k: int) -> None:
        if label_images:
            items.append(_text(prompts.image_label(offset + k + 1)))
        items.append(_image(images[k]))

    if not images:
        stripped = text.replace(prompts.IMAGE_MARK, "").strip()
        return [_text(stripped)] if stripped else []
    if prompts.IMAGE_MARK not in text:
        for k in range(len(images)):
            put(k)
        return items + ([_text(text.strip())] if text.strip() else [])
    used = 0
    for part in _MARK_SPLIT.split(text):
        if part == prompts.IMAGE_MARK:
            if used < len(images):
                put(used)
                used += 1
        elif part.strip():
            items.append(_text(part))  # unstripped, as build_messages appends it
    for k in range(used, len(images)):
        put(k)
    return items


def _with_header(items: list[dict], header: str) -> list[dict]:
    if items and items[0]["type"] == "text":
        return [_text(f"{header}\n{items[0]['text']}"), *items[1:]]
    return [_text(header), *items]


def chat_messages(row: dict[str, Any], *, label_images: bool = False, instruction: str = "default",
                  text_only: bool = False, no_context: bool = False) -> list[dict]:
    """The chat of one row with a ``sessions`` column (see the module docstring)."""
    messages = [{"role": "system", "content": [_text(prompts.SYSTEM)]}]
    offset = 0
    for number, session in enumerate([] if no_context else row["sessions"], 1):
        header = prompts.SESSION_HEADER.format(index=number, date=session["date"])
        for position, turn in enumerate(session["turns"]):
            images = [] if text_only else list(turn["images"] or [])
            text = turn["content"] or ""
            if text_only:
                text = text.replace(prompts.IMAGE_MARK, "")
            items = _turn_items(text, images, label_images and not text_only, offset)
            offset += len(images)
            if position == 0:
                items = _with_header(items, header)
            if items:
                messages.append({"role": "assistant" if turn["role"] == "assistant" else "user", "content": items})
    date = row.get("question_date")  # as the build wrote it ("" stays empty, as data.py keeps it)
    question = prompts.question_block(row.get("question") or "", prompts.UNKNOWN if date is None else date,
                                      instruction)
    messages.append({"role": "user", "content": [_text(question)]})
    return messages


def content_of(messages: Sequence[dict]) -> list[dict]:
    """Every item of every message, in order: the images in the order the model receives them."""
    return [item for message in messages for item in message["content"]]
