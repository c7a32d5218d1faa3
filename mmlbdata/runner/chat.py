"""Turn an example's ``prompt`` (with one ``<image>`` per image) into interleaved chat content.

Backend-neutral: content items are ``{"type": "text", "text": ...}`` and
``{"type": "image", "index": i}`` (i into the example's image list); each backend swaps the
index for what it needs (a PIL image, a data URI).
"""
from __future__ import annotations

import base64
import io

IMAGE_PLACEHOLDER = "<image>"

#: generation budget per metric family (MMLongBench: 128, summarisation 384)
MAX_NEW_TOKENS = {"summ_judge": 384, "rouge_l": 384}
DEFAULT_MAX_NEW_TOKENS = 128

#: answer prefix the assistant turn is prefilled with, per metric (meta["answer_prefix"] wins)
ANSWER_PREFIX = {"summ_judge": "Summary:", "rouge_l": "Summary:", "cls_acc": "label:",
                 "sub_em": "Answer:", "docqa": "Answer:", "mc_acc": "Answer:", "binary_acc": "Answer:",
                 "count_acc": "Answer:"}


def max_new_tokens_for(metric: str, override: int | None = None) -> int:
    return override or MAX_NEW_TOKENS.get(metric, DEFAULT_MAX_NEW_TOKENS)


def answer_prefix_for(metric: str, meta: dict | None = None) -> str:
    meta = meta or {}
    return meta.get("answer_prefix", ANSWER_PREFIX.get(metric, ""))


def text_context(prompt: str, images: list, meta: dict) -> tuple[str, list]:
    """ReadBench's text baseline: the page images (one contiguous run of ``<image>``) replaced
    by the text they render, kept in ``meta["context"]``. Examples without it are unchanged."""
    context = meta.get("context")
    count = prompt.count(IMAGE_PLACEHOLDER)
    run = IMAGE_PLACEHOLDER * count
    if not isinstance(context, str) or not count or run not in prompt:
        return prompt, images
    return prompt.replace(run, context, 1), []


def to_content(prompt: str, num_images: int, max_images: int | None = None) -> tuple[list[dict], list[int]]:
    """Split the prompt at each ``<image>`` into text and image items, in order.

    With ``max_images`` only the last N images are kept (as MMLongBench does): the earlier
    placeholders are dropped with their images, the text around them stays. Returns the
    content and the kept image indices. A prompt whose placeholder count differs from
    ``num_images`` is an error (the schema guarantees one per image).
    """
    parts = prompt.split(IMAGE_PLACEHOLDER)
    if len(parts) - 1 != num_images:
        raise ValueError(f"prompt has {len(parts) - 1} {IMAGE_PLACEHOLDER} placeholders for {num_images} images")
    first_kept = max(0, num_images - max_images) if max_images is not None else 0
    content: list[dict] = []
    text = ""
    kept = []
    for i, part in enumerate(parts):
        text += part
        if i == num_images:
            break
        if i < first_kept:
            continue
        if text:
            content.append({"type": "text", "text": text})
            text = ""
        content.append({"type": "image", "index": i})
        kept.append(i)
    if text:
        content.append({"type": "text", "text": text})
    return content, kept


def image_bytes(image) -> bytes:
    """Bytes of an undecoded datasets Image value ({"bytes", "path"}), a path or raw bytes."""
    if isinstance(image, (bytes, bytearray)):
        return bytes(image)
    if isinstance(image, dict):
        if image.get("bytes"):
            return image["bytes"]
        if image.get("path"):  # a files-layout image: a local path, or hf://... when streamed from the Hub
            from datasets.utils.file_utils import xopen

            with xopen(image["path"], "rb") as f:
                return f.read()
    if isinstance(image, str):
        with open(image, "rb") as f:
            return f.read()
    raise ValueError(f"cannot read image from {type(image).__name__}")


def to_pil(image):
    from PIL import Image

    pil = Image.open(io.BytesIO(image_bytes(image)))
    return pil.convert("RGB")


def _openai_item(item: dict, images: list) -> dict:
    if item["type"] == "text":
        return {"type": "text", "text": item["text"]}
    return {"type": "image_url", "image_url": {"url": data_uri(images[item["index"]])}}


def data_uri(image) -> str:
    """A base64 data URI (mime type sniffed from the header) for OpenAI-style servers."""
    data = image_bytes(image)
    mime = ("image/png" if data[:8] == b"\x89PNG\r\n\x1a\n" else "image/jpeg" if data[:2] == b"\xff\xd8"
            else "image/webp" if data[8:12] == b"WEBP" else "image/png")
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def openai_messages(content: list[dict], images: list, prefix: str = "",
                    chat: list[dict] | None = None) -> list[dict]:
    """Chat messages in the OpenAI format (images as data URIs), with the optional prefilled
    assistant turn: ``content`` as one user turn, or ``chat`` (a multi-turn conversation whose
    messages hold such content) message by message."""
    turns = chat if chat is not None else [{"role": "user", "content": content}]
    messages = [{"role": turn["role"], "content": [_openai_item(item, images) for item in turn["content"]]}
                for turn in turns]
    if prefix:
        messages.append({"role": "assistant", "content": prefix})
    return messages
