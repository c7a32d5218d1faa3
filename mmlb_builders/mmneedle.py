"""MMNeedle (Wang et al. 2024): find the sub-image of stitched COCO haystacks that a caption describes.

Procedure (the original's scripts, read as a recipe):

* **Stitched images.** For each N in {1, 2, 4, 8} a pool of ``pool_size`` (10,000) N x N grids is
  drawn with one seeded generator per N; each grid holds N*N distinct COCO images resized to
  256 x 256, row-major (``mmlbdata.media.stitch``). Grids are stitched only when a config uses
  them, in parallel, and kept in the image store (a second config or build reuses them); each
  source's 256 x 256 cell is made once and reused by every grid that holds it (option
  ``cell_cache``, on by default).
* **Captions.** One per image: the last one listed (the original's rule; option ``caption_pick``).
* **Haystacks.** M stitched images: for M = 1 sample ``i`` uses grid ``i`` (as the original),
  otherwise M distinct grids drawn at random.
* **Samples.** The first half positives, the second half negatives (``num_samples``, 10,000).
  Positive: K distinct cells drawn uniformly, their captions in random order. Negative: K captions
  of images in no cell of the haystack.
* **Labels** in ``meta`` (0-based): ``needles`` = ``{"index", "row", "col", "file", "caption"}``
  per caption (-1 when absent) and ``cells`` = each haystack image's N*N source files. The gold
  answer is 1-based ``"index, row, col"`` per needle joined by ``"; "`` (``-1`` when absent).

Differences from the original, each documented in ``meta``:

* (M, N, K) = (1, 2, 5) has only 4 cells: K is capped at 4 (``meta.k_requested`` = 5) instead of
  the original's silent repeat of a needle.
* Grids of a haystack are drawn independently, so with M > 1 a source image can appear in two
  cells. A needle whose image appears twice would have two right answers, so positives draw their
  needles only among cells whose image appears once in the haystack (haystacks that leave fewer
  than K such cells, or fewer than K images outside for a negative, are redrawn). With the full
  COCO val2014 this changes nothing measurable; ``allow_ambiguous=True`` restores the original.
* ``mmneedle_n{N}_k{K}_{8k..128k}``: M is chosen by the unified counter so that the example fills
  the budget (``mmlbdata.core.lengths.fill``): the invariant ``num_tokens <= L < next_num_tokens`` holds.

Two options choose between the paper and the official code where they disagree (both recorded in
each config's options, so in the manifest and the card, and in every row's ``meta``):

* ``answer_form``: ``paper`` (default; paper Sec. 3 and appendix B) writes the multi-needle format
  as ``index_1, row_1, column_1; ...; index_K, row_K, column_K`` and a negative gold as ``-1`` per
  caption; ``official`` follows ``needle.py``: every needle spelled out (``index_1, row_1,
  column_1; index_2, row_2, column_2``) and the gold built as ``index+1, row+1, col+1`` from the
  sampler's -1 labels, i.e. ``0, 0, 0`` per caption of a negative sample.
* ``n1_image`` (N = 1 configs): ``cell`` (default; paper Sec. 3.2: every image resized to
  256 x 256) or ``original``: the COCO image itself, as the official N = 1 samples use it.
  Original M x N settings only (a budget config's M assumes one image size).
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Iterator, Optional, Sequence

from mmlbdata.core.lengths import LENGTH_KEYS, fill, length_tokens
from mmlbdata.core.schema import make_example
from mmlbdata.core.seeding import rng as seeded_rng
from mmlbdata.core.store import BadImageError, ImageRef, ImageStore
from mmlbdata.core.tokens import IMAGE_PLACEHOLDER
from mmlbdata.media.stitch import CELL, StitchError, recipe_key, stitch_many
from mmlbdata.sources import mmneedle_release as needle_release
from mmlbdata.sources.coco_captions import LAYOUT, CaptionedImage, read_captions

from .base import MMLBBuilder, MMLBConfig

SETTINGS = ((1, 2), (1, 4), (1, 8), (10, 1), (10, 2), (10, 4), (10, 8))
NEEDLE_COUNTS = (1, 2, 5)
GRID_SIZES = (1, 2, 4, 8)
MAX_DRAWS = 5000  # haystack redraws per sample before it is skipped (tiny sources only)
FIT_ROUNDS = 6    # rounds of (choose M, draw needles) for budget configs
ANSWER_FORMS = ("paper", "official")
N1_IMAGES = ("cell", "original")

SINGLE = ("Given {M} {images} indexed from 1 to {M}, each divided into {N}*{N} {subimages}, identify "
          "the subimage that best matches the provided caption. Respond with 'index, row, column' and "
          "nothing else. For example, '1, 2, 3' indicates the subimage in the first image, second row, "
          "and third column. If no match is found, respond only with '-1'.")
MULTI = ("Given {M} {images} indexed from 1 to {M}, each divided into {N}*{N} {subimages}, identify "
         "the subimages that best match the provided {K} captions. Respond in the format: {fmt}. Only "
         "provide this information. For example, '1, 2, 3' indicates the subimage in the first image, "
         "second row, and third column. If no subimage matches a caption, respond with '-1' for that "
         "caption.")


def instruction(m: int, n: int, captions: Sequence[str], spelled: bool = False) -> str:
    """The text after the images: the verbatim instruction and the caption line(s).

    ``spelled``: the official code's multi-needle format naming every needle instead of the
    paper's ``...`` (``answer_form=official``).
    """
    words = {"M": m, "N": n, "images": "image" if m == 1 else "images",
             "subimages": "subimage" if n * n == 1 else "subimages"}
    if len(captions) == 1:
        return SINGLE.format(**words) + f"\nCaption: {captions[0]}"
    k = len(captions)
    if spelled:
        fmt = "; ".join(f"index_{i}, row_{i}, column_{i}" for i in range(1, k + 1))
    else:
        fmt = f"index_1, row_1, column_1; ...; index_{k}, row_{k}, column_{k}"
    text = MULTI.format(K=k, fmt=fmt, **words)
    return text + "".join(f"\nCaption_{i}: {c}" for i, c in enumerate(captions, 1))


def build_prompt(m: int, n: int, captions: Sequence[str], spelled: bool = False) -> str:
    """The M stitched images, then the instruction, nothing between them: needle.py's
    ``needle_test`` sends one image item per stitched image and then the instruction as the only
    text item (one placeholder per image here)."""
    return IMAGE_PLACEHOLDER * m + instruction(m, n, captions, spelled)


def needle_answer(index: int, row: int, col: int, official: bool = False) -> str:
    """The gold of one needle from its 0-based labels: 1-based ``index, row, col``; an absent
    needle (index -1) is ``-1`` (paper) or, as the official code adds 1 to the -1 labels,
    ``0, 0, 0``. Shared by sampled and released haystacks."""
    if index < 0 and not official:
        return "-1"
    return f"{index + 1}, {row + 1}, {col + 1}"


@dataclass(frozen=True)
class Needle:
    index: int  # haystack image (0-based), -1 when absent
    row: int
    col: int
    image: CaptionedImage

    def label(self) -> dict:
        return {"index": self.index, "row": self.row, "col": self.col, "file": self.image.key,
                "caption": self.image.caption}

    def answer(self, official: bool = False) -> str:
        return needle_answer(self.index, self.row, self.col, official)


@dataclass
class Plan:
    """One sample before its grids exist: which pool grids, which needles."""

    number: int
    positive: bool
    grids: list[int]
    needles: list[Needle]


def _configs() -> list[MMLBConfig]:
    out = []
    for m, n in SETTINGS:
        for k in NEEDLE_COUNTS:
            name = f"mmneedle_m{m}_n{n}_k{k}"
            capped = min(k, m * n * n)
            note = f" (K capped at {capped}: only {m * n * n} cells)" if capped < k else ""
            options = {"m": m, "n": n, "k": k, "answer_form": "paper", **({"n1_image": "cell"} if n == 1 else {})}
            out.append(MMLBConfig(name=name, dataset=name, length=None, metric="mmneedle",
                                  sources=("coco",), options=options,
                                  description=f"MMNeedle M={m} N={n} K={k}{note}",
                                  release_key=needle_release.SOURCE_KEY))
    for n in GRID_SIZES:
        for k in NEEDLE_COUNTS:
            dataset = f"mmneedle_n{n}_k{k}"
            for key in LENGTH_KEYS:
                out.append(MMLBConfig(name=f"{dataset}_{key}", dataset=dataset, length=length_tokens(key),
                                      metric="mmneedle", sources=("coco",),
                                      options={"m": None, "n": n, "k": k, "num_samples": 1000,
                                               "answer_form": "paper"},
                                      description=f"MMNeedle N={n} K={k}, M filling {key} tokens"))
    return out


class MMNeedle(MMLBBuilder):
    """The 21 MMNeedle settings and their fixed-budget variants."""

    DESCRIPTION = "MMNeedle: locate the sub-image of stitched COCO images that matches a caption."
    HOMEPAGE = "https://github.com/Wang-ML-Lab/multimodal-needle-in-a-haystack"
    LICENSE = "COCO annotations CC BY 4.0; images under their Flickr licences"
    CITATION = ("@article{wang2024multimodal, title={Multimodal Needle in a Haystack: Benchmarking "
                "Long-Context Capability of Multimodal Large Language Models}, author={Wang, Hengyi and "
                "others}, journal={arXiv:2406.11230}, year={2024}}")
    SOURCES = {"coco": LAYOUT, needle_release.SOURCE_KEY: needle_release.LAYOUT}
    BUILDER_CONFIGS = _configs()

    # -- settings ------------------------------------------------------------------------------
    @property
    def n(self) -> int:
        return int(self.option("n"))

    @property
    def k(self) -> int:
        k = int(self.option("k"))
        m = self.option("m")
        return min(k, int(m) * self.n * self.n) if m else k

    @property
    def official_form(self) -> bool:
        """``answer_form=official``: the official code's prompt format and negative gold."""
        form = self.option("answer_form", "paper")
        if form not in ANSWER_FORMS:
            raise ValueError(f"{self.config.name}: option answer_form must be one of {ANSWER_FORMS}, not {form!r}")
        return form == "official"

    @property
    def original_n1(self) -> bool:
        """``n1_image=original``: N = 1 haystacks of the COCO images themselves, not 256 x 256 cells."""
        choice = self.option("n1_image", "cell")
        if choice not in N1_IMAGES:
            raise ValueError(f"{self.config.name}: option n1_image must be one of {N1_IMAGES}, not {choice!r}")
        if choice == "original" and (self.n != 1 or not self.option("m")):
            raise ValueError(f"{self.config.name}: n1_image=original applies to the original N=1 settings only "
                             f"(mmneedle_m*_n1_k*)")
        return choice == "original"

    def form_options(self) -> tuple[bool, bool]:
        """(``answer_form=official``, ``n1_image=original``), both checked."""
        return self.official_form, self.original_n1

    def num_samples(self) -> int:
        count = int(self.option("num_samples", 10000))
        return min(count, self.limit) if self.limit is not None else count

    # -- build ---------------------------------------------------------------------------------
    def generate(self) -> Iterator[dict]:
        if self.config.source_keys(self.sources) == (needle_release.SOURCE_KEY,):
            yield from self.generate_from_needle_release()
            return
        _, original_n1 = self.form_options()  # a bad option fails before any work is done
        images = read_captions(self.source("coco"), self.store, self.report, int(self.option("caption_pick", -1)))
        if len(images) < self.n * self.n + self.k:
            raise ValueError(f"{self.config.name}: the source has {len(images)} captioned images; "
                             f"a {self.n}x{self.n} grid and {self.k} captions need {self.n * self.n + self.k}")
        if int(self.option("k")) != self.k:
            self.report.note(f"{self.config.name}: K capped at {self.k} (a haystack has only {self.k} cells)")
        pool = GridPool(images, self.n, int(self.option("pool_size", 10000)), self.seed)
        plans = list(self.plans(pool))
        used = sorted({g for p in plans for g in p.grids})
        if original_n1:
            refs = {g: pool.images[pool.cells(g)[0]].ref for g in used}  # no resize, no re-encode
        else:
            refs = pool.materialise(used, self.store, self.report, self.option("stitch_processes"),
                                    bool(self.option("cell_cache", True)))
        for plan in plans:
            if all(g in refs for g in plan.grids):
                yield self.example(plan, pool, [refs[g] for g in plan.grids])
            else:
                self.report.skip(self.source("coco"), f"sample {plan.number}",
                                 "a grid of its haystack could not be stitched (see above)")

    def plans(self, pool: "GridPool") -> Iterator[Plan]:
        total = self.num_samples()
        m = self.option("m")
        if m == 1 and total > pool.size:
            raise ValueError(f"{self.config.name}: M=1 uses one grid per sample; pool_size "
                             f"{pool.size} < num_samples {total}")
        rng = seeded_rng(self.seed, self.config.dataset, "samples")
        for number in range(total):
            positive = number < total / 2
            sample_rng = random.Random(rng.getrandbits(64))
            plan = (self.fixed_plan(pool, number, positive, sample_rng) if m
                    else self.budget_plan(pool, number, positive, sample_rng))
            if plan is not None:
                yield plan

    def fixed_plan(self, pool: "GridPool", number: int, positive: bool, rng: random.Random) -> Optional[Plan]:
        m = int(self.option("m"))
        for _ in range(MAX_DRAWS):
            grids = [number] if m == 1 else rng.sample(range(pool.size), m)
            needles = self.draw_needles(pool, grids, positive, rng)
            if needles is not None:
                return Plan(number, positive, grids, needles)
            if m == 1:  # the haystack is fixed: redrawing cannot help
                break
        self.report.skip(self.source("coco"), f"sample {number}",
                         f"{self.config.name}: no haystack of {m} grids leaves {self.k} "
                         f"{'unambiguous cells' if positive else 'images outside it'} "
                         f"(source too small for this setting)")
        return None

    def budget_plan(self, pool: "GridPool", number: int, positive: bool, rng: random.Random) -> Optional[Plan]:
        """Choose M so that the example fills the budget, then needles from those M grids.

        The captions change the text length, so M and the needles are fixed together: fill with
        the current captions, redraw needles from the kept grids, repeat until stable.
        """
        per_image = self.counter.image(CELL * self.n, CELL * self.n)
        order = rng.sample(range(pool.size), min(pool.size, self.length // per_image + 2))
        captions: list[str] = []
        needle_seed = rng.getrandbits(64)  # same grids -> same needles, so the rounds converge
        for _ in range(FIT_ROUNDS):
            packed = fill(order, self.length, self.measure(captions), estimate=lambda g: per_image)
            grids = list(packed.items)
            if not grids:
                break
            needles = self.draw_needles(pool, grids, positive, random.Random(needle_seed))
            if needles is None:
                continue
            new = [nd.image.caption for nd in needles]
            if new == captions and packed.next_num_tokens is not None:
                return Plan(number, positive, grids, needles)
            captions = new
        self.report.skip(self.source("coco"), f"sample {number}",
                         f"{self.config.name}: could not fit a haystack with its needles to {self.length} "
                         f"tokens (pool of {pool.size} grids too small, or needles unavailable)")
        return None

    def measure(self, captions: Sequence[str]):
        per_image = self.counter.image(CELL * self.n, CELL * self.n)
        captions = list(captions) or ["-"] * self.k
        memo: dict[int, int] = {}

        def tokens(selection: list) -> int:
            m = len(selection)
            if m not in memo:
                memo[m] = self.counter.text(build_prompt(max(m, 1), self.n, captions, self.official_form))
            return memo[m] + m * per_image
        return tokens

    def draw_needles(self, pool: "GridPool", grids: list[int], positive: bool,
                     rng: random.Random) -> Optional[list[Needle]]:
        """K needles for this haystack, or None when it cannot carry them (redraw it)."""
        cells = [(i, c, img) for i, g in enumerate(grids) for c, img in enumerate(pool.cells(g))]
        uses: dict[int, int] = {}
        for _, _, img in cells:
            uses[img] = uses.get(img, 0) + 1
        n, k = self.n, self.k
        if positive:
            allowed = cells if self.option("allow_ambiguous", False) else [c for c in cells if uses[c[2]] == 1]
            if len(allowed) < k:
                return None
            chosen = rng.sample(allowed, k)  # a uniform draw, already in random order
            return [Needle(i, *divmod(c, n), pool.images[img]) for i, c, img in chosen]
        outside = [j for j in range(len(pool.images)) if j not in uses]
        if len(outside) < k:
            return None
        return [Needle(-1, -1, -1, pool.images[j]) for j in rng.sample(outside, k)]

    def example(self, plan: Plan, pool: "GridPool", refs: list[ImageRef]) -> dict:
        m, n = len(plan.grids), self.n
        captions = [nd.image.caption for nd in plan.needles]
        official = self.official_form
        prompt = build_prompt(m, n, captions, official)
        num_tokens = self.counter.example(prompt, refs)
        meta = {"m": m, "n": n, "k": self.k, "k_requested": int(self.option("k")),
                "answer_form": "official" if official else "paper",
                **({"n1_image": "original" if self.original_n1 else "cell"} if n == 1 else {}),
                "positive": plan.positive, "sample": plan.number, "grids": plan.grids,
                "needles": [nd.label() for nd in plan.needles],
                "cells": [[pool.images[img].key for img in pool.cells(g)] for g in plan.grids]}
        if self.length:
            meta["next_num_tokens"] = num_tokens + self.counter.image(CELL * n, CELL * n) + \
                self.counter.text(build_prompt(m + 1, n, captions, official)) - self.counter.text(prompt)
        return make_example(
            id=f"{self.config.name}_{plan.number:05d}", dataset=self.config.dataset,
            length=self.length or 0, num_tokens=num_tokens, prompt=prompt, images=refs,
            question=instruction(m, n, captions, official),
            answers=["; ".join(nd.answer(official) for nd in plan.needles)],
            metric=self.config.metric, meta=meta)


    # -- the released haystacks (source ``mmneedle_release``) -------------------------------------
    def generate_from_needle_release(self) -> Iterator[dict]:
        """The released samples of this setting, in release order, with this family's prompt."""
        root = self.source(needle_release.SOURCE_KEY)
        m, k = int(self.option("m")), int(self.option("k"))
        built = 0
        for sample in needle_release.read_samples(root, m, self.n, k, self.report):
            if self.limit is not None and built >= self.limit:  # rows built, not file positions
                break  # (not return: the manifest below is still written)
            try:
                refs = [self.store.ref_inside(root, p, what="haystack image") for p in sample.images]
            except (BadImageError, OSError) as err:
                self.report.skip(needle_release.metadata_path(root, m, self.n, k), f"entry {sample.number}",
                                 f"haystack image unusable, sample skipped: {err}")
                continue
            built += 1
            yield self.released_example(sample, refs)
        self.manifest_extra.update(provenance="official release",
                                   release_file=needle_release.metadata_path(root, m, self.n, k).relative_to(root).as_posix())

    def released_example(self, sample: "needle_release.ReleasedSample", refs: list[ImageRef]) -> dict:
        captions = [nd.caption for nd in sample.needles]
        official = self.official_form
        prompt = build_prompt(len(refs), self.n, captions, official)
        answers = [needle_answer(nd.index, nd.row, nd.col, official) for nd in sample.needles]
        meta = {"m": len(refs), "n": self.n, "k": len(sample.needles),
                "answer_form": "official" if official else "paper", "positive": any(nd.index >= 0 for nd in
                sample.needles), "sample": sample.number, "official_id": sample.sample_id,
                "provenance": "official release", "haystack_images": list(sample.images),
                "needles": [{"index": nd.index, "row": nd.row, "col": nd.col, "file": nd.target,
                             "caption": nd.caption} for nd in sample.needles]}
        return make_example(
            id=f"{self.config.name}_{sample.number:05d}", dataset=self.config.dataset, length=0,
            num_tokens=self.counter.example(prompt, refs), prompt=prompt, images=refs,
            question=instruction(len(refs), self.n, captions, official), answers=["; ".join(answers)],
            metric=self.config.metric, meta=meta)


class GridPool:
    """The ``size`` N x N grids of one N: cell lists drawn by one seeded generator per N.

    The draws are cheap and made up front; the pixels are made only for grids in use.
    """

    def __init__(self, images: list[CaptionedImage], n: int, size: int, seed: int):
        self.images, self.n, self.size = images, n, size
        rng = seeded_rng(seed, "mmneedle", "grids", n)
        index = range(len(images))
        self._cells = [tuple(rng.sample(index, n * n)) for _ in range(size)]

    def cells(self, grid: int) -> tuple[int, ...]:
        """Image indices of grid ``grid``, row-major."""
        return self._cells[grid]

    def files(self, grid: int) -> list[str]:
        return [self.images[i].ref.path for i in self._cells[grid]]

    def materialise(self, grids: list[int], store: ImageStore, report, processes=None,
                    cell_cache: bool = True) -> dict[int, ImageRef]:
        """Stitched images of ``grids`` (from the store when already made, else stitched in parallel).

        With ``cell_cache`` each source image is decoded and resized once, its cell kept in the
        store for every later grid (``mmlbdata.media.stitch.CellCache``).
        """
        refs: dict[int, ImageRef] = {}
        missing = []
        key = lambda g: recipe_key(self.files(g), self.n, cached_cells=cell_cache)
        for g in grids:
            ref = store.lookup(key(g))
            if ref is None:
                missing.append(g)
            else:
                refs[g] = ref
        made = stitch_many((self.files(g) for g in missing), self.n, processes=processes,
                           cache_root=store.root if cell_cache else None)
        for g, data in zip(missing, made):
            if isinstance(data, StitchError):
                report.skip(data.args[0].split(": ")[0], f"grid {g} (N={self.n})", str(data))
                continue
            refs[g] = store.cached(key(g), lambda data=data: (data, "jpg"))
        return refs
