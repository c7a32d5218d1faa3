"""Visual Haystacks (VHs) release reader: ``visual_haystack_{N}.json`` question files.

Each file is a JSON array; an entry is one question over a haystack of N COCO 2017 images::

    {"conversations": [{"from": "human", "value": "<question>"}, {"from": "gpt", "value": "Yes"}],
     "pos_image": ["val2017/000000000139.jpg", ...],      # the needle image(s)
     "neg_image": ["train2017/000000000009.jpg", ...]}    # distractors, in release order

Image paths are relative to the COCO 2017 root (a leading folder such as ``coco/`` is tolerated).
Needles are validated when read; distractors are only resolved, since a builder uses a prefix of
them (the ones that fit its budget) and checks those as it takes them. A path that leaves the COCO
root (``..``, absolute, a symlink out) is refused: a needle refused skips its question, a
distractor refused is reported and left out of the haystack.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional

from mmlbdata.core.report import BuildReport
from mmlbdata.core.store import BadImageError, ImageRef, ImageStore, checked_source_path

LAYOUT = ("Visual Haystacks release folder: visual_haystack_<N>.json files (any depth; e.g. "
          "VHs_qa/single_needle/VHs_large/), image paths relative to the COCO 2017 root given as 'coco'")
_FILE = re.compile(r"^visual_haystack_(\d+)\.json$")
_IMAGE_TAG = re.compile(r"<image>\s*")


@dataclass(frozen=True)
class VhsQuestion:
    """One released question: its needles (validated) and its distractor paths in order."""

    source_id: str
    question: str
    answer: str
    needles: tuple[ImageRef, ...]
    distractors: tuple[Path, ...]
    file: Path

    @property
    def mode(self) -> str:
        """``single`` for one needle image, else ``multi``."""
        return "single" if len(self.needles) == 1 else "multi"


def release_files(root: Path) -> dict[int, Path]:
    """Haystack size N -> ``visual_haystack_{N}.json`` under ``root`` (searched recursively)."""
    found: dict[int, Path] = {}
    for path in sorted(Path(root).rglob("visual_haystack_*.json")):
        match = _FILE.match(path.name)
        if match:
            found.setdefault(int(match.group(1)), path)
    if not found:
        raise FileNotFoundError(f"{root}: no visual_haystack_<N>.json file; expected {LAYOUT}")
    return dict(sorted(found.items()))


def resolve_image(coco_root: Path, rel: str) -> Path:
    """``rel`` under the COCO root; leading folders the root lacks (``coco/``) are dropped.

    Raises :class:`BadImageError` when ``rel`` (or the shortened form found) leaves the root.
    """
    checked_source_path(coco_root, rel)
    parts = Path(rel).parts
    for start in range(len(parts)):
        candidate = Path(coco_root, *parts[start:])
        if candidate.exists():
            return checked_source_path(coco_root, Path(*parts[start:]))
    return Path(coco_root, rel)


def read_vhs(path: Path, coco_root: Path, store: ImageStore, report: BuildReport) -> Iterator[VhsQuestion]:
    """The questions of one release file in order; bad entries are skipped and reported."""
    try:
        entries = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        report.skip(path, None, f"unreadable Visual Haystacks file ({err}); file skipped")
        return
    if not isinstance(entries, list):
        report.skip(path, None, "not a Visual Haystacks file (expected a JSON array); file skipped")
        return
    for index, entry in enumerate(entries):
        question = _parse(entry, index, path, coco_root, store, report)
        if question is not None:
            yield question


def _parse(entry, index: int, path: Path, coco_root: Path, store: ImageStore,
           report: BuildReport) -> Optional[VhsQuestion]:
    record = f"entry {index}"
    try:
        turns = entry["conversations"]
        question = _IMAGE_TAG.sub("", str(turns[0]["value"])).strip()
        answer = str(turns[1]["value"]).strip()
        pos, neg = list(entry["pos_image"]), list(entry["neg_image"])
    except (KeyError, IndexError, TypeError) as err:
        report.skip(path, record, f"missing field {err} (needs conversations, pos_image, neg_image)")
        return None
    if not pos or not question:
        report.skip(path, record, "no needle image or empty question")
        return None
    try:
        needles = tuple(store.ref(resolve_image(coco_root, str(p))) for p in pos)
    except BadImageError as err:
        report.skip(err.path, record, f"needle image unusable: {err.reason} (named by {path.name})")
        return None
    source_id = str(entry.get("id", f"{path.stem}_{index:05d}"))
    seen = {Path(ref.path).resolve() for ref in needles}
    if len(seen) != len(needles):
        report.skip(path, record, f"pos_image names one image twice ({pos}); question skipped")
        return None
    return VhsQuestion(source_id, question, answer, needles,
                       _distractors(neg, coco_root, path, record, report, seen), Path(path))


def _distractors(names: list, coco_root: Path, path: Path, record: str, report: BuildReport,
                 seen: set) -> tuple[Path, ...]:
    """Resolved distractor paths in release order; a path leaving the COCO root, or an image
    already in the haystack (a needle, an earlier distractor), is reported and dropped."""
    out = []
    for name in names:
        try:
            resolved = resolve_image(coco_root, str(name))
        except BadImageError as err:
            report.skip(err.path, record, f"distractor image {err.reason} (named by {path})")
            continue
        if resolved.resolve() in seen:
            report.skip(path, record, f"neg_image {name!r} is already in the haystack; duplicate dropped")
            continue
        seen.add(resolved.resolve())
        out.append(resolved)
    return tuple(out)
