"""MM-NIAH release reader: ``annotations/{task}-{text,image}.jsonl`` + ``images/``.

Each line is one haystack (OBELICS documents with needles already inserted)::

    {"id": 0, "images_list": ["obelics/a.jpg", ...],      # context images, then question images
     "context": "text <image> text </s> next document ...",
     "question": "...", "answer": "str" | [counts] | 0-based option index,
     "meta": {"placed_depth": float | [float], "needles": [...], "choices": [...] | null,
              "choices_image_path": [...] | null, "context_length": ..., "num_images": ...}}

The reader takes every haystack apart again so that the recipe can rebuild it at another length:
documents (split on ``</s>``) become lists of text and image segments, text needles are taken out
of the text, and for image needles the needle-bearing haystack image is taken out of the image list.
The release does not name the needle-bearing image; it is the context image at the needle's
``placed_depth`` (index ``round(depth * (n - 1))`` among the ``n`` context images), which is how
the release places image needles. Paths are relative to ``root/images``; a line naming a path
that leaves that folder (``..``, absolute, a symlink out) is reported and skipped whole.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Protocol

from mmlbdata.core.store import checked_source_path

IMAGE = "<image>"
DOC_SEP = "</s>"
TASKS = ("retrieval", "counting", "reasoning")
MODALITIES = ("text", "image")


class _Report(Protocol):  # mmlbdata.core.report.BuildReport
    def skip(self, file, record, reason) -> None: ...


@dataclass(frozen=True)
class ImageSeg:
    """An image of a document (absolute path)."""

    path: Path


@dataclass
class NiahRecord:
    """One MM-NIAH haystack taken apart (needles removed)."""

    id: str
    task: str                       # retrieval | counting | reasoning
    modality: str                   # text | image (where the needles are)
    documents: list[list]           # per document: str and ImageSeg segments in order
    question: str                   # with one <image> per question image
    question_images: list[Path]
    answer: object                  # str, list of counts, or 0-based option index
    needles: list                   # text needles (str) or needle-bearing images (Path)
    depths: list[float]             # placed_depth as released, one per needle
    choices: list[str] | None = None
    choice_images: list[Path] | None = None
    source: dict = field(default_factory=dict)  # released meta (lengths etc.), for the record
    line: int = -1                  # 0-based line of the task file

    @property
    def is_choice(self) -> bool:
        return bool(self.choices or self.choice_images)


def annotation_file(root: str | Path, task: str, modality: str) -> Path:
    """``root/annotations/{task}-{modality}.jsonl`` (checked)."""
    if task not in TASKS or modality not in MODALITIES:
        raise ValueError(f"unknown MM-NIAH task {task}-{modality}")
    path = Path(root) / "annotations" / f"{task}-{modality}.jsonl"
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} not found (expected the MM-NIAH release layout: annotations/"
            "{retrieval,counting,reasoning}-{text,image}.jsonl and images/)")
    return path


def read_mmniah(root: str | Path, task: str, modality: str, report: _Report | None = None,
                start: int = 0, stop: int | None = None) -> Iterator[NiahRecord]:
    """Yield the haystacks of one task file in file order, skipping (and reporting) bad lines.

    ``start``/``stop`` select lines (0-based, as ``range``); lines outside are not parsed.
    """
    path = annotation_file(root, task, modality)
    image_root = Path(root) / "images"
    with path.open(encoding="utf-8") as lines:
        for lineno, line in enumerate(lines, 1):
            if lineno <= start:
                continue
            if stop is not None and lineno > stop:
                return
            if not line.strip():
                continue
            try:
                record = parse_row(json.loads(line), task, modality, image_root)
            except (ValueError, KeyError, TypeError, IndexError) as exc:
                _skip(report, path, f"line {lineno}", str(exc))
                continue
            record.line = lineno - 1
            yield record


def parse_row(row: dict, task: str, modality: str, image_root: Path) -> NiahRecord:
    """Take one released row apart; raises ValueError naming what is inconsistent."""
    context, question, meta = row["context"], row["question"], row["meta"]
    images = [checked_source_path(image_root, p, what="images_list entry") for p in row["images_list"]]
    n_ctx, n_q = context.count(IMAGE), question.count(IMAGE)
    if n_ctx + n_q != len(images):
        raise ValueError(f"id {row['id']}: {n_ctx + n_q} <image> placeholders but "
                         f"{len(images)} images_list entries")
    for img in images:
        if not img.is_file():
            raise ValueError(f"id {row['id']}: image file missing: {img}")
    depths = meta["placed_depth"]
    depths = [float(d) for d in (depths if isinstance(depths, list) else [depths])]
    needles = list(meta["needles"])
    documents = _documents(context, iter(images[:n_ctx]))
    if modality == "text":
        for needle in needles:
            found = context.count(str(needle).strip())
            if found != 1:
                raise ValueError(f"id {row['id']}: text needle found {found} times in the context "
                                 f"(expected once): {str(needle)[:60]!r}")
        documents = [_remove_text_needles(doc, needles, row["id"]) for doc in documents]
    else:
        needles = _remove_image_needles(documents, depths, n_ctx, row["id"])
    choice_paths = meta.get("choices_image_path")
    return NiahRecord(
        id=str(row["id"]), task=task, modality=modality, documents=documents,
        question=question, question_images=images[n_ctx:], answer=row["answer"],
        needles=needles, depths=depths, choices=meta.get("choices") or None,
        choice_images=[checked_source_path(image_root, p, what="choices_image_path entry")
                       for p in choice_paths] if choice_paths else None,
        source={k: v for k, v in meta.items() if k not in ("needles", "choices", "choices_image_path")},
    )


def _documents(context: str, images: Iterator[Path]) -> list[list]:
    docs = []
    for text in context.split(DOC_SEP):
        segments: list = []
        for i, part in enumerate(text.split(IMAGE)):
            if i:
                segments.append(ImageSeg(next(images)))
            if part.strip():
                segments.append(part.strip())
        if segments:
            docs.append(segments)
    return docs


def _remove_text_needles(doc: list, needles: list, row_id) -> list:
    """Cut each needle sentence out of the document's text (it is placed again later)."""
    out = []
    for seg in doc:
        if isinstance(seg, str):
            for needle in needles:
                if isinstance(needle, str) and needle.strip() and needle.strip() in seg:
                    seg = " ".join(seg.replace(needle.strip(), " ").split())
            if not seg:
                continue
        out.append(seg)
    return out


def _remove_image_needles(documents: list[list], depths: list[float], n_ctx: int, row_id) -> list[Path]:
    """Take the needle-bearing images (at the placed depths) out of the documents."""
    if n_ctx == 0:
        raise ValueError(f"id {row_id}: image needles but no context image")
    wanted = sorted({round(d * (n_ctx - 1)) for d in depths})
    found: dict[int, Path] = {}
    k = 0
    for doc in documents:
        keep = []
        for seg in doc:
            if isinstance(seg, ImageSeg):
                if k in wanted:
                    found[k] = seg.path
                    k += 1
                    continue
                k += 1
            keep.append(seg)
        doc[:] = keep
    return [found[round(d * (n_ctx - 1))] for d in depths]


def _skip(report: _Report | None, file, record, reason: str) -> None:
    if report is None:
        import warnings

        warnings.warn(f"{file}: {record} skipped: {reason}", stacklevel=3)
        return
    report.skip(file, record, reason)
