"""MMLongBench's own release layout: JSONL files + an image folder, for its evaluation code.

Layout (``mmlb export DIR --format mmlongbench --out REL``)::

    REL/mmlb_data/<category>/<dataset>_K<length/1024>.jsonl   (--test_file_root REL/mmlb_data)
    REL/mmlb_image/<xx>/<sha256>.<ext>                        (--image_file_root REL/mmlb_image)

Image paths in the JSONL are relative to the image root, as the release's loaders join them.
Visual Haystack rows use the release's shape (``ctxs`` = the image list, ``question``,
``answer``); other families get ``ctxs`` as the text segments between the images
(``[{"text": ...}]``, so ``"<image>".join`` of them is the prompt) and ``image_list``. Every row
also keeps ``prompt``, ``num_tokens``, ``length``, ``metric`` and ``meta``.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Optional, Sequence

from ..writer import read_manifest
from . import iter_rows, selected_configs, split_prompt, write_image

#: family -> the release's folder for it
CATEGORY = {"vh": "NIAH", "mmniah": "NIAH", "vrag": "vrag", "icl": "ICL", "summ": "summ", "docvqa": "documentQA"}


def _answer(answers: list[str]):
    return answers[0] if len(answers) == 1 else answers


def _vh_record(row: dict, images: list[str]) -> dict:
    return {"id": row["id"], "question": row["question"], "answer": _answer(row["answers"]), "ctxs": images}


def _generic_record(row: dict, images: list[str]) -> dict:
    return {"id": row["id"], "question": row["question"], "answer": _answer(row["answers"]),
            "ctxs": [{"text": segment} for segment in split_prompt(row["prompt"])], "image_list": images}


RECORDS: dict[str, Callable[[dict, list[str]], dict]] = {"vh": _vh_record}


def release_name(config: str, manifest: dict) -> str:
    category = CATEGORY.get(manifest.get("family", ""), manifest.get("family") or "mmlb")
    length = manifest.get("length")
    stem = f"{manifest.get('dataset') or config}_K{length // 1024}" if length else config
    return f"{category}/{stem}.jsonl"


def export_jsonl(folder: Path, out: Path, *, configs: Optional[Sequence[str]] = None) -> list[Path]:
    folder, out = Path(folder), Path(out)
    image_root = out / "mmlb_image"
    written = []
    for name in selected_configs(folder, configs):
        manifest = read_manifest(folder, name) or {}
        make = RECORDS.get(manifest.get("family", ""), _generic_record)
        path = out / "mmlb_data" / release_name(name, manifest)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        with open(tmp, "w", encoding="utf-8") as handle:
            for row in iter_rows(folder, name):
                images = [write_image(image_root, img["bytes"], img.get("path") or "") for img in row["images"]]
                record = make(row, images)
                record.update(prompt=row["prompt"], num_tokens=row["num_tokens"], length=row["length"],
                              metric=row["metric"], meta=json.loads(row["meta"] or "{}"))
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        tmp.replace(path)
        written.append(path)
    return written
