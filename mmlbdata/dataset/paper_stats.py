"""Built statistics beside the papers' own: images per example and examples, per config.

Why: a rebuilt benchmark is only the paper's benchmark if its data looks like the paper's data.
The papers' numbers live in ``paper_stats.yaml`` (each with the table or section it comes from);
the built numbers are recomputed from the parquet rows (:class:`mmlbdata.dataset.stats.Distribution`,
never the manifests), so the comparison cannot drift from what was written. Used by
``mmlb stats --compare-paper`` and by every card whose configs the papers describe.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Optional, Sequence

from mmlbdata.core.lengths import ALL_LENGTHS, LENGTH_KEYS

DATA_FILE = Path(__file__).with_name("paper_stats.yaml")


@dataclass(frozen=True)
class PaperValue:
    """What one paper says about one config."""

    benchmark: str
    dataset: str
    images: Optional[float]
    images_std: Optional[float]
    examples: Optional[int]
    images_ref: Optional[str]
    examples_ref: Optional[str]


@dataclass(frozen=True)
class Comparison:
    """One config: the paper's numbers, the built ones, and their differences."""

    config: str
    paper: PaperValue
    built_examples: int
    built_images: float
    built_images_std: float

    @property
    def images_diff(self) -> Optional[float]:
        return None if self.paper.images is None else self.built_images - self.paper.images

    @property
    def examples_diff(self) -> Optional[int]:
        return None if self.paper.examples is None else self.built_examples - self.paper.examples


@lru_cache(maxsize=4)
def load_entries(path: Path = DATA_FILE) -> tuple[tuple[re.Pattern, dict, dict], ...]:
    """(config regex, dataset entry, benchmark entry) for every dataset of the data file."""
    import yaml

    with open(path, encoding="utf-8") as handle:
        benchmarks = yaml.safe_load(handle)
    return tuple((_pattern(d["configs"]), d, b) for b in benchmarks for d in b["datasets"])


def _pattern(template: str) -> re.Pattern:
    """``vh_single_{length}`` -> a regex; {length} names the length, {REST} any suffix."""
    parts = re.split(r"(\{\w+\})", template)
    regex = ""
    for part in parts:
        if part == "{length}":
            regex += "(?P<length>" + "|".join(ALL_LENGTHS) + ")"
        elif part == "{REST}":
            regex += ".*"
        elif part.startswith("{"):
            regex += r"\d+"
        else:
            regex += re.escape(part)
    return re.compile(regex + "$")


def paper_value(config: str, path: Path = DATA_FILE) -> Optional[PaperValue]:
    """The papers' numbers for ``config``, or None when no paper describes it."""
    for regex, dataset, benchmark in load_entries(path):
        match = regex.match(config)
        if match:
            length = match["length"] if "length" in regex.groupindex else None
            if length is not None and length not in LENGTH_KEYS:  # 256k / 512k: beyond every paper
                return PaperValue(benchmark["benchmark"], dataset["name"], None, None, None,
                                  benchmark.get("images_ref"), benchmark.get("examples_ref"))
            index = LENGTH_KEYS.index(length) if length is not None else None
            return PaperValue(
                benchmark=benchmark["benchmark"], dataset=dataset["name"],
                images=_at(dataset.get("images"), index), images_std=_at(dataset.get("images_std"), index),
                examples=dataset.get("examples"), images_ref=benchmark.get("images_ref"),
                examples_ref=benchmark.get("examples_ref"))
    return None


def _at(value, index: Optional[int]):
    """A per-length list picked at ``index``; a single value as it is."""
    return value[index] if isinstance(value, list) else value


def compare(dists: Iterable, path: Path = DATA_FILE) -> list[Comparison]:
    """Comparisons for every distribution (``stats.Distribution``) a paper describes."""
    rows = []
    for dist in dists:
        paper = paper_value(dist.config, path)
        if paper is not None:
            mean, std = _mean_std(dist.images)
            rows.append(Comparison(dist.config, paper, len(dist.num_tokens), mean, std))
    return rows


def _mean_std(values: Sequence[int]) -> tuple[float, float]:
    """Mean and sample standard deviation (ddof=1, as the official Table 3 script)."""
    if not values:
        return 0.0, 0.0
    mean = sum(values) / len(values)
    if len(values) < 2:
        return mean, 0.0
    return mean, math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))


def _number(value, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def table_rows(comparisons: Iterable[Comparison]) -> list[dict[str, str]]:
    """The comparison as strings, one dict per config (the card and the CLI print these)."""
    rows = []
    for c in comparisons:
        std = "" if c.paper.images_std is None or c.paper.images is None else f" ± {c.paper.images_std:.1f}"
        rows.append({
            "config": c.config, "benchmark": c.paper.benchmark, "dataset": c.paper.dataset,
            "paper_images": _number(c.paper.images, ".1f") + std,
            "built_images": f"{c.built_images:.1f} ± {c.built_images_std:.1f}",
            "images_diff": _number(c.images_diff, "+.1f"),
            "paper_examples": _number(c.paper.examples, "d"),
            "built_examples": str(c.built_examples),
            "examples_diff": _number(c.examples_diff, "+d"),
        })
    return rows


def references(comparisons: Iterable[Comparison]) -> list[str]:
    """The tables and sections the compared numbers come from, each once, in order."""
    seen: list[str] = []
    for c in comparisons:
        for ref in (c.paper.images_ref, c.paper.examples_ref):
            if ref and ref not in seen:
                seen.append(ref)
    return seen


COLUMNS = ("config", "paper_images", "built_images", "images_diff", "paper_examples",
           "built_examples", "examples_diff")
HEADERS = ("config", "paper img/ex", "built img/ex", "diff", "paper ex", "built ex", "diff")


def format_text(comparisons: Sequence[Comparison]) -> str:
    """A plain-text table for the terminal, then the references."""
    rows = table_rows(comparisons)
    widths = [max([len(h)] + [len(r[k]) for r in rows]) for k, h in zip(COLUMNS, HEADERS)]
    lines = ["  ".join(h.ljust(w) if i == 0 else h.rjust(w)
                       for i, (h, w) in enumerate(zip(HEADERS, widths)))]
    for r in rows:
        lines.append("  ".join(r[k].ljust(w) if i == 0 else r[k].rjust(w)
                               for i, (k, w) in enumerate(zip(COLUMNS, widths))))
    lines += ["", "paper numbers from:"] + [f"  {ref}" for ref in references(comparisons)]
    return "\n".join(lines)
