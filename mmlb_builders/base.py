"""The base every benchmark family extends.

A family is a ``datasets.GeneratorBasedBuilder``: ``BUILDER_CONFIGS`` declares its configs,
``_info`` its features, and ``_generate_examples`` its rows, so the standard ``datasets`` API works
on it (``builder.download_and_prepare(); builder.as_dataset()``). ``mmlb build`` drives the same
``generate()`` through mmlbdata's streaming writer instead (deduplicated images, atomic shards).

A subclass is the benchmark's *recipe*: it reads records from ``mmlbdata.sources`` readers and
turns them into examples with the core (counter, packers, image store). It never writes files.
"""
from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Optional, Sequence

import datasets

from mmlbdata import __version__
from mmlbdata.core.lengths import EXTENDED_LENGTH_KEYS, LENGTH_KEYS, LENGTHS, length_tokens
from mmlbdata.core.paths import resolve_inside
from mmlbdata.core.report import BuildReport
from mmlbdata.core.schema import FEATURES, make_example
from mmlbdata.core.store import BadImageError, ImageStore
from mmlbdata.core.tokens import TokenCounter, default_counter
from mmlbdata.official import mmlongbench_prompts as prompts
from mmlbdata.official import protocol as protocols
from mmlbdata.sources import mmlb_release as release
from mmlbdata.sources import mmlb_release_tsv as release_tsv

#: MMLongBench's families: the five lengths and the extended release's 256K / 512K
MMLONGBENCH_LENGTH_KEYS: tuple[str, ...] = LENGTH_KEYS + EXTENDED_LENGTH_KEYS


class MissingSourceError(ValueError):
    """A config needs a source folder that was not given."""


class MMLBConfig(datasets.BuilderConfig):
    """One config: a dataset at one length (or a length-free original benchmark)."""

    def __init__(
        self,
        *,
        name: str,
        dataset: str,
        length: Optional[int] = None,
        metric: str = "",
        sources: Sequence[str] = (),
        options: Optional[Mapping[str, Any]] = None,
        description: str = "",
        release_key: Optional[str] = None,
    ):
        super().__init__(name=name, version=datasets.Version(__version__), description=description)
        self.dataset = dataset
        self.length = length
        self.metric = metric
        self.sources = tuple(sources)
        self.options = dict(options or {})
        #: a source key holding the benchmark's own released examples, read instead of the recipe
        self.release_key = release_key

    @property
    def release_file(self) -> Optional[release.ReleaseFile]:
        """Where MMLongBench's official release holds this config (None: not released there)."""
        spec = release.RELEASE_FILES.get(self.dataset)
        return spec if spec is not None and self.length else None

    @property
    def in_release_tsv(self) -> bool:
        """Whether MMLongBench's VLMEvalKit TSVs (32K, 128K, 256K, 512K) hold this config."""
        return self.dataset in release_tsv.TSV_DATASETS and self.length in release_tsv.TSV_LENGTHS

    def source_keys(self, given: Mapping[str, Any]) -> tuple[str, ...]:
        """The source keys a build reads: the official release alone when it is given and holds
        this config (the JSON-lines files first, the VLMEvalKit TSVs for the lengths beyond them),
        else the recipe's own sources."""
        tsv = self.in_release_tsv and release_tsv.SOURCE_KEY in given
        if tsv and self.length not in LENGTHS.values():
            return (release_tsv.SOURCE_KEY,)
        if self.release_file is not None and release.SOURCE_KEY in given:
            return (release.SOURCE_KEY,)
        if tsv:
            return (release_tsv.SOURCE_KEY,)
        if self.release_key is not None and self.release_key in given:
            return (self.release_key,)
        return self.sources

    def missing_sources(self, given: Mapping[str, Any]) -> list[str]:
        """What a build of this config lacks among ``given`` sources (empty: it can be built)."""
        keys = self.source_keys(given)
        if keys == (release.SOURCE_KEY,) and release.SOURCE_KEY in given:
            try:
                path = release.data_root(Path(given[release.SOURCE_KEY])) / self.release_file.path(self.length)
            except ValueError:  # an ablation: built by name, with --option release_file
                return [f"{release.SOURCE_KEY} file (build {self.name} by name with --option release_file=...)"]
            return [] if path.is_file() else [f"{release.SOURCE_KEY} file {path}"]
        if keys == (release_tsv.SOURCE_KEY,):
            path = release_tsv.tsv_path(Path(given[release_tsv.SOURCE_KEY]), self.length)
            return [] if path.is_file() else [f"{release_tsv.SOURCE_KEY} file {path}"]
        return [k for k in keys if k not in given]


def standard_configs(
    dataset: str,
    *,
    metric: str,
    sources: Sequence[str],
    lengths: Sequence[str] = LENGTH_KEYS,
    description: str = "",
    **options: Any,
) -> list[MMLBConfig]:
    """``{dataset}_{8k..128k}`` configs sharing a metric, sources and options."""
    return [
        MMLBConfig(name=f"{dataset}_{key}", dataset=dataset, length=length_tokens(key),
                   metric=metric, sources=sources, options=options,
                   description=f"{description} ({key} tokens)".strip())
        for key in lengths
    ]


def _release_rows(path: Path, spec: release.ReleaseFile, report: BuildReport, *, protocol=None,
                  **draw: Any) -> Iterator[tuple[int, release.ReleaseRow]]:
    """(number, row) of one release file: the ICL file (no protocol: its prompt has none) or a
    JSON-lines file of ``spec.kind`` under ``protocol``; ``draw``: ``paper`` / ``seed``."""
    if spec.kind == "icl":
        return release.read_icl_file(path, report, **draw)
    return release.read_release_file(path, spec.kind, report, protocol=protocol, **draw)


def release_only_configs(configs: Sequence[MMLBConfig]) -> list[MMLBConfig]:
    """``{dataset}_4k`` for every dataset of ``configs`` that MMLongBench released: the release has
    4K files (generate_configs.py's "4k") that no recipe here builds, so they read the release only."""
    first: dict[str, MMLBConfig] = {}
    for config in configs:
        if config.release_file is not None:
            first.setdefault(config.dataset, config)
    fours = [MMLBConfig(name=f"{dataset}_4k", dataset=dataset, length=release.RELEASE_ONLY_LENGTH,
                        metric=config.metric, sources=(release.SOURCE_KEY,), options=config.options,
                        description=f"{dataset}: the official release's 4K examples (--source mmlb_release only)")
             for dataset, config in first.items()]
    return fours + ablation_configs(first)


def ablation_configs(released: Mapping[str, MMLBConfig]) -> list[MMLBConfig]:
    """The paper's ablation sets (text-only RAG ``triviaqa``, ``occ_vrag`` without the gold
    passages, OCR-text ``text_doc``) at the five lengths, for the family of the dataset they vary."""
    return [MMLBConfig(name=f"{name}_{key}", dataset=name, length=length_tokens(key),
                       metric=released[anchor].metric, sources=(release.SOURCE_KEY,),
                       description=f"{name}: the official release's ablation set (--source mmlb_release "
                                   f"and --option release_file=<its file under mmlb_data>)")
            for name, (anchor, _spec) in release.ABLATIONS.items() if anchor in released for key in LENGTH_KEYS]


class MMLBBuilder(datasets.GeneratorBasedBuilder):
    """Base of every family; subclasses implement :meth:`generate`."""

    BUILDER_CONFIG_CLASS = MMLBConfig
    BUILDER_CONFIGS: list[MMLBConfig] = []
    #: source key -> the release layout the reader expects (shown by ``mmlb list --sources``)
    SOURCES: dict[str, str] = {}
    FEATURES: datasets.Features = FEATURES
    #: whether ``--limit`` caps the rows built (one row per source question): then it bounds the
    #: progress bar's total; recipes that make several rows of a question set ``expected_rows``
    LIMIT_COUNTS_ROWS = False
    DESCRIPTION = ""
    CITATION = ""
    HOMEPAGE = ""
    LICENSE = ""

    def __init_subclass__(cls, **kwargs: Any):
        super().__init_subclass__(**kwargs)
        if any(config.release_file is not None for config in cls.BUILDER_CONFIGS):
            cls.SOURCES = {**cls.SOURCES, release.SOURCE_KEY: release.LAYOUT}
            cls.BUILDER_CONFIGS = list(cls.BUILDER_CONFIGS) + release_only_configs(cls.BUILDER_CONFIGS)
        if any(config.in_release_tsv for config in cls.BUILDER_CONFIGS):
            cls.SOURCES = {**cls.SOURCES, release_tsv.SOURCE_KEY: release_tsv.LAYOUT}

    def __init__(
        self,
        config_name: str,
        *,
        sources: Optional[Mapping[str, os.PathLike]] = None,
        seed: int = 0,
        limit: Optional[int] = None,
        store: Optional[ImageStore] = None,
        counter: Optional[TokenCounter] = None,
        report: Optional[BuildReport] = None,
        options: Optional[Mapping[str, Any]] = None,
        num_proc: int = 1,
        **kwargs: Any,
    ):
        self.sources = {key: Path(path) for key, path in (sources or {}).items()}
        self.seed = seed
        self.limit = limit
        #: how many rows this build makes, when known (the progress bar's total; None: unknown)
        self.expected_rows: Optional[int] = limit if self.LIMIT_COUNTS_ROWS else None
        self.store = store or ImageStore()
        self._counter = counter
        self.report = report or BuildReport()
        self.user_options = dict(options or {})
        self.num_proc = num_proc
        kwargs.setdefault("cache_dir", str(self.store.root.parent / "hf_builder_cache"))
        super().__init__(config_name=config_name, **kwargs)
        #: what the manifest records besides the build parameters (filled while generating)
        self.manifest_extra: dict[str, Any] = {}
        if self.config.source_keys(self.sources) == (release.SOURCE_KEY,):
            # every family's rows come from the official release instead of its recipe
            self.generate = self.generate_from_mmlb_release
            self.expected_rows = limit  # a release row is a row
        elif self.config.source_keys(self.sources) == (release_tsv.SOURCE_KEY,):
            self.generate = self.generate_from_release_tsv
            self.expected_rows = limit

    # -- what subclasses use -------------------------------------------------------------------
    @property
    def counter(self) -> TokenCounter:
        if self._counter is None:
            self._counter = default_counter()
        return self._counter

    @property
    def length(self) -> Optional[int]:
        return self.config.length

    def option(self, name: str, default: Any = None) -> Any:
        """A recipe option: the user's value, else the config's, else ``default``."""
        return self.user_options.get(name, self.config.options.get(name, default))

    def source(self, key: str) -> Path:
        """The folder of source ``key``; a clear error naming the expected layout if absent."""
        path = self.sources.get(key)
        if path is None:
            layout = self.SOURCES.get(key, "see `mmlb list --sources`")
            raise MissingSourceError(
                f"config {self.config.name} needs source '{key}': pass --source {key}=PATH "
                f"(expected layout: {layout})")
        if not path.exists():
            raise MissingSourceError(f"source '{key}' does not exist: {path}")
        return path

    def generate(self) -> Iterator[dict[str, Any]]:
        """Yield the config's examples, built with ``mmlbdata.core.schema.make_example``."""
        raise NotImplementedError

    # -- MMLongBench's official release (source ``mmlb_release``), the same for every family -----
    def generate_from_mmlb_release(self) -> Iterator[dict[str, Any]]:
        """The config's official examples: prompts as the official loader assembles them, every
        row counted with our counter (kept and flagged ``meta.over_budget`` when over its length)."""
        spec = self.config.release_file
        root = self.source(release.SOURCE_KEY)
        relative = str(self.option("release_file") or spec.path(self.length))
        path = resolve_inside(release.data_root(root), relative, what="release file")
        if not path.is_file():
            raise MissingSourceError(f"the release under {root} has no {relative} (needed by {self.config.name})")
        paper = self._mmlb_paper_samples(spec)
        seed = int(self.option("official_seed", release.OFFICIAL_SEED))
        rows = _release_rows(path, spec, self.report, paper=paper, seed=seed, protocol=self.option("protocol"))
        tally = release.LengthTally(self.length)
        seen: set[str] = set()
        renamed = release.RenamedIds(relative)
        image_root = release.image_root(root)
        for number, row in rows:
            if self.limit is not None and tally.rows >= self.limit:
                break
            example = self._mmlb_release_example(row, path, relative, number, seen, lambda _name: image_root, renamed)
            if example is not None:
                tally.add(example["num_tokens"])
                yield example
        self._report_renamed(renamed)
        self.manifest_extra.update(provenance="official release", release_file=relative,
                                   protocol=protocols.get(self.option("protocol")).name,
                                   subset="paper" if paper else "all", official_lengths=tally.summary())
        self.report.note(f"{self.config.name}: official release {relative}; {tally.describe()}")
        if self.config.in_release_tsv and release_tsv.SOURCE_KEY in self.sources:
            self._cross_check_release_tsv(path, spec)

    def _cross_check_release_tsv(self, path: Path, spec: release.ReleaseFile) -> None:
        """With both releases given (32K, 128K): the VLMEvalKit TSV's rows against the whole JSON-lines
        file, by official id; the counts go to the manifest and the report."""
        tsv = release_tsv.tsv_path(self.source(release_tsv.SOURCE_KEY), self.length)
        if not tsv.is_file():
            self.report.note(f"{self.config.name}: no {tsv.name} to cross-check the release with")
            return
        rows = (row for _n, row in _release_rows(path, spec, BuildReport()))
        counts = release_tsv.cross_check(tsv, self.config.dataset, rows)
        self.manifest_extra["tsv_cross_check"] = counts
        expected = (" (expected for ICL: a JSON-lines row's exemplars are drawn when it is loaded, here by one "
                    "seeded replay of data.py's draw, while the TSV holds the prompts its own build drew)"
                    if spec.kind == "icl" and counts.get("prompts_differ") else "")
        self.report.note(f"{self.config.name}: {tsv.name} cross-check: "
                         + ", ".join(f"{k} {v}" for k, v in counts.items()) + expected)

    def generate_from_release_tsv(self) -> Iterator[dict[str, Any]]:
        """The config's rows of MMLongBench's VLMEvalKit TSV (the extended release): the reference
        subset and ids as released, prompts as VLMEvalKit interleaves them, every row counted with
        our counter and kept (flagged ``meta.over_budget`` when over its length)."""
        root = self.source(release_tsv.SOURCE_KEY)
        path = release_tsv.tsv_path(root, self.length)
        if not path.is_file():
            raise MissingSourceError(f"{root} has no {release_tsv.tsv_name(self.length)} "
                                     f"(needed by {self.config.name})")
        images = functools.partial(release_tsv.image_root, root, self.length)  # per image, as VLMEvalKit
        tally, seen, subsets = release.LengthTally(self.length), set(), set()
        unusual = {"image_markers": 0, "template_mismatch": 0}
        renamed = release.RenamedIds(path.name)
        for number, row in release_tsv.read_tsv(path, self.config.dataset, self.report, protocol=self.option("protocol")):
            if self.limit is not None and tally.rows >= self.limit:
                break
            example = self._mmlb_release_example(row, path, path.name, number, seen, images, renamed)
            if example is not None:
                tally.add(example["num_tokens"])
                subsets.add(row.meta.get("mmlb_subset") or "")
                for key in unusual:
                    unusual[key] += key in row.meta
                yield example
        self._report_renamed(renamed)
        if any(unusual.values()):
            self.report.note(f"{self.config.name}: {unusual['image_markers']} rows with image markers not one per "
                             f"image (meta.image_markers), {unusual['template_mismatch']} prompts not in data.py's "
                             f"template (meta.template_mismatch); kept as released")
        asked = protocols.get(self.option("protocol"))
        protocol = asked
        if self.config.release_file.kind in release.BY_PROTOCOL and asked.name != release_tsv.TSV_PROTOCOL:
            protocol = protocols.get(release_tsv.TSV_PROTOCOL)
            self.report.note(f"{self.config.name}: the VLMEvalKit TSV's prompts are protocol {protocol.name} "
                             f"(no page ids); protocol {asked.name} cannot be applied to them, recorded as {protocol.name}")
        self.manifest_extra.update(provenance="official release", release_format="vlmevalkit_tsv",
                                   release_file=path.name, subset=", ".join(sorted(subsets)) or "none",
                                   protocol=protocol.name, official_lengths=tally.summary())
        self.report.note(f"{self.config.name}: VLMEvalKit release {path.name} ({', '.join(sorted(subsets))}); "
                         f"{tally.describe()}")

    def _report_renamed(self, renamed: release.RenamedIds) -> None:
        """Repeated official ids: one note in the build report, every rename in the manifest."""
        if renamed.renamed:
            self.report.note(renamed.note(self.config.name))
            self.manifest_extra["renamed_ids"] = renamed.renamed

    def _mmlb_paper_samples(self, spec: release.ReleaseFile) -> Optional[int]:
        subset = str(self.option("subset", "all"))
        if subset not in ("all", "paper"):
            raise ValueError(f"option subset must be 'all' or 'paper', not {subset!r}")
        return spec.paper_samples if subset == "paper" else None

    def _mmlb_release_example(self, row: release.ReleaseRow, path: Path, relative: str, number: int,
                              seen: set[str], images: Callable[[str], Path],
                              renamed: release.RenamedIds) -> Optional[dict[str, Any]]:
        """One official row in our schema (``images(name)``: the folder an image lies under); a row
        with an unusable image is skipped and reported; a repeated official id renamed, in ``renamed``."""
        record = {".jsonl": f"line {number}", ".tsv": f"row {number}"}.get(path.suffix, f"test example {number}")
        try:
            refs = [self.store.ref_inside(images(name), name, what="image") for name in row.images]
        except (BadImageError, OSError) as err:
            self.report.skip(path, record, f"image unusable, row skipped: {err}")
            return None
        num_tokens = self.counter.example(row.prompt, refs)
        kind = self.config.release_file.kind
        meta = {"official_id": row.official_id, "release_file": relative,
                "release_record": number, "provenance": "official release", "over_budget": num_tokens > self.length,
                "answer_prefix": prompts.answer_prefix(kind), **row.meta}
        example_id = release.unique_id(row, number, seen)
        renamed.add(release.base_id(row, number), example_id, record)
        return make_example(id=example_id, dataset=self.config.dataset, length=self.length,
                            num_tokens=num_tokens, prompt=row.prompt, images=refs, question=row.question,
                            answers=row.answers, metric=self.config.metric, meta=meta)

    # -- the datasets API ----------------------------------------------------------------------
    def _info(self) -> datasets.DatasetInfo:
        return datasets.DatasetInfo(description=self.DESCRIPTION, features=self.FEATURES,
                                    citation=self.CITATION, homepage=self.HOMEPAGE, license=self.LICENSE)

    def _split_generators(self, dl_manager):
        return [datasets.SplitGenerator(name=datasets.Split.TEST, gen_kwargs={})]

    def _generate_examples(self):
        image_columns = [k for k, f in self.FEATURES.items()
                         if isinstance(getattr(f, "feature", None), datasets.Image)]
        for example in self.generate():
            row = dict(example)
            for column in image_columns:
                row[column] = [{"bytes": ref.read_bytes(), "path": ref.name} for ref in row[column]]
            yield row["id"], row
