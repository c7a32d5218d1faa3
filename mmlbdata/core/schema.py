"""The example schema shared by every family.

Later families may add fields, never rename these. ``prompt`` is the full model input text with
one ``<image>`` placeholder per entry of ``images``, in order; ``meta`` is a JSON string holding
anything family-specific (depth, needle indices, source ids ...).
"""
from __future__ import annotations

import json
from typing import Any, Iterable, Sequence

from datasets import Features, Image, List, Value

from mmlbdata.core.store import ImageRef
from mmlbdata.core.tokens import IMAGE_PLACEHOLDER

FEATURES = Features(
    {
        "id": Value("string"),
        "dataset": Value("string"),
        "length": Value("int64"),
        "num_tokens": Value("int64"),
        "prompt": Value("string"),
        "images": List(Image()),
        "question": Value("string"),
        "answers": List(Value("string")),
        "metric": Value("string"),
        "meta": Value("string"),
    }
)

# Columns cheap to read (everything but the image bytes): stats, eval and cards use these.
TEXT_COLUMNS = [name for name in FEATURES if name != "images"]


class SchemaError(ValueError):
    """An example that breaks the schema's rules (a builder bug, not bad source data)."""


def dump_meta(meta: dict[str, Any]) -> str:
    """Canonical JSON for ``meta`` (sorted keys) so builds are byte-identical."""
    return json.dumps(meta, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def make_example(
    *,
    id: str,
    dataset: str,
    length: int,
    num_tokens: int,
    prompt: str,
    images: Sequence[ImageRef],
    question: str,
    answers: Iterable[str],
    metric: str,
    meta: dict[str, Any],
    **extra: Any,
) -> dict[str, Any]:
    """Assemble one example and check the rules every family must keep."""
    placeholders = prompt.count(IMAGE_PLACEHOLDER)
    if placeholders != len(images):
        raise SchemaError(f"{id}: prompt has {placeholders} {IMAGE_PLACEHOLDER} but {len(images)} images")
    answers = [str(a) for a in answers]
    example = {
        "id": str(id),
        "dataset": dataset,
        "length": int(length),
        "num_tokens": int(num_tokens),
        "prompt": prompt,
        "images": list(images),
        "question": question,
        "answers": answers,
        "metric": metric,
        "meta": dump_meta(meta),
    }
    example.update(extra)
    return example
