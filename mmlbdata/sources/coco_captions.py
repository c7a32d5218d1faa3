"""COCO captions in the release layout: ``annotations/captions_{split}.json`` + ``{split}/`` images.

Any COCO release folder works (2014 or 2017, one split or several). One caption is kept per image:
by default the *last* one listed for it in the annotation file, which is MMNeedle's rule (its
``file_to_caption.py`` builds ``{image_id: caption}`` over the annotation list, so later captions
overwrite earlier ones); ``pick`` selects another position (0 = first listed).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol


class _Report(Protocol):  # mmlbdata.report.BuildReport
    def skip(self, file, record, reason) -> None: ...


@dataclass(frozen=True)
class CaptionedImage:
    """One COCO image with the caption chosen for it."""

    path: Path
    image_id: int
    split: str
    caption: str
    width: int
    height: int

    @property
    def key(self) -> str:
        """``split/file_name``: unique across the splits of a release folder."""
        return f"{self.split}/{self.path.name}"


def caption_files(root: str | Path) -> list[Path]:
    """The ``captions_*.json`` files of a release folder, sorted."""
    root = Path(root)
    files = sorted((root / "annotations").glob("captions_*.json"))
    if not files:
        raise FileNotFoundError(
            f"{root}: no annotations/captions_*.json (expected a COCO release folder: "
            "annotations/captions_val2014.json and val2014/ images, or the 2017 layout)")
    return files


def read_captions(root: str | Path, pick: int = -1, report: _Report | None = None) -> list[CaptionedImage]:
    """Every captioned image of the release under ``root``, sorted by ``split/file_name``.

    Images without a caption at position ``pick``, or whose file is missing, are skipped and
    reported; an unreadable annotation file is reported and the other splits still read.
    """
    out: list[CaptionedImage] = []
    for ann_file in caption_files(root):
        split = ann_file.stem[len("captions_"):]
        try:
            data = json.loads(ann_file.read_text(encoding="utf-8"))
            images, annotations = data["images"], data["annotations"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            _skip(report, ann_file, None, f"unreadable caption file: {exc}")
            continue
        out.extend(_split_images(ann_file, split, images, annotations, pick, report))
    return sorted(out, key=lambda item: item.key)


def _split_images(ann_file: Path, split: str, images: list, annotations: list, pick: int,
                  report: _Report | None) -> list[CaptionedImage]:
    by_image: dict[int, list[str]] = {}
    for ann in annotations:
        try:
            by_image.setdefault(int(ann["image_id"]), []).append(str(ann["caption"]).strip())
        except (KeyError, TypeError, ValueError):
            _skip(report, ann_file, ann, "caption annotation without image_id/caption")
    folder = ann_file.parent.parent / split
    out = []
    for image in images:
        try:
            image_id, name = int(image["id"]), str(image["file_name"])
            width, height = int(image["width"]), int(image["height"])
        except (KeyError, TypeError, ValueError):
            _skip(report, ann_file, image, "image entry without id/file_name/width/height")
            continue
        captions = by_image.get(image_id, [])
        if not -len(captions) <= pick < len(captions):
            _skip(report, ann_file, image_id, f"no caption at position {pick} ({len(captions)} listed)")
            continue
        path = folder / name
        if not path.is_file():
            _skip(report, ann_file, image_id, f"image file missing: {path}")
            continue
        out.append(CaptionedImage(path, image_id, split, captions[pick], width, height))
    return out


def _skip(report: _Report | None, file, record, reason: str) -> None:
    if report is None:
        import warnings

        warnings.warn(f"{file}: record {record!r} skipped: {reason}", stacklevel=3)
        return
    report.skip(file, record, reason)
