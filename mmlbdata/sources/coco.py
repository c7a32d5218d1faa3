"""COCO release folders (2014 or 2017 layout), read with ``pycocotools``.

Layout::

    <root>/annotations/instances_{split}.json   (and captions_{split}.json)
    <root>/{split}/<file_name>                  e.g. val2017/000000000139.jpg

Bad input never stops a read: a truncated or invalid annotation file, one without its
``images``/``categories``/``annotations`` lists, an annotation naming an image that is missing, a
``file_name`` leaving the split folder (``../../etc/passwd``, an absolute path, a symlink out), a
duplicate image id or file, or a corrupt image file is skipped and reported with the file named.
"""
from __future__ import annotations

import contextlib
import io
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from mmlbdata.core.report import BuildReport
from mmlbdata.core.store import BadImageError, ImageRef, ImageStore

LAYOUT = "COCO release folder: annotations/instances_<split>.json + <split>/*.jpg (e.g. val2017/)"

_ANNOTATION = re.compile(r"^(instances|captions)_(?P<split>[A-Za-z]+\d*)\.json$")


@dataclass(frozen=True)
class CocoImage:
    """One usable COCO image: where it is, its size, and what it shows."""

    image_id: int
    split: str
    ref: ImageRef
    categories: frozenset[str]

    @property
    def key(self) -> str:
        """A stable, human-readable id: ``val2017/000000000139``."""
        return f"{self.split}/{Path(self.ref.path).stem}"


def annotation_files(root: Path, kind: str) -> list[Path]:
    """``annotations/{kind}_*.json`` in sorted order (never an unsorted listing)."""
    folder = Path(root) / "annotations"
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder}: no annotations folder; expected {LAYOUT}")
    return sorted(p for p in folder.iterdir()
                  if (m := _ANNOTATION.match(p.name)) and m.group(1) == kind)


def load_json(path: Path, report: BuildReport) -> Optional[dict]:
    """A JSON annotation file, or None (reported) if it is truncated or invalid."""
    try:
        with open(path, "rb") as handle:
            return json.load(handle)
    except json.JSONDecodeError as err:
        report.skip(path, None, f"truncated or invalid JSON ({err.msg} at line {err.lineno}); file skipped")
    except OSError as err:
        report.skip(path, None, f"cannot read annotation file ({err.strerror}); file skipped")
    return None


def missing_lists(data: object, keys: tuple[str, ...]) -> list[str]:
    """The top-level lists a COCO file lacks (all of them when it is not a JSON object)."""
    if not isinstance(data, dict):
        return list(keys)
    return [key for key in keys if not isinstance(data.get(key), list)]


def unique_images(ann_file: Path, images: list, report: BuildReport) -> list[dict]:
    """The ``images`` entries with an id and a file name, first of each id and of each file kept;
    later duplicates are reported and dropped (one image must never appear twice in a row)."""
    seen_ids: set = set()
    seen_files: set = set()
    kept = []
    for info in images:
        if not isinstance(info, dict) or "id" not in info or not isinstance(info.get("file_name"), str):
            report.skip(ann_file, repr(info)[:80], "image entry without id/file_name")
            continue
        image_id, name = info["id"], info["file_name"]
        if image_id in seen_ids or name in seen_files:
            what = f"image id {image_id}" if image_id in seen_ids else f"file_name {name!r}"
            report.skip(ann_file, f"image_id={image_id}", f"duplicate {what}: only its first entry is kept")
            continue
        seen_ids.add(image_id)
        seen_files.add(name)
        kept.append(info)
    return kept


def _coco_index(data: dict):
    from pycocotools.coco import COCO

    coco = COCO()
    coco.dataset = data
    with contextlib.redirect_stdout(io.StringIO()):  # pycocotools prints progress
        coco.createIndex()
    return coco


def _split_name(path: Path) -> str:
    return _ANNOTATION.match(path.name).group("split")


def read_instances(root: Path, store: ImageStore, report: BuildReport) -> list[CocoImage]:
    """Every image with at least one instance, sorted by (split, image id)."""
    images: list[CocoImage] = []
    for ann_file in annotation_files(root, "instances"):
        data = load_json(ann_file, report)
        if data is None:
            continue
        missing = missing_lists(data, ("images", "annotations", "categories"))
        if missing:
            report.skip(ann_file, None, f"not a COCO instances file (no {', '.join(missing)} list); file skipped")
            continue
        data = {**data, "images": unique_images(ann_file, data["images"], report)}
        try:
            coco = _coco_index(data)
        except (KeyError, TypeError) as err:
            report.skip(ann_file, None, f"not a COCO instances file (missing {err}); file skipped")
            continue
        split = _split_name(ann_file)
        names = {cid: cat["name"] for cid, cat in coco.cats.items()}
        for image_id in sorted(coco.imgs):
            anns = coco.imgToAnns.get(image_id, [])
            categories = frozenset(names[a["category_id"]] for a in anns if a.get("category_id") in names)
            if not categories:
                continue
            name = coco.imgs[image_id]["file_name"]
            try:
                ref = store.ref_inside(Path(root) / split, name, what="file_name")
            except BadImageError as err:
                report.skip(err.path, f"image_id={image_id}", f"{err.reason} (named by {ann_file})")
                continue
            images.append(CocoImage(image_id, split, ref, categories))
    return images
