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

Where each part lives: reading and selection (the per-group ``Random(42)`` draw, the replay of
``downsampler.py``, LongBench's word-count bins) in ``mmlbdata/sources/readbench.py``; the prompt
texts and their split around the pages in ``mmlbdata/official/readbench_prompts.py``; page layout and
rendering in ``mmlbdata/media/pages.py``. This module is the recipe that puts them together.

Pages: Helvetica 12 pt on A4 at 92.9 PPI (``ppi`` option; configs ``*_150ppi``; ``layout=official``
for ``data_prep.py``'s own 15 px / 21 px-line layout); pages are cropped as ReadBench's renderer
crops them (the last page to its text in height, every page to margin + widest line + 4 margins in
width, so options images come out narrow and prose pages stay A4; ``crop_width=false`` keeps the
full width). Prompts are the benchmark's multimodal templates, split where the context was, so the
``<image>`` placeholders stand exactly where the original put the images; CoT as ReadBench's
``COT_DEFAULT`` (on for the multiple-choice sets, off for BABILong and LongBench).

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
from collections import Counter
from pathlib import Path
from typing import Any, Iterable, Iterator, Optional, Sequence

from mmlbdata.core.lengths import LENGTH_KEYS, BudgetError, Packed, fill, length_tokens, truncate_even
from mmlbdata.core.schema import make_example
from mmlbdata.core.seeding import stable_seed
from mmlbdata.media.pages import (
    DEFAULT_PPI,
    PageSettings,
    TextLayout,
    layout_text,
    pages_of_words,
    render_text_pages,
    settings_for_layout,
)
from mmlbdata.official.readbench_prompts import (
    babilong_prompt_parts,
    longbench_prompt_parts,
    mc_prompt_parts,
    options_text,
    with_pages,
)
from mmlbdata.sources import readbench as src

from .base import MMLBBuilder, MMLBConfig

PPI_VARIANTS = (150,)
METRICS = {"mc": "readbench_mc", "babilong": "babilong", "longbench": "longbench_f1"}

# -- GPQA options ---------------------------------------------------------------------------------

def shuffle_gpqa(record: src.MCRecord) -> tuple[tuple[str, ...], str, list[int]]:
    """Options shuffled with a seed from a stable hash of the record id; the new answer letter."""
    order = list(range(len(record.options)))
    random.Random(stable_seed("gpqa", record.extra.get("record_id", record.id))).shuffle(order)
    options = tuple(record.options[i] for i in order)
    return options, src.LETTERS[order.index(0)], order


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
                for task in src.BABILONG_TASKS for length in src.ORIGINAL_BABILONG_LENGTHS]
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
    LIMIT_COUNTS_ROWS = True  # --limit caps the rows built (the progress bar's total)
    SOURCES = dict(src.LAYOUTS)
    BUILDER_CONFIGS = original_configs() + [c for p in PPI_VARIANTS for c in original_configs(p)] + \
        standardized_configs()

    # -- plumbing ---------------------------------------------------------------------------------
    def source_root(self, key: str) -> Optional[Path]:
        """The local folder of ``key``, or None to read the Hub (a source may be omitted)."""
        return self.source(key) if key in self.sources else None

    @property
    def settings(self) -> PageSettings:
        """Page settings from the ``layout``, ``ppi`` and ``crop_width`` options
        (``mmlbdata.media.pages.settings_for_layout``: ``library`` by default, or ``official``)."""
        ppi, crop_width = float(self.option("ppi", DEFAULT_PPI)), bool(self.option("crop_width", True))
        return settings_for_layout(self.option("layout", "library"), ppi, crop_width)

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

    def select(self, records: Iterable[Any], group_of, family: str, upto: tuple) -> list[Any]:
        """The records to build: per group as configured (see ``official_selection``).

        ``group_of(record)`` is the record's group key without the family; groups come out in
        sorted order, members in the draw's order.
        """
        seed = int(self.option("sample_seed", src.SAMPLE_SEED))
        if not self.official_selection:
            return src.sample_per_group(records, key=group_of, seed=seed)
        return src.OfficialDraw(self.source_root, self.config.name, seed).select(records, group_of, family, upto)

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
        return self.select(reader(root, self.report), lambda r: (r.category,), key, (key, src.LAST))

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
            label = src.longbench_bin(record.length)
            if label is not None:
                binned.append((label, record))
        if self.official_selection:
            by_bin = lambda item: (subset, item[0])  # noqa: E731 (downsampler.py's key: bins sort as text)
        else:
            by_bin = lambda item: int(item[0].split("-")[0])  # noqa: E731 (bins in length order)
        for label, record in self.select(binned, by_bin, "longbench", ("longbench", subset, src.LAST)):
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
        random.Random(int(self.option("sample_seed", src.SAMPLE_SEED))).shuffle(records)
        made, short = 0, 0
        for record in records:
            if made >= src.PER_GROUP:
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
