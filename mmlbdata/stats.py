"""Statistics of built configs, recomputed from the parquet files (the source of truth)."""
from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .writer import SPLIT


def configs_in(folder: Path) -> list[str]:
    data = Path(folder) / "data"
    if not data.is_dir():
        return []
    return sorted(p.name for p in data.iterdir() if p.is_dir() and not p.name.startswith("."))


def shard_files(folder: Path, config: str) -> list[Path]:
    return sorted((Path(folder) / "data" / config).glob(f"{SPLIT}-*.parquet"))


def config_stats(folder: Path, config: str) -> dict:
    """Rows, images per row, token length min/mean/max, mean fill ratio (tokens / length)."""
    files = shard_files(folder, config)
    if not files:
        raise FileNotFoundError(f"{folder}/data/{config}: no parquet shard")
    table = pa.concat_tables([pq.read_table(f, columns=["num_tokens", "length"]) for f in files])
    rows = table.num_rows
    images = sum(_image_count(f) for f in files)
    tokens = table.column("num_tokens")
    lengths = table.column("length")
    fill = pc.mean(pc.divide(pc.cast(tokens, "double"), pc.cast(lengths, "double"))).as_py() if rows else 0.0
    return {
        "config": config,
        "rows": rows,
        "images": images,
        "images_per_row": images / rows if rows else 0.0,
        "tokens_min": pc.min(tokens).as_py() if rows else 0,
        "tokens_max": pc.max(tokens).as_py() if rows else 0,
        "tokens_mean": pc.mean(tokens).as_py() if rows else 0.0,
        "fill_ratio": fill or 0.0,
    }


def _image_count(path: Path) -> int:
    """Images in a shard from the list offsets of ``images``, never reading image bytes."""
    meta = pq.ParquetFile(path).metadata
    total = 0
    for rg in range(meta.num_row_groups):
        group = meta.row_group(rg)
        for col in range(group.num_columns):
            column = group.column(col)
            if column.path_in_schema.startswith("images.") and column.path_in_schema.endswith("path"):
                total += column.num_values
    return total
