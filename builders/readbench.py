"""ReadBench: text benchmarks whose long part is shown as A4 page images (Clavie & Brand, 2025).

Procedure of the original release, as its code does it:

* **MMLU-Pro, MMLU-Redux 2.0** - the answer options become one image ("A. ..." one per line);
  question, category and instructions stay text. 35 questions per category / subject, drawn with
  ``random.Random(42)`` (a fresh generator per group, so a group's draw does not depend on the
  others; ``selection=official`` replays ``downsampler.py``'s one generator over all groups).
* **GPQA-Diamond** - all 198 questions; the four options are shuffled with a seed derived from a
  SHA-256 of the record id (never Python's ``hash()``), then rendered like MMLU's.
* **BABILong** qa1-qa10 at 0k..8k - the ``input`` context is rendered; 35 samples per
  (length, task).
* **LongBench** ``2wikimqa_e``, ``hotpotqa_e``, ``triviaqa_e``, ``narrativeqa`` - the ``context`` is
  rendered; contexts binned by word count 512-1024-2048-4096-8192 (shorter and longer dropped),
  35 per (subset, bin).

Pages: Helvetica 12 pt on A4 at 92.9 PPI (``ppi`` option; configs ``*_150ppi``; ``layout=official``
for ``data_prep.py``'s own 15 px / 21 px-line layout), rendered by
``mmlbdata.media.pages``; pages are cropped as ReadBench's renderer crops them (the last page to
its text in height, every page to margin + widest line + 4 margins in width, so options images
come out narrow and prose pages stay A4; ``crop_width=false`` keeps the full width). Prompts are the benchmark's multimodal templates, split where the
context was, so the ``<image>`` placeholders stand exactly where the original put the images.
Prompt sources, checked template by template (list in the ReadBench card). MMLU-Pro/Redux and
GPQA: ReadBench's ``run_eval.py`` ``mmlu_mm`` / ``gpqa_mm`` (head, option images, tail), the
category filled in as the release names it (``college_mathematics``). LongBench: ReadBench's
``eval_config/dataset2prompt.json`` (LongBench's own templates, typos included), verbatim.
BABILong: ``run_eval.py`` hands it to ``babilong_prompts.build_prompt`` (multimodal mode): the
instruction rewritten by its ``_mmify_instruction`` ("I give you context" / "I will give you
context" -> "I will give you images with text"), the pages, the ``<question>`` block and the
post-prompt, no examples; per-task wording its ``DEFAULT_PROMPTS`` (readbench @b6546cb). CoT as ReadBench's ``COT_DEFAULT`` (on for the multiple-choice sets, off for
BABILong and LongBench).

Beyond the original (``readbench_std_*``): BABILong and LongBench contexts rendered and packed to
the standard 8k..128k budgets with the unified counter, pages being the units:

* BABILong: the context of the same nominal length is rendered, and pages are dropped evenly from
  both ends (``truncate_even``) while every page holding a bAbI fact is kept. Facts are the
  sentences of the sample's 0k twin (same task, same row: BABILong builds every length from the
  same bAbI samples; a twin whose question or target differ is reported and skipped).
* LongBench: the middle of the context is dropped (LongBench's own truncation keeps the head and
  the tail): pages are offered to ``fill`` alternately from the start and the end. A context too
  short to reach the budget is not padded with other samples' text; it is skipped and counted.
"""
from __future__ import annotations

import random
import re
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Iterable, Iterator, Optional, Sequence

from mmlbdata.lengths import LENGTH_KEYS, BudgetError, Packed, fill, length_tokens, truncate_even
from mmlbdata.media.pages import (DEFAULT_PPI, PageSettings, TextLayout, layout_text, official_settings,
                                  render_text_pages)
from mmlbdata.report import BuildReport
from mmlbdata.schema import make_example
from mmlbdata.seeding import stable_seed
from mmlbdata.sources import readbench as src
from mmlbdata.tokens import IMAGE_PLACEHOLDER

from .base import MMLBBuilder, MMLBConfig

SAMPLE_SEED = 42
PER_GROUP = 35
PPI_VARIANTS = (150,)
ORIGINAL_BABILONG_LENGTHS = ("0k", "1k", "2k", "4k", "8k")
LONGBENCH_BINS = (512, 1024, 2048, 4096, 8192)
METRICS = {"mc": "readbench_mc", "babilong": "babilong", "longbench": "longbench_f1"}

# -- prompts ----------------------------------------------------------------------------------------

MMLU_HEAD = ("The following are multiple-choice questions about {category}. The possible answers are "
             "listed in the attached image.\n\nQuestion: {question}\nOptions:\n")
MMLU_TAIL_COT = ('Think step by step and then output the answer in the format "The answer is (X)" at the '
                 'end, where X is the letter associated with the correct answer.')
GPQA_HEAD = "What is the correct answer to this question: {question}\n\nOptions:"
GPQA_TAIL_COT = "Your answer must end with Answer: (LETTER). Let's think step by step: "

# BABILong as ReadBench sends it (``babilong_prompts.build_prompt``, multimodal mode, readbench
# @b6546cb lines 233-239): three message parts, the task instruction rewritten for page images,
# the page images, then the question block and the post-prompt; no in-context examples. The parts
# are joined with nothing in between, so splitting the prompt at ``<image>`` gives them back.
BABILONG_QUESTION = "<question>\n{question}\n</question>\n{post_prompt}"
# ReadBench's ``_mmify_instruction`` (lines 208-210): the opening "I give you context" or "I will
# give you context" becomes "I will give you images with text" (qa2 and qa3 open with "I give"),
# then " context " / " context." anywhere else.
BABILONG_OPENING = (re.compile(r"\b[Ii] (give|will give) you context"), "I will give you images with text")
BABILONG_CONTEXT_WORDS = ((" context ", " images with text "), (" context.", " images with text."))

# Per-task instruction and post-prompt: ReadBench's ``babilong_prompts.py`` ``DEFAULT_PROMPTS``
# (readbench @b6546cb lines 98-193), typos such as qa2's "question.You" kept.
BABILONG_PROMPTS: dict[str, dict[str, str]] = {
    "qa1": {
        "instruction": "I will give you context with the facts about positions of different persons hidden in some "
        "random text and a question. You need to answer the question based only on the information from the "
        "facts. If a person was in different locations, use the latest location to answer the question.",
        "post_prompt": "Always return your answer in the following format: The most recent location of \u2019person\u2019 "
        "is \u2019location\u2019. Do not write anything else after that.",
    },
    "qa2": {
        "instruction": "I give you context with the facts about locations and actions of different persons hidden in "
        "some random text and a question.You need to answer the question based only on the information from the "
        "facts.\nIf a person got an item in the first location and travelled to the second location the item is "
        "also in the second location. If a person dropped an item in the first location and moved to the second "
        "location the item remains in the first location.",
        "post_prompt": "Always return your answer in the following format: The \u2019item\u2019 is in \u2019location\u2019. "
        "Do not write anything else after that.",
    },
    "qa3": {
        "instruction": "I give you context with the facts about locations and actions of different persons hidden in "
        "some random text and a question. You need to answer the question based only on the information from the "
        "facts.\nIf a person got an item in the first location and travelled to the second location the item is "
        "also in the second location. If a person dropped an item in the first location and moved to the second "
        "location the item remains in the first location.",
        "post_prompt": "Always return your answer in the following format: Before the $location_1$ the $item$ was in "
        "the $location_2$. Do not write anything else after that.",
    },
    "qa4": {
        "instruction": "I will give you context with the facts about different people, their location and actions, "
        "hidden in some random text and a question. You need to answer the question based only on the information "
        "from the facts.",
        "post_prompt": "Your answer should contain only one word - location. Do not write anything else after that.",
    },
    "qa5": {
        "instruction": "I will give you context with the facts about locations and their relations hidden in some "
        "random text and a question. You need to answer the question based only on the information from the facts.",
        "post_prompt": "Your answer should contain only one word. Do not write anything else after that. Do not "
        "explain your answer.",
    },
    "qa6": {
        "instruction": "I will give you context with the facts about people and their locations hidden in some random "
        "text and a question. You need to answer the question based only on the information from the facts. If a "
        "person was in different locations, use the latest location the person was in to answer the question.",
        "post_prompt": "Your answer should contain only one word - $yes$ or $no$. Do not write anything else after "
        "that. Do not explain your answer.",
    },
    "qa7": {
        "instruction": "I will give you context with the facts about people and objects they carry, hidden in some "
        "random text and a question. You need to answer the question based only on the information from the facts.",
        "post_prompt": "Your answer should contain only one word - none or $number_of_objects$. Do not write "
        "anything else after that. Do not explain your answer.",
    },
    "qa8": {
        "instruction": "I will give you context with the facts about people and objects they carry, hidden in some "
        "random text and a question. You need to answer the question based only on the information from the facts.",
        "post_prompt": "Your answer should contain only one or two words: $nothing$ or $object$ or $object_1$, "
        "$object_2$. Do not write anything else. Do not explain your answer.",
    },
    "qa9": {
        "instruction": "I will give you context with the facts about people and their locations hidden in some random "
        "text and a question. You need to answer the question based only on the information from the facts. If a "
        "person was in different locations, use the latest location the person was in to answer the question.",
        "post_prompt": "Your answer should contain only one word - $yes$ or $no$. Do not write anything else. Do not "
        "explain your answer.",
    },
    "qa10": {
        "instruction": "I will give you context with the facts about people and their locations hidden in some random "
        "text and a question. You need to answer the question based only on the information from the facts. If a "
        "person was in different locations, use the latest location the person was in to answer the question.",
        "post_prompt": "Your answer should contain only one word - $yes$ or $no$ or $maybe$. Do not write anything "
        "else. Do not explain your answer.",
    },
}

LONGBENCH_TEMPLATES = {
    "narrativeqa": "You are given a story, which can be either a novel or a movie script, and a question. Answer the "
    "question asconcisely as you can, using a single phrase if possible. Do not provide any explanation.\n\n"
    "Story: {context}\n\nNow, answer the question based on the story asconcisely as you can, using a single phrase "
    "if possible. Do not provide any explanation.\n\nQuestion: {input}\n\nAnswer:",
    "hotpotqa": "Answer the question based on the given passages. Only give me the answer and do not output any other "
    "words.\n\nThe following are given passages.\n{context}\n\nAnswer the question based on the given passages. "
    "Only give me the answer and do not output any other words.\n\nQuestion: {input}\nAnswer:",
    "2wikimqa": "Answer the question based on the given passages. Only give me the answer and do not output any other "
    "words.\n\nThe following are given passages.\n{context}\n\nAnswer the question based on the given passages. "
    "Only give me the answer and do not output any other words.\n\nQuestion: {input}\nAnswer:",
    "triviaqa": "Answer the question based on the given passage. Only give me the answer and do not output any other "
    "words. The following are some examples.\n\n{context}\n\n{input}",
}


def split_template(template: str, **fields: str) -> tuple[str, str]:
    """The text before and after ``{context}``, other fields filled in (braces in values kept)."""
    before, after = template.split("{context}")
    fill_in = lambda part: re.sub(r"\{(\w+)\}", lambda m: fields[m.group(1)], part)  # noqa: E731
    return fill_in(before), fill_in(after)


def with_pages(before: str, num_pages: int, after: str) -> str:
    """The prompt with one ``<image>`` per page where the context was (no separator added)."""
    return before + IMAGE_PLACEHOLDER * num_pages + after


def babilong_mm_instruction(instruction: str) -> str:
    """The instruction as ReadBench words it when the context comes as page images."""
    pattern, opening = BABILONG_OPENING
    instruction = pattern.sub(opening, instruction)
    for word, images in BABILONG_CONTEXT_WORDS:
        instruction = instruction.replace(word, images)
    return instruction


def babilong_prompt_parts(task: str, question: str) -> tuple[str, str]:
    """(text before the pages, text after them): ReadBench's BABILong message parts."""
    prompts = BABILONG_PROMPTS[task]
    after = BABILONG_QUESTION.format(question=question, post_prompt=prompts["post_prompt"])
    return babilong_mm_instruction(prompts["instruction"]), after


def longbench_prompt_parts(subset: str, question: str) -> tuple[str, str]:
    base = subset[:-2] if subset.endswith("_e") else subset
    return split_template(LONGBENCH_TEMPLATES[base], input=question)


def mc_prompt_parts(record: src.MCRecord) -> tuple[str, str]:
    if record.source == "gpqa":
        return GPQA_HEAD.format(question=record.question), GPQA_TAIL_COT
    # the category as the release names it (MMLU-Redux: the subject folder, ``college_mathematics``),
    # as ReadBench's code fills it in
    return MMLU_HEAD.format(category=record.category, question=record.question), MMLU_TAIL_COT


def options_text(options: Sequence[str]) -> str:
    """The text of the options image: "A. ..." one per line."""
    return "\n".join(f"{src.LETTERS[i]}. {option}" for i, option in enumerate(options))


# -- sampling ---------------------------------------------------------------------------------------

def sample_per_group(items: Iterable[Any], key, k: int = PER_GROUP, seed: int = SAMPLE_SEED) -> list[Any]:
    """``k`` items per group (sorted group names), each drawn with a fresh ``random.Random(seed)``.

    Within a group the draw keeps the sample's order of ``random.sample`` (the original's); a
    group smaller than ``k`` is taken whole, in source order.
    """
    groups: dict[str, list[Any]] = defaultdict(list)
    for item in items:
        groups[key(item)].append(item)
    out = []
    for name in sorted(groups):
        members = groups[name]
        out.extend(random.Random(seed).sample(members, k) if len(members) > k else members)
    return out


# ReadBench's downsampler.py (standard split): the groups of every dataset, keyed as it keys them,
# are drawn in sorted key order from ONE ``random.Random(42)``; LongBench bins outside 512..8191 and
# BABILong above 8k are filtered out first, multifieldqa_en_e is dropped only after its draws.
OFFICIAL_LONGBENCH_SUBSETS = ("2wikimqa_e", "hotpotqa_e", "multifieldqa_en_e", "narrativeqa", "passage_count_e",
                              "triviaqa_e")
LAST = "\uffff"  # sorts after every group name: (family, LAST) bounds a whole family's keys


def official_draw(group_sizes: dict[tuple, int], cap: int = PER_GROUP, seed: int = SAMPLE_SEED) -> dict[tuple, list[int]]:
    """Positions chosen in each group as downsampler.py chooses them.

    One generator for all groups, visited in sorted key order; a group of at most ``cap`` is taken
    whole without a draw, GPQA always whole; otherwise ``sample(group, cap)``, whose choice depends on
    the group's length only, so sampling the positions gives the same members in the same order.
    """
    rng = random.Random(seed)
    picks = {}
    for key in sorted(group_sizes):
        size = group_sizes[key]
        whole = key[0] == "gpqa" or size <= cap
        picks[key] = list(range(size)) if whole else rng.sample(range(size), cap)
    return picks


def shuffle_gpqa(record: src.MCRecord) -> tuple[tuple[str, ...], str, list[int]]:
    """Options shuffled with a seed from a stable hash of the record id; the new answer letter."""
    order = list(range(len(record.options)))
    random.Random(stable_seed("gpqa", record.extra.get("record_id", record.id))).shuffle(order)
    options = tuple(record.options[i] for i in order)
    return options, src.LETTERS[order.index(0)], order


def longbench_bin(words: int) -> Optional[str]:
    """``"1024-2048"`` for 1500 words; None outside 512..8191."""
    for low, high in zip(LONGBENCH_BINS, LONGBENCH_BINS[1:]):
        if low <= words < high:
            return f"{low}-{high}"
    return None


# -- BABILong facts ---------------------------------------------------------------------------------

def fact_sentences(zero_k_input: str) -> list[str]:
    """The bAbI facts of a sample: the sentences of its 0k (noise-free) input."""
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", zero_k_input) if s.strip()]


def fact_word_indices(context: str, facts: Sequence[str]) -> Optional[list[int]]:
    """Word index in ``context`` where each fact starts (in order), or None if one is absent."""
    starts, position = [], 0
    for fact in facts:
        found = context.find(fact, position)
        if found < 0:
            return None
        starts.append(len(context[:found].split()))
        position = found + len(fact)
    return starts


def pages_of_words(layout: TextLayout, word_indices: Iterable[int]) -> list[int]:
    """Page index holding each word index (by the layout's per-page word counts)."""
    bounds, total = [], 0
    for count in layout.words_per_page():
        total += count
        bounds.append(total)
    import bisect

    return sorted({min(bisect.bisect_right(bounds, w), len(bounds) - 1) for w in word_indices})


def middle_out_order(n: int) -> list[int]:
    """Page indices alternately from the start and the end: 0, n-1, 1, n-2, ..."""
    order, lo, hi = [], 0, n - 1
    while lo <= hi:
        order.append(lo)
        if hi != lo:
            order.append(hi)
        lo, hi = lo + 1, hi - 1
    return order


# -- configs ----------------------------------------------------------------------------------------

def _ppi_suffix(ppi: float) -> str:
    return "" if ppi == DEFAULT_PPI else f"_{int(ppi) if float(ppi).is_integer() else ppi}ppi"


def _config(name: str, dataset: str, metric: str, sources: Sequence[str], length: Optional[int] = None,
            **options: Any) -> MMLBConfig:
    return MMLBConfig(name=name, dataset=dataset, length=length, metric=metric, sources=sources,
                      options=options, description=f"ReadBench {name}")


def original_configs(ppi: float = DEFAULT_PPI) -> list[MMLBConfig]:
    s = _ppi_suffix(ppi)
    configs = [_config(f"readbench_{key}{s}", f"readbench_{key}", METRICS["mc"], (key,), kind="mc", source=key,
                       ppi=ppi) for key in ("mmlu_pro", "mmlu_redux", "gpqa")]
    configs += [_config(f"readbench_babilong_{task}_{length}{s}", "readbench_babilong", METRICS["babilong"],
                        ("babilong",), kind="babilong", task=task, source_length=length, ppi=ppi)
                for task in src.BABILONG_TASKS for length in ORIGINAL_BABILONG_LENGTHS]
    configs += [_config(f"readbench_longbench_{subset}{s}", "readbench_longbench", METRICS["longbench"],
                        ("longbench",), kind="longbench", subset=subset, ppi=ppi)
                for subset in src.LONGBENCH_SUBSETS]
    return configs


def standardized_configs() -> list[MMLBConfig]:
    configs = [_config(f"readbench_std_babilong_{task}_{key}", "readbench_std_babilong", METRICS["babilong"],
                       ("babilong",), length=length_tokens(key), kind="std_babilong", task=task,
                       source_length=key, ppi=DEFAULT_PPI)
               for task in src.BABILONG_TASKS for key in LENGTH_KEYS]
    configs += [_config(f"readbench_std_longbench_{subset}_{key}", "readbench_std_longbench",
                        METRICS["longbench"], ("longbench",), length=length_tokens(key), kind="std_longbench",
                        subset=subset, ppi=DEFAULT_PPI)
                for subset in src.LONGBENCH_SUBSETS for key in LENGTH_KEYS]
    return configs


class ReadBench(MMLBBuilder):
    """ReadBench's five sources with contexts as page images, plus standardized-length variants."""

    DESCRIPTION = ("ReadBench: text benchmarks whose context is shown as A4 page images (Helvetica 12 pt, "
                   "92.9 PPI) while instructions and questions stay text.")
    HOMEPAGE = "https://github.com/answerdotai/ReadBench"
    LICENSE = "per source: MMLU-Pro MIT, MMLU-Redux CC BY 4.0, GPQA CC BY 4.0, BABILong Apache-2.0, LongBench MIT"
    CITATION = ("@article{clavie2025readbench, title={ReadBench: Measuring the Dense Text Visual Reading Ability "
                "of Vision-Language Models}, author={Clavi\u00e9, Benjamin and Brand, Florian}, "
                "journal={arXiv preprint arXiv:2505.19091}, year={2025}}")
    SOURCES = dict(src.LAYOUTS)
    BUILDER_CONFIGS = original_configs() + [c for p in PPI_VARIANTS for c in original_configs(p)] + \
        standardized_configs()

    # -- plumbing ---------------------------------------------------------------------------------
    def source_root(self, key: str) -> Optional[Path]:
        """The local folder of ``key``, or None to read the Hub (a source may be omitted)."""
        return self.source(key) if key in self.sources else None

    @property
    def settings(self) -> PageSettings:
        """Page settings; ``crop_width=false`` keeps every page at the full A4 width.

        ``layout=official`` draws pages as ReadBench's ``data_prep.py`` does (15 px font, 21 px per
        line, 49 lines a page at 92.9 PPI); the default ``layout=library`` keeps this library's
        12 pt Helvetica at 1.2 leading (55 lines a page), so earlier builds stay reproducible.
        """
        ppi, crop_width = float(self.option("ppi", DEFAULT_PPI)), bool(self.option("crop_width", True))
        layout = self.option("layout", "library")
        if layout == "official":
            return official_settings(ppi, crop_width=crop_width)
        if layout != "library":
            raise ValueError(f"readbench: --option layout={layout!r} is not one of 'library', 'official'")
        return PageSettings(ppi=ppi, crop_width=crop_width)

    def render(self, text: str, layout: Optional[TextLayout] = None, which: Optional[Sequence[int]] = None,
               where: str = "") -> list:
        def on_replaced(replaced: dict[str, int]) -> None:
            tally = self.__dict__.setdefault("_replaced", {"count": 0, "first": [], "chars": Counter()})
            tally["count"] += 1
            tally["first"] = (tally["first"] + [where])[:5]  # bounded memory on dirty sources
            tally["chars"].update(replaced)

        return render_text_pages(self.store, text, settings=self.settings, layout=layout, which=which,
                                 on_replaced=on_replaced)

    def _capped(self, rows: Iterable[dict]) -> Iterator[dict]:
        for count, row in enumerate(rows):
            if self.limit is not None and count >= self.limit:
                return
            yield row

    def generate(self) -> Iterator[dict]:
        kind = self.option("kind")
        makers = {"mc": self.generate_mc, "babilong": self.generate_babilong, "longbench": self.generate_longbench,
                  "std_babilong": self.generate_std_babilong, "std_longbench": self.generate_std_longbench}
        try:
            yield from self._capped(makers[kind]())
        finally:
            self.report_replaced()

    def report_replaced(self) -> None:
        """One note for the whole build: which records had characters no font draws (shown as \u00a4)."""
        tally = self.__dict__.pop("_replaced", None)
        if not tally:
            return
        chars = tally["chars"]
        shown = ", ".join(f"U+{ord(c):04X} x{n}" for c, n in chars.most_common(8))
        self.report.note(f"{self.config.name}: {tally['count']} record(s) have {sum(chars.values())} character(s) "
                         f"no font draws, shown as \u00a4 ({shown}); first: {', '.join(tally['first'])}")

    def example(self, *, id: str, before: str, pages: list, after: str, question: str, answers: Sequence[str],
                meta: dict, context: str, num_tokens: Optional[int] = None) -> dict:
        """One row; ``meta.context`` keeps the rendered text so a text-only run can put it back
        where the ``<image>`` run stands (ReadBench compares the two)."""
        prompt = with_pages(before, len(pages), after)
        if num_tokens is None:
            num_tokens = self.counter.example(prompt, pages)
        meta = {"ppi": self.settings.ppi, "num_pages": len(pages), "context": context, **meta}
        return make_example(id=id, dataset=self.config.dataset, length=self.length or 0, num_tokens=num_tokens,
                            prompt=prompt, images=pages, question=question, answers=answers,
                            metric=self.config.metric, meta=meta)

    # -- selection ----------------------------------------------------------------------------------
    @property
    def official_selection(self) -> bool:
        """``selection=official``: downsampler.py's one shared generator; ``per_group`` (default) a fresh
        ``Random(seed)`` per group, so one group's questions do not depend on the others'."""
        selection = self.option("selection", "per_group")
        if selection not in ("per_group", "official"):
            raise ValueError(f"readbench: --option selection={selection!r} is not one of 'per_group', 'official'")
        return selection == "official"

    def official_groups(self, upto: tuple, unit: tuple = (), held: Optional[dict[tuple, int]] = None
                        ) -> Iterator[tuple[tuple, int]]:
        """(key, size) of downsampler.py's groups in sorted key order, read until ``upto`` is passed.

        Its keys: (babilong, length, task), (gpqa, ...) never drawn, (longbench, subset, bin),
        (mmlu_pro, category), (mmlu_redux, subject). Sources are read lazily, a family at a time.
        The groups of ``unit`` (the source this config reads: ``(family,)``, ``("babilong", length,
        task)`` or ``("longbench", subset)``) are not read again: their sizes are ``held``.
        Counting reads report into a throwaway report: their bad lines are the other configs' to report.
        """
        held = held or {}
        families = {"babilong": self._babilong_group_sizes, "longbench": self._longbench_group_sizes,
                    "mmlu_pro": lambda upto, unit, held: self._mc_group_sizes("mmlu_pro", unit, held),
                    "mmlu_redux": lambda upto, unit, held: self._mc_group_sizes("mmlu_redux", unit, held)}
        for family in sorted(families):
            if (family,) > upto:
                return
            for key, size in families[family](upto, unit, held):
                if key > upto:
                    return
                yield key, size

    def _needed(self, reader, what: str):
        try:
            return reader()
        except FileNotFoundError as err:
            raise FileNotFoundError(f"{self.config.name}: selection=official needs the size of every group "
                                    f"downsampler.py draws before this one, {what} included: {err}") from err

    def _babilong_group_sizes(self, upto: tuple, unit: tuple, held: dict[tuple, int]) -> Iterator[tuple[tuple, int]]:
        for length, task in sorted((length, task) for length in ORIGINAL_BABILONG_LENGTHS for task in src.BABILONG_TASKS):
            key = ("babilong", length, task)
            if key > upto:  # checked before reading: later files are not needed
                return
            if key == unit:
                size = held.get(key, 0)
            else:
                size = self._needed(lambda: sum(1 for _ in src.read_babilong(self.source_root("babilong"), BuildReport(),
                                                                             task, length)), f"babilong {task}/{length}")
            yield key, size

    def _longbench_group_sizes(self, upto: tuple, unit: tuple, held: dict[tuple, int]) -> Iterator[tuple[tuple, int]]:
        for subset in sorted(OFFICIAL_LONGBENCH_SUBSETS):
            if ("longbench", subset) > upto:
                return
            if ("longbench", subset) == unit:
                bins = {key[2]: size for key, size in held.items() if key[:2] == unit}
            else:
                bins = self._needed(lambda: Counter(longbench_bin(r.length) for r in src.read_longbench(
                    self.source_root("longbench"), BuildReport(), subset)), f"LongBench {subset}")
            for label in sorted(b for b in bins if b is not None):
                yield ("longbench", subset, label), bins[label]

    def _mc_group_sizes(self, key: str, unit: tuple, held: dict[tuple, int]) -> Iterator[tuple[tuple, int]]:
        reader = src.read_mmlu_pro if key == "mmlu_pro" else src.read_mmlu_redux
        if unit == (key,):
            counts = {group[1]: size for group, size in held.items() if group[0] == key}
        else:
            counts = self._needed(lambda: Counter(r.category for r in reader(self.source_root(key), BuildReport())), key)
        missing = sorted(set(src.MMLU_SUBJECTS) - set(counts)) if key == "mmlu_redux" else []
        if missing:  # a subject absent from a local copy would silently shift every later draw
            raise FileNotFoundError(f"{self.config.name}: selection=official needs every MMLU-Redux subject "
                                    f"downsampler.py draws; missing: {', '.join(missing[:5])}"
                                    f"{' ...' if len(missing) > 5 else ''} ({len(missing)})")
        for category in sorted(counts):
            yield (key, category), counts[category]

    def select(self, records: Iterable[Any], group_of, family: str, upto: tuple) -> list[Any]:
        """The records to build: per group as configured (see ``official_selection``).

        ``group_of(record)`` is the record's group key without the family; groups come out in
        sorted order, members in the draw's order.
        """
        seed = int(self.option("sample_seed", SAMPLE_SEED))
        if not self.official_selection:
            return sample_per_group(records, key=group_of, seed=seed)
        groups: dict[tuple, list[Any]] = defaultdict(list)
        for record in records:
            groups[(family, *group_of(record))].append(record)
        unit = upto[:-1] if upto[-1] == LAST else upto  # the source read here: its groups are held
        held = {key: len(members) for key, members in groups.items()}
        picks = official_draw(dict(self.official_groups(upto, unit, held)), seed=seed)
        chosen = []
        for key in sorted(groups):
            chosen.extend(groups[key][i] for i in picks[key])
        return chosen

    # -- multiple choice --------------------------------------------------------------------------
    def mc_records(self) -> list[src.MCRecord]:
        key = self.option("source")
        root = self.source_root(key)
        if key == "gpqa":
            records = list(src.read_gpqa(root, self.report))
            if self.official_selection:  # all kept, grouped as data_prep.py names the category
                records.sort(key=lambda r: r.extra.get("subdomain") or r.category)  # (stable: rows in order)
            return records
        reader = src.read_mmlu_pro if key == "mmlu_pro" else src.read_mmlu_redux
        return self.select(reader(root, self.report), lambda r: (r.category,), key, (key, LAST))

    def generate_mc(self) -> Iterator[dict]:
        for record in self.mc_records():
            options, answer, extra = record.options, record.answer, {}
            if record.source == "gpqa":
                options, answer, order = shuffle_gpqa(record)
                extra = {"option_order": order}
            before, after = mc_prompt_parts(record)
            context = options_text(options)
            pages = self.render(context, where=record.id)
            yield self.example(id=record.id, before=before, pages=pages, after=after, question=record.question,
                               context=context,
                               answers=[answer], meta={"source": record.source, "category": record.category,
                                                       "options": list(options), **extra,
                                                       **{k: v for k, v in record.extra.items() if v is not None}})

    # -- BABILong ---------------------------------------------------------------------------------
    def babilong_sample(self, task: str, length: str) -> list[src.BabilongRecord]:
        records = src.read_babilong(self.source_root("babilong"), self.report, task, length)
        return self.select(records, lambda r: (r.length, r.task), "babilong", ("babilong", length, task))

    def generate_babilong(self) -> Iterator[dict]:
        task, length = self.option("task"), self.option("source_length")
        for record in self.babilong_sample(task, length):
            before, after = babilong_prompt_parts(task, record.question)
            pages = self.render(record.input, where=record.id)
            yield self.example(id=record.id, before=before, pages=pages, after=after, question=record.question,
                               context=record.input,
                               answers=[record.target], meta={"task": task, "length_bin": length,
                                                              "index": record.index})

    def generate_std_babilong(self) -> Iterator[dict]:
        task, length = self.option("task"), self.option("source_length")
        twins = {r.index: r for r in src.read_babilong(self.source_root("babilong"), self.report, task, "0k")}
        longer = [key for key in src.BABILONG_LENGTHS if src.babilong_length_tokens(key) > src.babilong_length_tokens(length)]
        for record in self.babilong_sample(task, length):
            twin = twins.get(record.index)
            if twin is None or (twin.question, twin.target) != (record.question, record.target):
                self.report.skip(f"babilong {task}/{length}", record.index,
                                 "no 0k twin with the same question and target: its facts cannot be located")
                continue
            row = self.std_babilong_row(record, fact_sentences(twin.input), longer)
            if row is not None:
                yield row

    def std_babilong_row(self, record: src.BabilongRecord, facts: list[str], longer: list[str]) -> Optional[dict]:
        """The record packed to the budget; a context that falls short is replaced by the same
        sample at the next BABILong length (rendered text takes fewer tokens than plain text)."""
        where = f"babilong {record.task}/{record.length}"
        before, after = babilong_prompt_parts(record.task, record.question)
        candidate, tried = record, []
        while candidate is not None:
            tried.append(candidate.length)
            starts = fact_word_indices(candidate.input, facts)
            if starts is None:
                self.report.skip(where, record.index, f"a fact of the 0k twin is not in the {candidate.length} context")
                return None
            layout = layout_text(candidate.input, self.settings)
            fact_pages = pages_of_words(layout, starts)
            try:
                packed = self.pack_pages(layout, before, after, lambda measure: truncate_even(
                    range(len(layout)), self.length, measure, required=fact_pages))
            except BudgetError as err:
                self.report.skip(where, record.index, f"{self.config.name}: the pages holding the facts do not fit ({err})")
                return None
            if not packed.exhausted:
                meta = {"task": record.task, "length_bin": self.config.name.rsplit("_", 1)[-1],
                        "source_length": candidate.length, "index": record.index, "fact_pages": fact_pages}
                return self.packed_example(record.id, layout, before, after, record.question, [record.target],
                                           packed, meta)
            candidate = self.babilong_at(record, longer[len(tried) - 1]) if len(tried) <= len(longer) else None
        self.report.skip(where, record.index, f"{self.config.name}: the context is shorter than {self.length} tokens "
                                              f"at every BABILong length tried ({', '.join(tried)})")
        return None

    def babilong_at(self, record: src.BabilongRecord, length: str) -> Optional[src.BabilongRecord]:
        """The same sample (task, row) at another BABILong length, if that file exists and agrees."""
        cache = self.__dict__.setdefault("_babilong_cache", {})
        key = (record.task, length)
        if key not in cache:
            try:
                cache[key] = {r.index: r for r in src.read_babilong(self.source_root("babilong"), self.report,
                                                                     record.task, length)}
            except FileNotFoundError as err:
                self.report.note(f"{self.config.name}: {err}")
                cache[key] = {}
        other = cache[key].get(record.index)
        if other is None or (other.question, other.target) != (record.question, record.target):
            return None
        return other

    # -- LongBench --------------------------------------------------------------------------------
    def generate_longbench(self) -> Iterator[dict]:
        subset = self.option("subset")
        binned = []
        for record in src.read_longbench(self.source_root("longbench"), self.report, subset):
            label = longbench_bin(record.length)
            if label is not None:
                binned.append((label, record))
        if self.official_selection:
            by_bin = lambda item: (subset, item[0])  # noqa: E731 (downsampler.py's key: bins sort as text)
        else:
            by_bin = lambda item: int(item[0].split("-")[0])  # noqa: E731 (bins in length order)
        for label, record in self.select(binned, by_bin, "longbench", ("longbench", subset, LAST)):
            before, after = longbench_prompt_parts(subset, record.input)
            pages = self.render(record.context, where=record.id)
            yield self.example(id=record.id, before=before, pages=pages, after=after, question=record.input,
                               context=record.context,
                               answers=list(record.answers),
                               meta={"subset": subset, "length_bin": label, "words": record.length,
                                     "all_classes": list(record.all_classes or [])})

    def generate_std_longbench(self) -> Iterator[dict]:
        subset = self.option("subset")
        records = list(src.read_longbench(self.source_root("longbench"), self.report, subset))
        random.Random(int(self.option("sample_seed", SAMPLE_SEED))).shuffle(records)
        made, short = 0, 0
        for record in records:
            if made >= PER_GROUP:
                break
            before, after = longbench_prompt_parts(subset, record.input)
            layout = layout_text(record.context, self.settings)
            order = middle_out_order(len(layout))
            packed = self.pack_pages(layout, before, after, lambda measure: fill(order, self.length, measure))
            if packed.exhausted:
                short += 1
                continue
            yield self.packed_example(record.id, layout, before, after, record.input, list(record.answers), packed,
                                      {"subset": subset, "length_bin": self.config.name.rsplit("_", 1)[-1],
                                       "words": record.length, "all_classes": list(record.all_classes or [])})
            made += 1
        if short:
            self.report.note(f"{self.config.name}: {short} LongBench context(s) too short to reach "
                             f"{self.length} tokens were passed over")

    # -- packing pages ----------------------------------------------------------------------------
    def pack_pages(self, layout: TextLayout, before: str, after: str, pack) -> Packed:
        """``pack(measure)`` over page indices, measuring exact tokens from the layout's page sizes."""
        text_tokens: dict[int, int] = {}

        def measure(selection: Sequence[int]) -> int:
            n = len(selection)
            if n not in text_tokens:
                text_tokens[n] = self.counter.text(with_pages(before, n, after))
            return text_tokens[n] + self.counter.images(layout.sizes[i] for i in selection)

        return pack(measure)

    def packed_example(self, id: str, layout: TextLayout, before: str, after: str, question: str,
                       answers: list[str], packed: Packed, meta: dict) -> dict:
        """The example of the packed pages; only the kept pages are rasterized."""
        kept = sorted(packed.items)
        pages = self.render(layout.text, layout=layout, which=kept, where=id)
        context = "\n".join(line for i in kept for line in layout.pages[i])  # the kept text, as laid out
        return self.example(id=f"{id}_{self.config.name.rsplit('_', 1)[-1]}", before=before, pages=pages,
                            after=after, question=question, answers=answers, num_tokens=packed.num_tokens,
                            context=context,
                            meta={**meta, "source_pages": len(layout), "kept_pages": kept,
                                  "next_num_tokens": packed.next_num_tokens})
