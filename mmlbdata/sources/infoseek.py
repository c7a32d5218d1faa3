"""InfoSeek release files (Chen et al., 2023), as published.

Layout::

    <root>/infoseek_<split>.jsonl          {"data_id", "image_id", "question", "answer": [...],
                                            "answer_eval": [...], "data_split"}
    <root>/infoseek_<split>_withkb.jsonl   {"data_id", "entity_id": "Q...", "entity_text"}
    <root>/<images>/<image_id>.jpg         OVEN images by OVEN id, flat or in the snapshot's
                                           two-digit folders (oven_05050169 -> 05/oven_05050169.jpg)

The files may also sit in an ``infoseek_data/`` sub-folder. ``answer_eval`` mixes strings (accepted
spellings) and numeric ranges (``{"wikidata": 1.5, "range": [1.4, 1.6]}``); the accepted answers
are every string of ``answer`` and ``answer_eval`` (ranges have no string form to match).
An ``image_id`` whose file would lie outside the release root (``..``, a symlink out) is refused.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional

from mmlbdata.core.report import BuildReport
from mmlbdata.core.store import BadImageError, ImageRef, ImageStore
from mmlbdata.sources.records import read_jsonl_reported

LAYOUT = ("InfoSeek release: infoseek_<split>.jsonl + infoseek_<split>_withkb.jsonl, and OVEN images "
          "<image_id>.jpg (flat, in images/ or oven_images/, or in two-digit folders)")
_IMAGE_DIRS = ("", "images", "oven_images", "infoseek_images")
_EXTS = (".jpg", ".jpeg", ".JPEG", ".png", ".JPG")


@dataclass(frozen=True)
class InfoSeekQuestion:
    data_id: str
    image_id: str
    question: str
    answers: tuple[str, ...]
    entity_id: str
    entity_text: str
    image: ImageRef


def find_release_file(root: Path, name: str) -> Optional[Path]:
    """``root/name`` or the first match below ``root`` (sorted, so deterministic)."""
    direct = root / name
    if direct.is_file():
        return direct
    return next(iter(sorted(root.rglob(name))), None)


def accepted_answers(record: dict) -> tuple[str, ...]:
    """Every string answer of ``answer`` and ``answer_eval``, first-seen order, no duplicates."""
    seen: dict[str, None] = {}
    for key in ("answer", "answer_eval"):
        values = record.get(key) or []
        for value in values if isinstance(values, list) else [values]:
            if isinstance(value, (str, int, float)) and not isinstance(value, bool) and str(value).strip():
                seen.setdefault(str(value).strip(), None)
    return tuple(seen)


def oven_image_path(root: Path, image_id: str, split: str = "") -> Optional[Path]:
    """Where an OVEN image lives under ``root`` (flat, images/, two-digit shard folders)."""
    digits = image_id.split("_")[-1][:2]
    dirs = list(_IMAGE_DIRS) + ([f"infoseek_{split}_images"] if split else [])
    for folder in dirs:
        base = root / folder if folder else root
        for sub in (digits, ""):
            for ext in _EXTS:
                path = base / sub / f"{image_id}{ext}" if sub else base / f"{image_id}{ext}"
                if path.is_file():
                    return path
    return None


def checked_image(store: ImageStore, path: Path, report: BuildReport, file: Path, where: str,
                  root: Path) -> Optional[ImageRef]:
    """The image's reference, or None with the record reported when the file is unusable or
    lies outside ``root`` (the release folder)."""
    try:
        return store.ref_inside(root, os.path.relpath(path, root))
    except BadImageError as err:
        report.skip(file, where, str(err))
        return None


def read_withkb(path: Path, report: BuildReport) -> dict[str, tuple[str, str]]:
    """data_id -> (entity_id, entity_text)."""
    out = {}
    for lineno, record in read_jsonl_reported(path, report):
        if not record.get("data_id") or not record.get("entity_id"):
            report.skip(path, f"line {lineno}", "missing data_id or entity_id")
            continue
        out[str(record["data_id"])] = (str(record["entity_id"]), str(record.get("entity_text") or ""))
    return out


def read_infoseek(root: Path, store: ImageStore, report: BuildReport, split: str = "val") -> Iterator[InfoSeekQuestion]:
    """Questions with their entity and image, in file order; bad records are reported, skipped."""
    root = Path(root)
    questions = find_release_file(root, f"infoseek_{split}.jsonl")
    withkb = find_release_file(root, f"infoseek_{split}_withkb.jsonl")
    if questions is None or withkb is None:
        raise FileNotFoundError(f"{root}: needs infoseek_{split}.jsonl and infoseek_{split}_withkb.jsonl ({LAYOUT})")
    entities = read_withkb(withkb, report)
    for lineno, record in read_jsonl_reported(questions, report):
        where = record.get("data_id") or f"line {lineno}"
        missing = [k for k in ("data_id", "image_id", "question") if not record.get(k)]
        if missing:
            report.skip(questions, where, f"missing {', '.join(missing)}")
            continue
        answers = accepted_answers(record)
        if not answers:
            report.skip(questions, where, "no string answer in answer/answer_eval")
            continue
        if record["data_id"] not in entities:
            report.skip(questions, where, f"no entity in {withkb.name}")
            continue
        path = oven_image_path(questions.parent, record["image_id"], split) or oven_image_path(root, record["image_id"], split)
        if path is None:
            report.skip(questions, where, f"image {record['image_id']} not found under {root}")
            continue
        image = checked_image(store, path, report, questions, where, root)
        if image is None:
            continue
        entity_id, entity_text = entities[record["data_id"]]
        yield InfoSeekQuestion(str(record["data_id"]), str(record["image_id"]), str(record["question"]).strip(),
                               answers, entity_id, entity_text, image)
