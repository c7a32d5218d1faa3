"""The base every benchmark family extends.

A family is a ``datasets.GeneratorBasedBuilder``: ``BUILDER_CONFIGS`` declares its configs,
``_info`` its features, and ``_generate_examples`` its rows, so the standard ``datasets`` API works
on it (``builder.download_and_prepare(); builder.as_dataset()``). ``mmlb build`` drives the same
``generate()`` through mmlbdata's streaming writer instead (deduplicated images, atomic shards).

A subclass is the benchmark's *recipe*: it reads records from ``mmlbdata.sources`` readers and
turns them into examples with the core (counter, packers, image store). It never writes files.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterator, Mapping, Optional, Sequence

import datasets

from mmlbdata import __version__
from mmlbdata.lengths import LENGTH_KEYS, length_tokens
from mmlbdata.report import BuildReport
from mmlbdata.schema import FEATURES
from mmlbdata.store import ImageStore
from mmlbdata.tokens import TokenCounter, default_counter


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
    ):
        super().__init__(name=name, version=datasets.Version(__version__), description=description)
        self.dataset = dataset
        self.length = length
        self.metric = metric
        self.sources = tuple(sources)
        self.options = dict(options or {})


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


class MMLBBuilder(datasets.GeneratorBasedBuilder):
    """Base of every family; subclasses implement :meth:`generate`."""

    BUILDER_CONFIG_CLASS = MMLBConfig
    BUILDER_CONFIGS: list[MMLBConfig] = []
    #: source key -> the release layout the reader expects (shown by ``mmlb list --sources``)
    SOURCES: dict[str, str] = {}
    FEATURES: datasets.Features = FEATURES
    DESCRIPTION = ""
    CITATION = ""
    HOMEPAGE = ""
    LICENSE = ""

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
        self.store = store or ImageStore()
        self._counter = counter
        self.report = report or BuildReport()
        self.user_options = dict(options or {})
        self.num_proc = num_proc
        kwargs.setdefault("cache_dir", str(self.store.root.parent / "hf_builder_cache"))
        super().__init__(config_name=config_name, **kwargs)

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
        """Yield the config's examples, built with ``mmlbdata.schema.make_example``."""
        raise NotImplementedError

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
