"""Visual Haystack (VH-Single, VH-Multi) from COCO 2017 instances, as used by MMLongBench.

Procedure (Wu et al., Visual Haystacks; MMLongBench's standardized lengths):

* **VH-Single** - an anchor and a target category; the needle image contains the anchor; the
  answer is ``Yes`` if it also contains the target, else ``No`` (alternating, so balanced).
  Distractors contain neither. The needle is placed at depths 0, 0.2, ..., 1.0 of the image list:
  six rows per source question sharing ``meta.source_id``.
* **VH-Multi** - 2 or 3 needle images contain the anchor; the question asks whether *all* / *any*
  of them contain the target; three seeded permutations of needle positions per question.
* The context is the distractors filled to the budget (``mmlbdata.core.lengths.fill``); the prompt
  template is the benchmark's, verbatim. A source with too few distinct distractors for a length
  is reported and the question skipped: images are never silently reused.

Questions are drawn once per dataset (independent of the length), and each question's distractor
order is fixed, so the 8k haystack of a question is a prefix of its 32k haystack.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

from mmlbdata.core.lengths import DEPTHS, depth_index, fill, place_at
from mmlbdata.core.schema import make_example
from mmlbdata.core.seeding import rng as seeded_rng
from mmlbdata.core.store import BadImageError
from mmlbdata.official import mmlongbench_prompts as prompts
from mmlbdata.sources.coco import LAYOUT, CocoImage, read_instances
from mmlbdata.sources.vhs import LAYOUT as VHS_LAYOUT
from mmlbdata.sources.vhs import VhsQuestion, read_vhs, release_files

from .base import MMLONGBENCH_LENGTH_KEYS, MMLBBuilder, standard_configs

PROMPT_TEMPLATE = prompts.TEMPLATES["vh"]  # data.py load_visual_haystack, via mmlbdata.official.mmlongbench_prompts
NUM_PERMUTATIONS = 3
NEEDLE_COUNTS = (2, 3)
MAX_DRAWS = 1000  # attempts per question before giving up on a sparse source


def with_article(noun: str) -> str:
    """``a dog``, ``an elephant``."""
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


@dataclass(frozen=True)
class VHQuestion:
    source_id: str
    mode: str  # "single", "all" or "any"
    anchor: str
    target: str
    answer: str  # "Yes" / "No"
    needles: tuple[CocoImage, ...]

    @property
    def text(self) -> str:
        anchor, target = with_article(self.anchor), with_article(self.target)
        if self.mode == "single":
            return f"For the image with {anchor}, is there {target}?"
        return f"For all images with {anchor}, do {self.mode} of them contain {target}?"


def _by_category(images: Sequence[CocoImage]) -> dict[str, list[CocoImage]]:
    index: dict[str, list[CocoImage]] = {}
    for image in images:
        for name in image.categories:
            index.setdefault(name, []).append(image)
    return dict(sorted(index.items()))


def single_questions(images: Sequence[CocoImage], count: int, rng: random.Random,
                     prefix: str = "vh_single") -> list[VHQuestion]:
    """``count`` distinct VH-Single questions, answers alternating Yes / No."""
    categories = sorted(_by_category(images))
    questions, seen = [], set()
    for index in range(count):
        want_yes = index % 2 == 0
        for _ in range(MAX_DRAWS):
            needle = rng.choice(images)
            anchor = rng.choice(sorted(needle.categories))
            options = sorted(needle.categories - {anchor}) if want_yes else \
                [c for c in categories if c not in needle.categories]
            if not options:
                continue
            target = rng.choice(options)
            if (needle.key, anchor, target) in seen:
                continue
            seen.add((needle.key, anchor, target))
            questions.append(VHQuestion(f"{prefix}_{index:05d}", "single", anchor, target,
                                        "Yes" if want_yes else "No", (needle,)))
            break
    return questions


def _pick_needles(with_t: list[CocoImage], without_t: list[CocoImage], k: int, mode: str,
                  yes: bool, rng: random.Random) -> tuple[CocoImage, ...] | None:
    """``k`` anchor images whose target pattern gives the wanted answer, or None."""
    if mode == "all" and yes or mode == "any" and not yes:
        pool = with_t if yes else without_t
        return tuple(rng.sample(pool, k)) if len(pool) >= k else None
    # all/No needs one image without the target; any/Yes needs one with it; the rest is free.
    must, rest = (without_t, with_t) if mode == "all" else (with_t, without_t)
    if not must or len(must) + len(rest) < k:
        return None
    first = rng.choice(must)
    others = [img for img in must + rest if img is not first]
    return (first, *rng.sample(others, k - 1))


def multi_questions(images: Sequence[CocoImage], count: int, rng: random.Random,
                    prefix: str = "vh_multi") -> list[VHQuestion]:
    """``count`` distinct VH-Multi questions; modes alternate all/any, answers Yes/No."""
    index_by_cat = _by_category(images)
    anchors = [c for c, imgs in index_by_cat.items() if len(imgs) >= min(NEEDLE_COUNTS)]
    categories = list(index_by_cat)
    questions, seen = [], set()
    for index in range(count):
        mode = ("all", "any")[(index // 2) % 2]
        yes = index % 2 == 0
        for _ in range(MAX_DRAWS if anchors else 0):
            anchor = rng.choice(anchors)
            target = rng.choice([c for c in categories if c != anchor])
            k = rng.choice(NEEDLE_COUNTS)
            candidates = index_by_cat[anchor]
            with_t = [img for img in candidates if target in img.categories]
            without_t = [img for img in candidates if target not in img.categories]
            needles = _pick_needles(with_t, without_t, k, mode, yes, rng)
            key = (anchor, target, mode, needles and tuple(n.key for n in needles))
            if needles is None or key in seen:
                continue
            seen.add(key)
            questions.append(VHQuestion(f"{prefix}_{index:05d}", mode, anchor, target,
                                        "Yes" if yes else "No", needles))
            break
    return questions


def build_prompt(num_images: int, question: str) -> str:
    return prompts.render("vh", prompts.vh_context(num_images), question)


class VisualHaystack(MMLBBuilder):
    """VH-Single and VH-Multi haystacks of COCO images at the five standard lengths."""

    DESCRIPTION = "Visual Haystacks: find the image with the anchor object and answer Yes/No."
    HOMEPAGE = "https://visual-haystacks.github.io/"
    LICENSE = "COCO annotations CC BY 4.0; images under their Flickr licences"
    CITATION = ("@article{wu2024visual, title={Visual Haystacks: A Vision-Centric Needle-In-A-Haystack "
                "Benchmark}, author={Wu, Tsung-Han and Biamby, Giscard and others}, year={2024}}")
    SOURCES = {"coco": LAYOUT, "vhs": VHS_LAYOUT}
    BUILDER_CONFIGS = (
        standard_configs("vh_single", lengths=MMLONGBENCH_LENGTH_KEYS, metric="binary_acc", sources=("coco",), num_questions=100,
                         description="VH-Single: one needle image")
        + standard_configs("vh_multi", lengths=MMLONGBENCH_LENGTH_KEYS, metric="binary_acc", sources=("coco",), num_questions=100,
                           description="VH-Multi: 2-3 needle images, all/any questions")
    )

    def generate(self) -> Iterator[dict]:
        if "vhs" in self.sources:  # the original question files instead of generated questions
            yield from self.generate_from_release()
            return
        images = read_instances(self.source("coco"), self.store, self.report)
        if not images:
            raise ValueError(f"no usable COCO image with instances under {self.source('coco')}")
        for question in self.questions(images):
            pool = sorted((img for img in images if question.anchor not in img.categories
                           and question.target not in img.categories), key=lambda img: img.key)
            seeded_rng(self.seed, self.config.dataset, question.source_id, "distractors").shuffle(pool)
            yield from self.rows(question, pool)

    def questions(self, images: Sequence[CocoImage]) -> list[VHQuestion]:
        count = int(self.option("num_questions", 100))
        if self.limit is not None:
            count = min(count, self.limit)
        rng = seeded_rng(self.seed, self.config.dataset, "questions")
        make = single_questions if self.config.dataset == "vh_single" else multi_questions
        questions = make(images, count, rng, prefix=self.config.dataset)
        self.expected_rows = len(questions) * (len(DEPTHS) if self.config.dataset == "vh_single" else NUM_PERMUTATIONS)
        if len(questions) < count:
            self.report.note(f"{self.config.name}: the source yields only {len(questions)} of "
                             f"{count} requested questions")
        return questions

    def rows(self, question: VHQuestion, pool: list[CocoImage]) -> Iterator[dict]:
        needles = [n.ref for n in question.needles]
        text_tokens: dict[int, int] = {}

        def measure(selection: list[CocoImage]) -> int:
            n = len(selection) + len(needles)
            if n not in text_tokens:
                text_tokens[n] = self.counter.text(build_prompt(n, question.text))
            return text_tokens[n] + self.counter.images(needles) + self.counter.images(s.ref for s in selection)

        packed = fill(pool, self.length, measure,
                      estimate=lambda img: self.counter.image(img.ref.width, img.ref.height) + 1)
        if packed.exhausted:
            self.report.skip(self.source("coco"), question.source_id,
                             f"{self.config.name}: only {len(pool)} distinct distractor images contain neither "
                             f"'{question.anchor}' nor '{question.target}'; they fill {packed.num_tokens} of "
                             f"{self.length} tokens, so the question is skipped (images are never reused)")
            return
        distractors = [img.ref for img in packed.items]
        total = len(distractors) + len(needles)
        prompt = build_prompt(total, question.text)
        for suffix, positions, extra in self.placements(question, total):
            yield make_example(
                id=f"{question.source_id}_{suffix}", dataset=self.config.dataset, length=self.length,
                num_tokens=packed.num_tokens, prompt=prompt,
                images=place_at(distractors, needles, positions),
                question=question.text, answers=[question.answer], metric=self.config.metric,
                meta={"source_id": question.source_id, "needle_indices": list(positions),
                      "anchor": question.anchor, "target": question.target, "mode": question.mode,
                      "needle_images": [n.key for n in question.needles],
                      "next_num_tokens": packed.next_num_tokens, **extra},
            )

    def placements(self, question: VHQuestion, total: int) -> Iterator[tuple[str, list[int], dict]]:
        """(id suffix, needle positions, extra meta) of each row of one question."""
        if question.mode == "single":
            for depth in DEPTHS:
                yield f"d{depth:.1f}", [depth_index(depth, total)], {"depth": depth}
            return
        rng = seeded_rng(self.seed, self.config.dataset, question.source_id, "positions")
        for permutation in range(NUM_PERMUTATIONS):
            positions = sorted(rng.sample(range(total), len(question.needles)))
            yield f"p{permutation}", positions, {"permutation": permutation}

    # -- Visual Haystacks release files (source key ``vhs``) ----------------------------------------
    # With ``--source vhs=DIR`` the questions and needles come from the release's
    # ``visual_haystack_{N}.json`` (the largest N, or option ``vhs_size``) instead of being generated;
    # distractors are the question's ``neg_image`` list taken in order until the budget is filled.
    # Questions with one needle image go to vh_single, the others to vh_multi.

    def generate_from_release(self) -> Iterator[dict]:
        files = release_files(self.source("vhs"))
        size = int(self.option("vhs_size", max(files)))
        if size not in files:
            raise ValueError(f"no visual_haystack_{size}.json under {self.source('vhs')} (have {sorted(files)})")
        want = "single" if self.config.dataset == "vh_single" else "multi"
        count = 0
        for question in read_vhs(files[size], self.source("coco"), self.store, self.report):
            if question.mode != want:
                continue
            if self.limit is not None and count >= self.limit:
                return
            count += 1
            yield from self.release_rows(question)

    def release_distractors(self, question: VhsQuestion) -> list:
        """``neg_image`` in release order, checked as taken, until they surely overfill the budget."""
        refs, total = [], 0
        for path in question.distractors:
            try:
                ref = self.store.ref(path)
            except BadImageError as err:
                self.report.skip(err.path, question.source_id, f"distractor unusable: {err.reason}; left out")
                continue
            refs.append(ref)
            total += self.counter.image(ref.width, ref.height) + 1
            if total > self.length:
                break
        return refs

    def release_rows(self, question: VhsQuestion) -> Iterator[dict]:
        needles = list(question.needles)

        def measure(selection: list) -> int:
            prompt = build_prompt(len(selection) + len(needles), question.question)
            return self.counter.text(prompt) + self.counter.images(needles) + self.counter.images(selection)

        packed = fill(self.release_distractors(question), self.length, measure,
                      estimate=lambda ref: self.counter.image(ref.width, ref.height) + 1)
        if packed.exhausted:
            self.report.skip(question.file, question.source_id,
                             f"{self.config.name}: the {len(question.distractors)} neg_image distractors fill only "
                             f"{packed.num_tokens} of {self.length} tokens; question skipped")
            return
        total = len(packed.items) + len(needles)
        prompt = build_prompt(total, question.question)
        for suffix, positions, extra in self.placements(question, total):
            yield make_example(
                id=f"{question.source_id}_{suffix}", dataset=self.config.dataset, length=self.length,
                num_tokens=packed.num_tokens, prompt=prompt,
                images=place_at(packed.items, needles, positions), question=question.question,
                answers=[question.answer], metric=self.config.metric,
                meta={"source_id": question.source_id, "needle_indices": list(positions),
                      "needle_images": [f"{Path(n.path).parent.name}/{Path(n.path).stem}" for n in needles],
                      "release_file": question.file.name, "next_num_tokens": packed.next_num_tokens, **extra})
