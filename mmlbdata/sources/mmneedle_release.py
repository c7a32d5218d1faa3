"""MMNeedle's released haystacks (Hugging Face ``Wang-ML-Lab/MMNeedle``), read as released.

The release ships the generated benchmark: ``images_stitched.zip`` (the stitched N x N grids),
``metadata_stitched.zip`` (one JSON array per setting: ``annotations_{M}_{N}_{N}.json`` for one
needle, ``{K}_annotations_{M}_{N}_{N}.json`` for K needles) and ``file_to_caption.json`` (COCO file
-> the caption used as needle). Each metadata entry holds ``id``, ``image_ids`` (the haystack's
grid files, relative to the release root), and 0-based ``index``/``row``/``col`` per needle (-1 when
absent) with its ``target`` COCO file (a value, or a list when K > 1), as the repository's
``huggingface/mmneedle.py`` reads them.

Every entry is checked against :data:`ENTRY_SCHEMA` before it is read (mmlbdata.sources.lineschema):
an entry that does not fit is reported (its field and why) and skipped; a metadata or caption
file that is not JSON at all fails its config with an error naming the file.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from mmlbdata.core.report import BuildReport
from mmlbdata.sources.lineschema import Field, Rule, Schema, problem

SOURCE_KEY = "mmneedle_release"
LAYOUT = ("MMNeedle release (Wang-ML-Lab/MMNeedle): images_stitched/<N>_<N>/*.jpg + metadata_stitched/"
          "[<K>_]annotations_<M>_<N>_<N>.json + file_to_caption.json (the zips extracted)")
CAPTIONS = "file_to_caption.json"

#: a needle position: 0-based, -1 when absent (``int()`` of anything else was a silent guess)
_POSITION = Field((int, list), items=Field((int,)),
                  rule=(lambda v: all(x >= -1 for x in _as_list(v)), "0-based positions, -1 when absent"))
#: one entry of ``[<K>_]annotations_<M>_<N>_<N>.json`` as the official needle.py reads it: the
#: haystack images, and per needle index/row/col and the COCO target (one value, or a list when K > 1)
ENTRY_SCHEMA = Schema({
    "id": Field((int, str), required=False),
    "image_ids": Field((list,), items=Field((str,)), nonempty=True),
    "index": _POSITION, "row": _POSITION, "col": _POSITION,
    "target": Field((str, list), items=Field((str,))),
}, (Rule("target", lambda e: len({len(_as_list(e[k])) for k in ("index", "row", "col", "target")}) == 1,
         "index/row/col/target lists differ in length"),))


@dataclass(frozen=True)
class ReleasedNeedle:
    index: int  # haystack image, 0-based; -1 when absent
    row: int
    col: int
    target: str  # COCO file the caption describes
    caption: str


@dataclass(frozen=True)
class ReleasedSample:
    number: int  # position in the metadata file
    sample_id: Any
    images: tuple[str, ...]  # relative to the release root
    needles: tuple[ReleasedNeedle, ...]


def metadata_path(root: Path, m: int, n: int, k: int) -> Path:
    name = f"annotations_{m}_{n}_{n}.json" if k == 1 else f"{k}_annotations_{m}_{n}_{n}.json"
    return Path(root) / "metadata_stitched" / name


def _as_list(value: Any) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def read_captions(root: Path) -> dict[str, str]:
    path = Path(root) / CAPTIONS
    if not path.is_file():
        raise FileNotFoundError(f"{path}: the release's caption file is missing (expected layout: {LAYOUT})")
    captions = _load_json(path)
    if not isinstance(captions, dict):
        raise ValueError(f"{path}: not a JSON object {{COCO file: caption}}")
    return captions


def _load_json(path: Path) -> Any:
    """A whole release JSON file; an unreadable one is an error naming the file."""
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except ValueError as err:  # JSONDecodeError and UnicodeDecodeError alike
        raise ValueError(f"{path}: not a readable JSON file ({type(err).__name__}: {err})") from None


def _sample(number: int, entry: dict, captions: dict[str, str]) -> ReleasedSample:
    fields = [_as_list(entry[key]) for key in ("index", "row", "col", "target")]  # equal lengths: ENTRY_SCHEMA
    needles = []
    for index, row, col, target in zip(*fields):
        if not isinstance(captions.get(target), str):
            raise ValueError(f"no caption for {target!r} in {CAPTIONS}" if target not in captions else
                             f"the caption of {target!r} in {CAPTIONS} is not a string")
        needles.append(ReleasedNeedle(int(index), int(row), int(col), str(target), captions[target]))
    return ReleasedSample(number, entry.get("id", number), tuple(str(p) for p in entry["image_ids"]), tuple(needles))


def read_samples(root: Path, m: int, n: int, k: int, report: BuildReport) -> Iterator[ReleasedSample]:
    """The setting's samples in file order; malformed entries reported and skipped."""
    path = metadata_path(root, m, n, k)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: not in the MMNeedle release (expected layout: {LAYOUT})")
    captions = read_captions(root)
    entries = _load_json(path)
    if not isinstance(entries, list):
        raise ValueError(f"{path}: not a JSON array of samples")
    for number, entry in enumerate(entries):
        found = problem(entry, ENTRY_SCHEMA)
        if found is not None:
            report.skip(path, f"entry {number}", found.message, field=found.field or None)
            continue
        try:
            yield _sample(number, entry, captions)
        except (KeyError, TypeError, ValueError) as err:
            report.skip(path, f"entry {number}", f"malformed sample: {type(err).__name__}: {err}")
