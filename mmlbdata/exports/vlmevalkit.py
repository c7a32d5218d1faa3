"""VLMEvalKit custom-dataset TSV: one file per config.

Columns: ``index`` (0..n-1); ``image`` (base64 of the stored bytes, a Python list literal when an
example has several images, as VLMEvalKit's ``toliststr`` reads it) with ``image_path`` (the file
names VLMEvalKit's ``dump_image`` writes a multi-image row's images to, named by content), or with
``--images path`` only ``image_path`` (absolute paths, so they resolve from any working directory;
images written once by content under ``images/``); ``question`` (the full prompt; one ``<image>`` per
image, in order); ``answer`` (the first reference); ``category`` (the dataset); then ``id``,
``answers`` (JSON), ``metric``, ``length``, ``num_tokens`` and ``meta``.

The folder also gets ``mmlb_vlmevalkit.json`` (the configs it holds): with ``LMUData`` pointing at
it, ``mmlbdata.exports.vlmevalkit_dataset`` serves them to VLMEvalKit's ``run.py`` as VQA datasets
with interleaved prompts, scored by this library's metrics.
"""
from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Optional, Sequence

from mmlbdata.exports import content_name, iter_rows, selected_configs, write_image
from mmlbdata.exports.vlmevalkit_dataset import LISTING

TEXT_COLUMNS = ["question", "answer", "category", "id", "answers", "metric", "length", "num_tokens", "meta"]


def _list_literal(values: list[str]) -> str:
    """What VLMEvalKit's ``toliststr`` reads: a plain value, or a Python list of quoted strings."""
    return values[0] if len(values) == 1 else "[" + ", ".join(f"'{v}'" for v in values) + "]"


def tsv_field(value: object) -> str:
    """One cell, quoted like ``csv``'s QUOTE_MINIMAL (pandas reads it back), but without the csv
    module's per-character pass, which dominates on megabyte-long base64 cells."""
    text = str(value)
    if "\t" in text or "\n" in text or "\r" in text or '"' in text:
        return '"' + text.replace('"', '""') + '"'
    return text


def export_tsv(folder: Path, out: Path, *, configs: Optional[Sequence[str]] = None,
               images: str = "base64") -> list[Path]:
    """One ``<config>.tsv`` per config under ``out``; ``images`` is ``base64`` or ``path``."""
    if images not in ("base64", "path"):
        raise ValueError(f"images must be base64 or path, not {images!r}")
    folder, out = Path(folder), Path(out)
    out.mkdir(parents=True, exist_ok=True)
    image_columns = ["image", "image_path"] if images == "base64" else ["image_path"]
    images_root = (out / "images").resolve()
    written = []
    for name in selected_configs(folder, configs):
        path = out / f"{name}.tsv"
        tmp = path.with_name(path.name + ".tmp")
        with open(tmp, "w", newline="", encoding="utf-8") as handle:
            handle.write("\t".join(["index", *image_columns, *TEXT_COLUMNS]) + "\n")
            for index, row in enumerate(iter_rows(folder, name)):
                if images == "base64":
                    image_cells = [
                        [base64.b64encode(img["bytes"]).decode("ascii") for img in row["images"]],
                        [content_name(img["bytes"], img.get("path") or "").replace("/", "_") for img in row["images"]],
                    ]
                else:
                    image_cells = [[str(images_root / write_image(images_root, img["bytes"], img.get("path") or ""))
                                    for img in row["images"]]]
                answers = row["answers"] or []
                cells_out = [index, *(_list_literal(c) if c else "[]" for c in image_cells), row["prompt"],
                             answers[0] if answers else "", row["dataset"], row["id"],
                             json.dumps(answers, ensure_ascii=False), row["metric"], row["length"],
                             row["num_tokens"], row["meta"]]
                handle.write("\t".join(tsv_field(c) for c in cells_out) + "\n")
        tmp.replace(path)
        written.append(path)
    _update_listing(out, [p.stem for p in written])
    return written


def _update_listing(out: Path, names: list[str]) -> None:
    """The configs this folder holds, for the VLMEvalKit dataset class (earlier exports kept)."""
    path = out / LISTING
    known = json.loads(path.read_text(encoding="utf-8")).get("configs", []) if path.is_file() else []
    path.write_text(json.dumps({"configs": sorted(set(known) | set(names))}, indent=1) + "\n", encoding="utf-8")
