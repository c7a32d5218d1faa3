"""COCO captions in the release layout: ``annotations/captions_{split}.json`` + ``{split}/`` images.

A separate reader next to :mod:`mmlbdata.sources.coco` (instances), sharing its listing and JSON
loading. Any COCO release folder works (2014 or 2017, one split or several). One caption is kept
per image: by default the *last* one listed for it in the annotation file, which is MMNeedle's
rule (its ``file_to_caption.py`` builds ``{image_id: caption}`` over the annotation list, so later
captions overwrite earlier ones); ``pick`` selects another position (0 = first listed).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mmlbdata.core.report import BuildReport
from mmlbdata.core.store import BadImageError, ImageRef, ImageStore
from mmlbdata.sources.coco import annotation_files, load_json, missing_lists, unique_images

LAYOUT = "COCO release folder: annotations/captions_<split>.json + <split>/*.jpg (e.g. val2014/)"


@dataclass(frozen=True)
class CaptionedImage:
    """One COCO image with the caption chosen for it."""

    image_id: int
    split: str
    ref: ImageRef
    caption: str

    @property
    def key(self) -> str:
        """``split/file_name``: unique across the splits of a release folder."""
        return f"{self.split}/{Path(self.ref.path).name}"


def read_captions(root: Path, store: ImageStore, report: BuildReport, pick: int = -1) -> list[CaptionedImage]:
    """Every captioned image of the release under ``root``, sorted by ``split/file_name``.

    Images without a caption at position ``pick``, or whose file is missing or corrupt, are
    skipped and reported; an unreadable annotation file is reported and the other splits read.
    """
    files = annotation_files(root, "captions")
    if not files:
        raise FileNotFoundError(f"{root}: no annotations/captions_*.json; expected {LAYOUT}")
    out: list[CaptionedImage] = []
    for ann_file in files:
        data = load_json(ann_file, report)
        if data is None:
            continue
        missing = missing_lists(data, ("images", "annotations"))
        if missing:
            report.skip(ann_file, None, f"not a COCO captions file (no {', '.join(missing)} list); file skipped")
            continue
        out.extend(_split_images(Path(root), ann_file, data, store, report, pick))
    return sorted(out, key=lambda item: item.key)


def _captions_by_image(ann_file: Path, annotations: list, report: BuildReport) -> dict[int, list[str]]:
    by_image: dict[int, list[str]] = {}
    for ann in annotations:
        try:
            by_image.setdefault(int(ann["image_id"]), []).append(" ".join(str(ann["caption"]).split()))
        except (KeyError, TypeError, ValueError):
            report.skip(ann_file, repr(ann)[:80], "caption annotation without image_id/caption")
    return by_image


def _split_images(root: Path, ann_file: Path, data: dict, store: ImageStore, report: BuildReport,
                  pick: int) -> list[CaptionedImage]:
    split = ann_file.stem[len("captions_"):]
    by_image = _captions_by_image(ann_file, data["annotations"], report)
    out = []
    for info in unique_images(ann_file, data["images"], report):
        try:
            image_id, name = int(info["id"]), info["file_name"]
        except (TypeError, ValueError):
            report.skip(ann_file, repr(info)[:80], "image id is not an integer")
            continue
        captions = by_image.get(image_id, [])
        if not -len(captions) <= pick < len(captions):
            report.skip(ann_file, f"image_id={image_id}", f"no caption at position {pick} ({len(captions)} listed)")
            continue
        try:
            ref = store.ref_inside(root / split, name, what="file_name")
        except BadImageError as err:
            report.skip(err.path, f"image_id={image_id}", f"{err.reason} (named by {ann_file})")
            continue
        out.append(CaptionedImage(image_id, split, ref, captions[pick]))
    return out
