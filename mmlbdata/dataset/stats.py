"""Statistics of built configs, recomputed from the parquet files (the source of truth).

Only cheap columns are read: ``num_tokens``/``length``/``dataset`` and the image *paths* (the
nested ``images.list.element.path`` column of an embedded config, ``images_file_names`` of a
``files`` config), never the image bytes, so statistics of a 100 GB folder take seconds. A
config's files are its ``<config>.metadata.parquet`` (files layout) or its ``data/<config>/``
shards (embedded layout): :func:`shard_files` returns whichever the folder holds. Cards, ``mmlb stats`` and the build summary all use these numbers.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from mmlbdata.dataset.writer import FILE_NAMES_SUFFIX, METADATA_SUFFIX, SPLIT, built_configs, metadata_path

IMAGE_PATH_COLUMN = "images.list.element.path"
IMAGE_FILES_COLUMN = "images" + FILE_NAMES_SUFFIX  # files layout: relative paths into images/


def configs_in(folder: Path) -> list[str]:
    """Configs built in ``folder``, in either layout."""
    return sorted(set().union(*built_configs(folder).values()))


def shard_files(folder: Path, config: str) -> list[Path]:
    """The parquet files holding ``config``'s rows: its metadata file, else its embedded shards."""
    metadata = metadata_path(folder, config)
    if metadata.is_file():
        return [metadata]
    return sorted((Path(folder) / "data" / config).glob(f"{SPLIT}-*.parquet"))


def is_files_layout(path: Path) -> bool:
    """Whether a parquet file of :func:`shard_files` is a files-layout metadata file."""
    return Path(path).name.endswith(METADATA_SUFFIX)


def image_paths(metadata_file: Path) -> list[str]:
    """The distinct image paths (relative to the folder) a metadata file names, sorted."""
    column = pq.read_table(metadata_file, columns=[IMAGE_FILES_COLUMN]).column(IMAGE_FILES_COLUMN)
    return sorted(set(pc.list_flatten(column).to_pylist()))


@dataclass
class Distribution:
    """Per-row values of one config (no image bytes): what statistics and plots are made of."""

    config: str
    num_tokens: list[int] = field(default_factory=list)
    lengths: list[int] = field(default_factory=list)
    images: list[int] = field(default_factory=list)  # images per row
    datasets: list[str] = field(default_factory=list)
    num_bytes: int = 0
    num_shards: int = 0
    image_files: Optional[dict[str, int]] = None  # files layout: its distinct image paths -> bytes (None: embedded)

    def summary(self) -> dict:
        """Rows, images per row, token length min/mean/max, mean fill ratio (tokens / length)."""
        rows = len(self.num_tokens)
        images = sum(self.images)
        tokens = pa.array(self.num_tokens, pa.int64())
        fill = [t / n for t, n in zip(self.num_tokens, self.lengths) if n]
        return {
            "config": self.config,
            "rows": rows,
            "images": images,
            "images_per_row": images / rows if rows else 0.0,
            "tokens_min": pc.min(tokens).as_py() if rows else 0,
            "tokens_max": pc.max(tokens).as_py() if rows else 0,
            "tokens_mean": pc.mean(tokens).as_py() if rows else 0.0,
            "fill_ratio": sum(fill) / len(fill) if fill else 0.0,
            "rows_with_length": len(fill),  # 0 for a length-free (original benchmark) config
            "bytes": self.num_bytes,
            "shards": self.num_shards,
        }


def config_distribution(folder: Path, config: str) -> Distribution:
    """Read the cheap columns of every shard of ``config``."""
    files = shard_files(folder, config)
    if not files:
        raise FileNotFoundError(f"{folder}/data/{config}: no parquet shard")
    dist = Distribution(config, num_shards=len(files))
    for path in files:
        table = _read_cheap_columns(path)
        image_column = next((c for c in ("images", IMAGE_FILES_COLUMN) if c in table.column_names), None)
        dist.num_tokens += table.column("num_tokens").to_pylist()
        dist.lengths += [n or 0 for n in table.column("length").to_pylist()]
        dist.datasets += table.column("dataset").to_pylist()
        if image_column:
            dist.images += pc.list_value_length(table.column(image_column)).fill_null(0).to_pylist()
        else:
            dist.images += [0] * table.num_rows
        dist.num_bytes += path.stat().st_size
        if image_column == IMAGE_FILES_COLUMN:  # what downloading the config costs: its distinct images too
            names = set(pc.list_flatten(table.column(image_column)).to_pylist())
            dist.image_files = {name: _size_or_zero(Path(folder) / name) for name in names}
            dist.num_bytes += sum(dist.image_files.values())
    return dist


def stored_bytes(folder: Path, dists: list[Distribution]) -> int:
    """Bytes on disk of these configs together: their parquet files, and each image they use once
    (a config's own size counts the images it shares with others); the image paths come from
    the distributions (with their sizes), so no metadata file is read and no image asked again."""
    total = sum(path.stat().st_size for dist in dists for path in shard_files(folder, dist.config))
    images: dict[str, int] = {}
    for dist in dists:
        images.update(dist.image_files or {})
    return total + sum(images.values())


def _size_or_zero(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


class DamagedShardError(ValueError):
    """A parquet shard that cannot be read (truncated, overwritten, not parquet)."""


def _read_cheap_columns(path: Path) -> pa.Table:
    """``num_tokens``/``length``/``dataset`` and image paths of one shard; a damaged file is named."""
    try:
        parquet = pq.ParquetFile(path)
        columns = ["num_tokens", "length", "dataset"]
        if _has_column(parquet, IMAGE_PATH_COLUMN):
            columns.append(IMAGE_PATH_COLUMN)
        elif _has_column(parquet, f"{IMAGE_FILES_COLUMN}.list.element"):
            columns.append(IMAGE_FILES_COLUMN)
        return parquet.read(columns=columns)
    except (pa.ArrowException, OSError, KeyError) as err:
        raise DamagedShardError(f"{path}: damaged parquet shard, rebuild this config ({err})") from err


def _has_column(parquet: pq.ParquetFile, dotted: str) -> bool:
    meta = parquet.metadata
    return any(meta.schema.column(i).path == dotted for i in range(meta.num_columns))


def folder_distributions(folder: Path, configs: Optional[list[str]] = None) -> list[Distribution]:
    return [config_distribution(folder, name) for name in (configs or configs_in(folder))]


def length_label(tokens: int) -> str:
    """``8192 -> '8k'``; a length-free config (0) is ``'orig'``."""
    if not tokens:
        return "orig"
    return f"{tokens // 1024}k" if tokens % 1024 == 0 else str(tokens)


def plot_distributions(dists: list[Distribution], out_png: Path, title: str = "") -> Path:
    """Two panels: token lengths per length budget; images per example per dataset (PNG).

    matplotlib (the ``eval`` extra) is imported here only, with the non-interactive backend.
    """
    from mmlbdata.core.extras import require

    matplotlib = require("matplotlib", "eval", "the statistics plot (stats.png)")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    by_length: dict[int, list[int]] = {}
    by_dataset: dict[str, dict[int, list[int]]] = {}
    for dist in dists:
        for tokens, length, images, dataset in zip(dist.num_tokens, dist.lengths, dist.images, dist.datasets):
            by_length.setdefault(length, []).append(tokens)
            by_dataset.setdefault(dataset, {}).setdefault(length, []).append(images)
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    lengths = sorted(by_length, key=lambda k: (k == 0, k))  # length-free ("orig") configs last
    positions = list(range(1, len(lengths) + 1))
    left.boxplot([by_length[k] for k in lengths], positions=positions, showfliers=True)
    for i, k in zip(positions, lengths):
        if k:
            left.hlines(k, i - 0.4, i + 0.4, colors="tab:red", linestyles="dashed", linewidth=1)
    left.set_xticks(positions, [length_label(k) for k in lengths])
    left.set_yscale("log")
    left.set_xlabel("length budget (dashed red line: the budget)")
    left.set_ylabel("num_tokens per example")
    left.set_title("Token length per length budget")
    for dataset in sorted(by_dataset):
        points = sorted(by_dataset[dataset].items())
        mean = {k: sum(v) / len(v) for k, v in points}
        budgets = [k for k, _ in points if k]
        line = right.plot([positions[lengths.index(k)] for k in budgets], [mean[k] for k in budgets],
                          marker="o", label=dataset)
        if 0 in mean:  # the original benchmark: its own point, not on the budget line
            color = line[0].get_color() if budgets else None
            right.scatter([positions[lengths.index(0)]], [mean[0]], marker="s", color=color,
                          label=None if budgets else dataset)
    right.set_xticks(positions, [length_label(k) for k in lengths])
    right.set_yscale("symlog")
    right.margins(x=0.08, y=0.15)
    right.set_xlabel("length budget")
    right.set_ylabel("mean images per example")
    right.set_title("Images per example per dataset")
    right.legend(fontsize="small", ncol=2)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    out_png = Path(out_png)
    out_png.parent.mkdir(parents=True, exist_ok=True)
    # fixed metadata so the same statistics give the same bytes
    fig.savefig(out_png, format="png", dpi=100, metadata={"Software": None})
    plt.close(fig)
    return out_png
