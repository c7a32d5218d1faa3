"""MM-NIAH as used by MMLongBench: interleaved OBELICS haystacks rebuilt at the five lengths.

Procedure, per released haystack (``mmlbdata.sources.mmniah`` takes it apart):

* The context is split into its documents; their text is cut into 100-word passages and their
  images kept (longer edge resized to at most 1024 px, aspect kept). These units are filled in
  order to the budget with ``mmlbdata.core.lengths.fill``; when a haystack is shorter than the budget
  the following haystacks of the same task file (their needles removed) continue it, in file order.
* The needles (text needle sentences, or the needle-bearing images for image needles) are placed
  again: retrieval-text, retrieval-image and reasoning-image at depths 0, 0.2, ..., 1.0 (six rows
  per haystack); counting and reasoning-text at three seeded permutations of positions (needle
  order kept: counting answers list the needles in order of appearance).
* Question images (counting-image) and choice images (``\\nA. <image>`` ... after the question)
  count toward the budget; every row keeps ``num_tokens <= length < next_num_tokens``.
* The prompt template is MMLongBench's, verbatim; passages are joined by ``\\n\\n``.
"""
from __future__ import annotations

import json
import random
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterator, Optional, Sequence

from mmlbdata.core.lengths import DEPTHS, fill
from mmlbdata.core.schema import make_example
from mmlbdata.core.seeding import stable_seed
from mmlbdata.core.store import BadImageError, ImageRef, file_sha256
from mmlbdata.core.tokens import IMAGE_PLACEHOLDER
from mmlbdata.official import mmlongbench_prompts as prompts
from mmlbdata.sources.mmniah import ImageSeg, NiahRecord, read_mmniah

from .base import MMLONGBENCH_LENGTH_KEYS, MMLBBuilder, standard_configs

NUM_PERMUTATIONS = 3
PASSAGE_WORDS = 100
MAX_EDGE = 1024
LAYOUT = ("MM-NIAH release: annotations/{retrieval,counting,reasoning}-{text,image}.jsonl "
          "+ images/ (paths in images_list are relative to images/)")
METRICS = {("retrieval", "text"): "sub_em", ("reasoning", "text"): "sub_em",
           ("counting", "text"): "count_acc", ("counting", "image"): "count_acc",
           ("retrieval", "image"): "mc_acc", ("reasoning", "image"): "mc_acc"}


def passages(text: str, words: int = PASSAGE_WORDS) -> list[str]:
    """``text`` cut into passages of ``words`` whitespace-separated words."""
    tokens = text.split()
    return [" ".join(tokens[i:i + words]) for i in range(0, len(tokens), words)]


@dataclass(frozen=True)
class Unit:
    """A passage (``text``) or an image (``path`` and its size after resizing)."""

    text: Optional[str] = None
    path: Optional[str] = None
    size: tuple[int, int] = (0, 0)
    origin: str = ""  # id of the released haystack it comes from

    @property
    def rendered(self) -> str:
        return IMAGE_PLACEHOLDER if self.text is None else self.text


def loader_kind(record: NiahRecord) -> str:
    """The ``data.py`` loader MMLongBench reads this task with (``load_data``): the multiple-choice
    one for retrieval and reasoning with image needles, else the plain one."""
    if record.modality == "image" and record.task in ("retrieval", "reasoning"):
        return "niah_choice"
    return "niah_count" if record.modality == "image" else "niah"


def render(units: Sequence[Unit], question: str, kind: str) -> str:
    context = "\n\n".join(u.rendered for u in units)
    return prompts.render(kind, context, question)


def question_text(record: NiahRecord) -> str:
    """The released question, with ``\\nA. <image>``... appended by the multiple-choice loader only
    (the text loader leaves a text-choice question as released)."""
    if loader_kind(record) != "niah_choice":
        return record.question
    return record.question + prompts.image_choices(len(record.choice_images or []))


def gold(record: NiahRecord) -> tuple[list[str], dict]:
    """Answers (strings) and the answer's meta fields."""
    if record.is_choice and isinstance(record.answer, int):
        return [chr(ord("A") + record.answer)], {"answer_index": record.answer}
    if isinstance(record.answer, list):
        return [json.dumps(record.answer)], {"counts": record.answer}
    return [str(record.answer)], {}


def insert_at(units: Sequence[Unit], needles: Sequence[Unit], fractions: Sequence[float]) -> tuple[list[Unit], list[int]]:
    """Needles inserted at ``round(f * len(units))`` (in order); returns the list and their indices."""
    slots = [round(f * len(units)) for f in fractions]
    out, positions, j = [], [], 0
    for i in range(len(units) + 1):
        while j < len(needles) and slots[j] == i:
            positions.append(len(out))
            out.append(needles[j])
            j += 1
        if i < len(units):
            out.append(units[i])
    return out, positions


class MMNIAH(MMLBBuilder):
    """``mm_niah_{retrieval,counting,reasoning}_{text,image}_{8k..128k}``."""

    DESCRIPTION = "MM-NIAH: needles in interleaved image-text documents, rebuilt at standard lengths."
    HOMEPAGE = "https://github.com/OpenGVLab/MM-NIAH"
    LICENSE = "MM-NIAH release terms (OBELICS documents)"
    CITATION = ("@article{wang2024needle, title={Needle In A Multimodal Haystack}, author={Wang, Weiyun "
                "and others}, journal={arXiv:2406.07230}, year={2024}}")
    SOURCES = {"mmniah": LAYOUT}
    BUILDER_CONFIGS = [
        config
        for (task, modality), metric in METRICS.items()
        for config in standard_configs(f"mm_niah_{task}_{modality}", lengths=MMLONGBENCH_LENGTH_KEYS, metric=metric, sources=("mmniah",),
                                       task=task, modality=modality,
                                       description=f"MM-NIAH {task} with {modality} needles")
    ]

    def generate(self) -> Iterator[dict]:
        task, modality = self.option("task"), self.option("modality")
        count = 0
        for record in read_mmniah(self.source("mmniah"), task, modality, self.report):
            if self.limit is not None and count >= self.limit:
                return
            count += 1
            try:
                yield from self.rows(record, record.line)
            except BadImageError as err:
                self.report.skip(err.path, f"id {record.id}", err.reason)

    # -- units ---------------------------------------------------------------------------------
    def image_unit(self, path: Path) -> Unit:
        ref = self.store.ref(path)
        w, h = ref.width, ref.height
        if max(w, h) > MAX_EDGE:
            scale = MAX_EDGE / max(w, h)
            w, h = max(1, round(w * scale)), max(1, round(h * scale))
        return Unit(path=str(path), size=(w, h))

    def record_units(self, record: NiahRecord) -> Iterator[Unit]:
        for doc in record.documents:
            for seg in doc:
                if isinstance(seg, ImageSeg):
                    try:
                        yield replace(self.image_unit(seg.path), origin=record.id)
                    except BadImageError as err:
                        self.report.skip(err.path, f"id {record.id}", f"{err.reason}; image left out")
                else:
                    yield from (Unit(text=p, origin=record.id) for p in passages(seg))

    def haystack(self, record: NiahRecord, line: int) -> Iterator[Unit]:
        """The record's units, then those of the following lines of its file (wrapping) as filler."""
        yield from self.record_units(record)
        root, task, modality = self.source("mmniah"), record.task, record.modality
        for start, stop in ((line + 1, None), (0, line)):
            for other in read_mmniah(root, task, modality, _Quiet(), start=start, stop=stop):
                yield from self.record_units(other)

    def bounded_haystack(self, record: NiahRecord, index: int) -> list[Unit]:
        """Enough haystack units to overfill the budget (so fill can find its boundary)."""
        out, total = [], 0
        for unit in self.haystack(record, index):
            out.append(unit)
            total += self.estimate(unit)
            if total > self.length * 1.05 + 2048:
                break
        return out

    def estimate(self, unit: Unit) -> int:
        if unit.text is None:
            return self.counter.image(*unit.size) + 1
        return self.counter.text(unit.text) + 1

    # -- rows ----------------------------------------------------------------------------------
    def rows(self, record: NiahRecord, index: int) -> Iterator[dict]:
        needles = [Unit(text=" ".join(str(n).split())) if record.modality == "text" else self.image_unit(n)
                   for n in record.needles]
        fixed = [self.image_unit(p) for p in record.question_images + (record.choice_images or [])]
        question = question_text(record)
        units = self.bounded_haystack(record, index)
        answers, answer_meta = gold(record)
        for suffix, fractions, extra in self.placements(record):
            def measure(selection: list[Unit]) -> int:
                full, _ = insert_at(selection, needles, fractions)
                sizes = [u.size for u in full if u.text is None] + [u.size for u in fixed]
                return self.counter.example(render(full, question, loader_kind(record)), sizes)

            packed = fill(units, self.length, measure, estimate=self.estimate)
            if packed.exhausted:
                self.report.skip(self.source("mmniah"), f"id {record.id}",
                                 f"{self.config.name}: the whole task file fills only {packed.num_tokens} "
                                 f"of {self.length} tokens; row skipped")
                return
            full, positions = insert_at(packed.items, needles, fractions)
            images = [self.materialise(u) for u in full if u.text is None] + [self.materialise(u) for u in fixed]
            yield make_example(
                id=f"{self.config.dataset}_{record.id}_{suffix}", dataset=self.config.dataset,
                length=self.length, num_tokens=packed.num_tokens,
                prompt=render(full, question, loader_kind(record)), images=images, question=question,
                answers=answers, metric=self.config.metric,
                meta={"source_id": record.id, "needle_positions": positions, "num_units": len(full),
                      "needles": [n.text if n.text is not None else Path(n.path).name for n in needles],
                      "needle_image_indices": [sum(1 for u in full[:p] if u.text is None) for p in positions]
                      if record.modality == "image" else [],
                      "released_depth": record.depths,
                      "filled_from": sorted({u.origin for u in packed.items} - {record.id}), "next_num_tokens": packed.next_num_tokens,
                      **answer_meta, **extra})

    def placements(self, record: NiahRecord) -> Iterator[tuple[str, list[float], dict]]:
        """(id suffix, needle insertion fractions, meta) per row."""
        k = len(record.needles)
        if record.task == "counting" or (record.task, record.modality) == ("reasoning", "text"):
            rng = random.Random(stable_seed(self.seed, self.config.dataset, record.id, "positions"))
            for p in range(NUM_PERMUTATIONS):
                fractions = sorted(rng.random() for _ in range(k))
                yield f"p{p}", fractions, {"permutation": p, "depth": fractions}
            return
        for depth in DEPTHS:
            yield f"d{depth:.1f}", [depth] * k, {"depth": depth}

    def materialise(self, unit: Unit) -> ImageRef:
        """The stored image of a unit: the source file, or its resized copy (made once)."""
        ref = self.store.ref(unit.path)
        if (ref.width, ref.height) == unit.size:
            return ref

        def produce() -> tuple[bytes, str]:
            import io

            from PIL import Image

            with Image.open(unit.path) as im:
                im = im.convert("RGB").resize(unit.size, Image.BICUBIC)
                buffer = io.BytesIO()
                im.save(buffer, "JPEG", quality=95)
            return buffer.getvalue(), "jpg"
        key = f"resize:{file_sha256(unit.path)}:{unit.size[0]}x{unit.size[1]}:bicubic:q95"
        return self.store.cached(key, produce)


class _Quiet:
    """Filler reads do not report again what the main read already reported."""

    def skip(self, file, record, reason) -> None:
        pass
