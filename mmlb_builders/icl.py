"""Many-shot in-context image classification (Stanford Cars, Food101, SUN397, iNat2021), as in
MMLongBench's ICL category.

Procedure:

* Classes: 50 classes are sampled once per dataset (per domain for iNat2021: 50 "Birds" and 50
  "Plants" species, an example stays inside one domain) with a fixed seed; a config at
  8k/16k/32k/64k/128k uses the first 5/10/20/40/50 of them, so longer configs extend shorter ones.
* Each example gets its own seeded mapping from class to an integer label 0..N-1.
* Demonstrations come in rounds: each round holds exactly one exemplar of every label, in random
  order; rounds are concatenated and the last round is cut so the example fills its budget
  (``mmlbdata.core.lengths.fill``: num_tokens <= length < next_num_tokens). A class with fewer exemplar
  images than rounds cycles through its (shuffled) images.
* The test image is a held-out image of one of the classes (the test split; for one-split
  folders a seeded held-out part), never among the exemplars.
* Exemplars are frozen in the built rows (the original loader re-sampled them at load time, so two
  runs saw different prompts).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Sequence

from mmlbdata.core.lengths import fill, length_tokens
from mmlbdata.core.schema import make_example
from mmlbdata.core.seeding import rng as seeded_rng
from mmlbdata.core.store import BadImageError
from mmlbdata.core.tokens import IMAGE_PLACEHOLDER
from mmlbdata.official import mmlongbench_prompts as prompts
from mmlbdata.sources.icl import LAYOUT_FOLDER, LAYOUT_HUB, LAYOUT_INAT, ClassPool, LabeledImage, read_icl_source

from .base import MMLONGBENCH_LENGTH_KEYS, MMLBBuilder, MMLBConfig

# The ``question`` field: the prompt's closing line without its placeholder (the test image is the
# prompt's last ``<image>``), so the field never adds an image of its own.
TEST_QUESTION = "Now classify this image:"
CLASS_COUNTS = {"8k": 5, "16k": 10, "32k": 20, "64k": 40, "128k": 50,
                # beyond the paper (the extended release): the class count stops at 128K's 50, more rounds fill
                "256k": 50, "512k": 50}
MAX_CLASSES = max(CLASS_COUNTS.values())
DATASETS = {
    "cars196": ("cars196", "Stanford Cars (196 car models)", LAYOUT_HUB + " or " + LAYOUT_FOLDER),
    "food101": ("food101", "Food-101 (101 dishes)", LAYOUT_HUB + " or " + LAYOUT_FOLDER),
    "sun397": ("sun397", "SUN397 (397 scene categories)", LAYOUT_HUB + " or " + LAYOUT_FOLDER),
    "inat2021": ("inat2021", "iNaturalist 2021 Birds and Plants species", LAYOUT_INAT),
}


def build_prompt(labels: Sequence[int]) -> str:
    """The benchmark's prompt for exemplars with these label ids (``{label}`` stays literal)."""
    context = "\n\n".join(prompts.icl_item(label) for label in labels)
    return prompts.render("icl", context, IMAGE_PLACEHOLDER)


def _configs() -> list[MMLBConfig]:
    configs = []
    for dataset, (source, description, _layout) in DATASETS.items():
        for key in MMLONGBENCH_LENGTH_KEYS:
            configs.append(MMLBConfig(
                name=f"{dataset}_{key}", dataset=dataset, length=length_tokens(key), metric="cls_acc",
                sources=(source,), options={"num_classes": CLASS_COUNTS[key], "num_test": 100},
                description=f"Many-shot ICL on {description}, {CLASS_COUNTS[key]} classes ({key} tokens)"))
    return configs


@dataclass(frozen=True)
class Shot:
    """One demonstration: an image of a class and the label id it has in this example."""

    image: LabeledImage
    label: int
    round: int


class ManyShotICL(MMLBBuilder):
    """Many-shot ICL rows at the five standard lengths."""

    DESCRIPTION = "Many-shot in-context image classification with integer labels."
    HOMEPAGE = "https://github.com/EdinburghNLP/MMLongBench"
    LICENSE = "see each source dataset"
    CITATION = ("@inproceedings{wang2025mmlongbench, title={MMLongBench: Benchmarking Long-Context "
                "Vision-Language Models Effectively and Thoroughly}, author={Wang, Zhaowei and others}, year={2025}}")
    SOURCES = {key: layout for key, (_s, _d, layout) in DATASETS.items()}
    BUILDER_CONFIGS = _configs()

    def generate(self) -> Iterator[dict]:
        source = self.source(self.config.sources[0])
        pools = read_icl_source(source, self.store, self.report, seed=self.seed)
        domains = [d for d in sorted(pools) if pools[d]]
        if not domains:
            raise ValueError(f"{source}: no class has both exemplar and test images")
        chosen = {d: self.classes(d, pools[d]) for d in domains}
        for index, (domain, test) in enumerate(self.tests(chosen, pools)):
            row = self.example(index, domain, chosen[domain], pools[domain], test)
            if row is not None:
                yield row

    # -- selection -----------------------------------------------------------------------------
    def classes(self, domain: str, pools: dict[str, ClassPool]) -> list[str]:
        """The first ``num_classes`` of a once-per-dataset seeded sample of up to 50 classes."""
        names = sorted(pools)
        sample = seeded_rng(self.seed, self.config.dataset, domain, "classes").sample(names, min(MAX_CLASSES, len(names)))
        wanted = int(self.option("num_classes", CLASS_COUNTS.get("8k")))
        if len(sample) < wanted:
            self.report.note(f"{self.config.name}: {domain or 'source'} has {len(sample)} usable classes, "
                             f"{wanted} wanted; using {len(sample)}")
        return sample[:wanted]

    def tests(self, chosen: dict[str, list[str]], pools) -> Iterator[tuple[str, LabeledImage]]:
        """``num_test`` held-out images, alternating domains, then classes (balanced)."""
        count = int(self.option("num_test", 100))
        if self.limit is not None:
            count = min(count, self.limit)
        order = {(d, c): seeded_rng(self.seed, self.config.dataset, d, c, "tests").sample(
                     pools[d][c].test, len(pools[d][c].test)) for d in chosen for c in chosen[d]}
        deepest = max(len(v) for v in order.values())
        produced, k = 0, 0
        while produced < count and any(k // len(cs) < deepest for cs in chosen.values()):
            for domain in sorted(chosen):
                classes = chosen[domain]
                candidates = order[(domain, classes[k % len(classes)])]
                if k // len(classes) < len(candidates) and produced < count:
                    produced += 1
                    yield domain, candidates[k // len(classes)]
            k += 1

    def rounds(self, rng, classes: list[str], pools: dict[str, ClassPool], mapping: dict[str, int],
               test: LabeledImage, example_id: str) -> list[Shot]:
        """Rounds of one exemplar per class, in random order within a round, until they hold more
        image tokens than the budget (so the packer always cuts inside the last round). Images
        open as they are drawn; an unreadable one is reported and dropped from its class."""
        queues = {}
        for name in classes:
            images = [im for im in pools[name].train if im.key != test.key]
            queues[name] = rng.sample(images, len(images))
        shots, total, r = [], 0, 0
        while total <= self.length:
            for name in rng.sample(classes, len(classes)):
                image = self._draw(queues[name], r)
                if image is None:
                    self.report.skip(test.key, example_id, f"class '{name}' has no readable exemplar image")
                    return []
                shots.append(Shot(image, mapping[name], r))
                total += self.counter.image(image.ref.width, image.ref.height)
            r += 1
        return shots

    def _draw(self, queue: list[LabeledImage], r: int) -> LabeledImage | None:
        while queue:
            image = queue[r % len(queue)]
            try:
                image.ref
                return image
            except BadImageError as err:
                self.report.skip(err.path, image.key, str(err))
                queue.remove(image)
        return None

    # -- one row ---------------------------------------------------------------------------------
    def example(self, index: int, domain: str, classes: list[str], pools: dict[str, ClassPool],
                test: LabeledImage) -> dict | None:
        example_id = f"{self.config.dataset}{'_' + domain.lower() if domain else ''}_{index:05d}"
        rng = seeded_rng(self.seed, self.config.dataset, self.length, example_id)
        labels = rng.sample(range(len(classes)), len(classes))
        mapping = dict(zip(classes, labels))
        try:
            test_ref = test.ref
        except BadImageError as err:
            self.report.skip(err.path, example_id, str(err))
            return None
        shots = self.rounds(rng, classes, pools, mapping, test, example_id)
        if not shots:
            return None

        def measure(selection: list[Shot]) -> int:
            prompt = build_prompt([s.label for s in selection])
            return self.counter.example(prompt, [s.image.ref for s in selection] + [test_ref])

        packed = fill(shots, self.length, measure,
                      estimate=lambda s: self.counter.image(s.image.ref.width, s.image.ref.height) + 6)
        if packed.exhausted or not packed.items:
            self.report.skip(test.key, example_id, f"{self.config.name}: the exemplars fill only "
                                                   f"{packed.num_tokens} of {self.length} tokens")
            return None
        chosen = packed.items
        answer = str(mapping[test.label])
        return make_example(
            id=example_id, dataset=self.config.dataset, length=self.length, num_tokens=packed.num_tokens,
            prompt=build_prompt([s.label for s in chosen]), images=[s.image.ref for s in chosen] + [test_ref],
            question=TEST_QUESTION, answers=[answer], metric=self.config.metric,
            meta={"domain": domain, "class_names": sorted(mapping, key=mapping.get), "mapping": mapping,
                  "test_class": test.label, "test_image": test.key,
                  "exemplar_labels": [s.label for s in chosen], "exemplar_images": [s.image.key for s in chosen],
                  "rounds": chosen[-1].round + 1,
                  "shots_per_class": {c: sum(1 for s in chosen if s.label == mapping[c]) for c in classes},
                  "next_num_tokens": packed.next_num_tokens},
        )

