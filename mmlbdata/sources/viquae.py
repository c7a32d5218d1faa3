"""ViQuAE (Lerner et al., SIGIR'22) question files, as published in ``viquae_dataset``.

Layout::

    <root>/<split>.jsonl        one question per line (split: train | validation | test):
        {"id", "image": "<file name>", "input": "<question about the pictured entity>",
         "original_question": "<the same question naming the entity>",
         "output": {"original_answer", "answer": [aliases...],
                    "provenance": [{"wikipedia_id", "title", "start_paragraph_id",
                                    "start_character", "end_paragraph_id", "end_character", ...}]},
         "kilt_id", "wikidata_id", ...}
    <root>/images/<file name>   the question images (the release's images archive)

``provenance`` is in KILT's format: it points into the paragraphs of a KILT Wikipedia article,
which is how the gold passage is found in the passage corpus. An ``image`` naming a file outside
the release root (``..``, an absolute path, a symlink out) is refused, reported and skipped.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from mmlbdata.core.report import BuildReport
from mmlbdata.core.store import ImageRef, ImageStore
from mmlbdata.sources.infoseek import checked_image, find_release_file
from mmlbdata.sources.mmlb_release import QUOTED_IMAGE_DROPPED
from mmlbdata.sources.records import read_jsonl_reported

LAYOUT = "ViQuAE release: <split>.jsonl (viquae_dataset) + images/<image file name>"


@dataclass(frozen=True)
class ViquaeQuestion:
    id: str
    input: str
    original_question: str
    answers: tuple[str, ...]
    provenance: tuple[dict, ...]
    kilt_id: str
    wikidata_id: str
    image: ImageRef


def viquae_answers(output: dict) -> tuple[str, ...]:
    """``original_answer`` first, then every alias of ``answer``, without duplicates."""
    seen: dict[str, None] = {}
    for value in [output.get("original_answer")] + list(output.get("answer") or []):
        if isinstance(value, (str, int, float)) and str(value).strip():
            seen.setdefault(str(value).strip(), None)
    return tuple(seen)


def read_viquae(root: Path, store: ImageStore, report: BuildReport, split: str = "test",
                drop_quoted: bool = False) -> Iterator[ViquaeQuestion]:
    """Questions in file order; a record without answers, provenance or image is reported, skipped.
    ``drop_quoted``: MMLongBench v1.1's filter (data.py @22b9f27 L47-55 ``load_vrag``, since bf8fbae):
    a question whose image file name holds a double quote is left out, reported."""
    root = Path(root)
    path = find_release_file(root, f"{split}.jsonl")
    if path is None:
        raise FileNotFoundError(f"{root}: no {split}.jsonl ({LAYOUT})")
    for lineno, record in read_jsonl_reported(path, report):
        where = record.get("id") or f"line {lineno}"
        output = record.get("output") if isinstance(record.get("output"), dict) else {}
        answers = viquae_answers(output)
        question = str(record.get("original_question") or "").strip()
        if not answers or not question or not record.get("input"):
            report.skip(path, where, "missing input, original_question or answers")
            continue
        provenance = tuple(p for p in output.get("provenance") or [] if isinstance(p, dict))
        if not provenance and not record.get("kilt_id"):
            report.skip(path, where, "no provenance and no kilt_id: the gold passage cannot be found")
            continue
        image_name = str(record.get("image") or "")
        if drop_quoted and '"' in image_name:
            report.skip(path, where, QUOTED_IMAGE_DROPPED)
            continue
        candidates = [root / "images" / image_name, path.parent / "images" / image_name, root / image_name]
        image_path = next((c for c in candidates if image_name and c.is_file()), None)
        if image_path is None:
            report.skip(path, where, f"image {image_name!r} not found under {root / 'images'}")
            continue
        image = checked_image(store, image_path, report, path, where, root)
        if image is None:
            continue
        yield ViquaeQuestion(str(record.get("id") or f"{split}_{lineno}"), str(record["input"]).strip(), question,
                             answers, provenance, str(record.get("kilt_id") or ""),
                             str(record.get("wikidata_id") or ""), image)
