"""Write a built config as parquet shards that ``datasets.load_dataset(folder, config)`` reads.

Layout of an output folder::

    README.md                      YAML front matter: configs (data_files) + dataset_info
    data/<config>/test-00000-of-00002.parquet
    manifests/<config>.json        what was built, from what, with which statistics and skips

Properties:

* **streaming**: rows are buffered for one row group at most (bounded by bytes), so memory does not
  grow with the number of examples;
* **deduplicated images**: image bytes are dictionary-encoded in each row group, so an image shared
  by many rows of a group (the six depths of one question, a common distractor) is stored once, on
  disk and in memory (the buffer is an Arrow dictionary array bounded by distinct bytes);
* **atomic**: shards are written into ``data/.<config>.partial/`` and moved into place only when
  the whole config is complete; a crash never leaves a half-finished config looking complete;
* **deterministic**: same rows in the same order give byte-identical files.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Optional

import pyarrow as pa
import pyarrow.parquet as pq
from datasets import Features

from . import __version__
from .schema import FEATURES
from .store import ImageRef

SPLIT = "test"
DEFAULT_ROW_GROUP_BYTES = 256 << 20  # distinct image bytes held per row group
DEFAULT_ROW_GROUP_ROWS = 2000
DEFAULT_SHARD_BYTES = 1 << 30
DICTIONARY_PAGE_LIMIT = (1 << 31) - (64 << 20)  # stay under parquet's 2 GiB page limit


def config_data_dir(out_dir: Path, config: str) -> Path:
    return Path(out_dir) / "data" / config


def data_files_pattern(config: str) -> str:
    return f"data/{config}/{SPLIT}-*.parquet"


@dataclass
class ConfigStats:
    """Statistics of one written config (also stored in its manifest)."""

    config: str
    num_rows: int = 0
    num_images: int = 0
    num_unique_images: int = 0
    image_bytes_unique: int = 0
    num_bytes: int = 0
    num_shards: int = 0
    tokens_min: Optional[int] = None
    tokens_max: Optional[int] = None
    tokens_sum: int = 0
    fill_sum: float = 0.0
    rows_with_length: int = 0  # rows with a token budget (0 for length-free original benchmarks)
    seconds: float = 0.0
    fingerprint: str = ""

    def add(self, row: dict[str, Any]) -> None:
        tokens = int(row["num_tokens"])
        self.num_rows += 1
        self.num_images += len(row["images"])
        self.tokens_sum += tokens
        self.tokens_min = tokens if self.tokens_min is None else min(self.tokens_min, tokens)
        self.tokens_max = tokens if self.tokens_max is None else max(self.tokens_max, tokens)
        if row.get("length"):
            self.rows_with_length += 1
            self.fill_sum += tokens / int(row["length"])

    @property
    def tokens_mean(self) -> float:
        return self.tokens_sum / self.num_rows if self.num_rows else 0.0

    @property
    def fill_ratio(self) -> Optional[float]:
        """Mean num_tokens / length over rows with a budget; None when no row has one."""
        return self.fill_sum / self.rows_with_length if self.rows_with_length else None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        fill = self.fill_ratio
        data.update(tokens_mean=round(self.tokens_mean, 2), fill_ratio=None if fill is None else round(fill, 4))
        return data


class _RowGroup:
    """Rows of one row group; each distinct image's bytes are held once (a dictionary)."""

    def __init__(self, image_columns: list[str]):
        self.rows: list[dict] = []
        self.blobs: list[bytes] = []
        self.index: dict[str, int] = {}  # image path -> position in blobs
        self.unique_bytes = 0
        self.images = {name: {"offsets": [0], "indices": [], "names": []} for name in image_columns}

    def intern(self, path: str, read: Callable[[], bytes]) -> tuple[int, bool]:
        """Position of the image in this group's dictionary; reads the file only once."""
        position = self.index.get(path)
        if position is not None:
            return position, False
        blob = read()
        position = self.index[path] = len(self.blobs)
        self.blobs.append(blob)
        self.unique_bytes += len(blob)
        return position, True


def _dictionary_schema(schema: pa.Schema, image_columns: list[str]) -> pa.Schema:
    """Image ``bytes`` as ``dictionary<int32, binary>``: parquet stores each distinct image once."""
    image_struct = pa.struct([("bytes", pa.dictionary(pa.int32(), pa.binary())), ("path", pa.string())])
    fields = [pa.field(f.name, pa.list_(image_struct)) if f.name in image_columns else f for f in schema]
    return pa.schema(fields)


def _features_metadata(features: Features) -> dict[bytes, bytes]:
    """The schema metadata ``datasets`` reads back to restore ``Image()`` and friends."""
    return {b"huggingface": json.dumps({"info": {"features": features.to_dict()}}).encode()}


class ConfigWriter:
    """Streams one config's rows into parquet shards; see the module docstring."""

    def __init__(
        self,
        out_dir: os.PathLike,
        config: str,
        features: Features = FEATURES,
        *,
        row_group_bytes: int = DEFAULT_ROW_GROUP_BYTES,
        shard_bytes: int = DEFAULT_SHARD_BYTES,
        row_group_rows: int = DEFAULT_ROW_GROUP_ROWS,
        image_name: Callable[[ImageRef], str] = lambda ref: ref.name,
    ):
        self.out_dir = Path(out_dir)
        self.config = config
        self.features = features
        self.image_columns = [name for name, feat in features.items() if _is_image_list(feat)]
        self.schema = features.arrow_schema
        self.write_schema = _dictionary_schema(self.schema, self.image_columns)
        self.row_group_bytes = row_group_bytes
        self.row_group_rows = row_group_rows
        self.shard_bytes = shard_bytes
        self.image_name = image_name
        self.staging = self.out_dir / "data" / f".{config}.partial"
        self.stats = ConfigStats(config)
        self._group = _RowGroup(self.image_columns)
        self._writer: Optional[pq.ParquetWriter] = None
        self._shard_paths: list[Path] = []
        self._unique: set[str] = set()
        self._started = time.perf_counter()
        if self.staging.exists():
            shutil.rmtree(self.staging)
        self.staging.mkdir(parents=True)

    # -- rows ----------------------------------------------------------------------------------
    def write(self, row: dict[str, Any]) -> None:
        group = self._group
        for column in self.image_columns:
            slots = group.images[column]
            for ref in row[column]:
                position, new = group.intern(ref.path, ref.read_bytes)
                if new and ref.path not in self._unique:
                    self._unique.add(ref.path)
                    self.stats.num_unique_images += 1
                    self.stats.image_bytes_unique += len(group.blobs[position])
                slots["indices"].append(position)
                slots["names"].append(self.image_name(ref))
            slots["offsets"].append(len(slots["indices"]))
        group.rows.append({k: v for k, v in row.items() if k not in self.image_columns})
        self.stats.add(row)
        if group.unique_bytes >= self.row_group_bytes or len(group.rows) >= self.row_group_rows:
            self._flush()

    def _table(self, group: _RowGroup) -> pa.Table:
        dictionary = pa.array(group.blobs, pa.binary())
        arrays = []
        for field in self.write_schema:
            if field.name in self.image_columns:
                slots = group.images[field.name]
                codes = pa.DictionaryArray.from_arrays(pa.array(slots["indices"], pa.int32()), dictionary)
                items = pa.StructArray.from_arrays([codes, pa.array(slots["names"], pa.string())],
                                                   names=["bytes", "path"])
                arrays.append(pa.ListArray.from_arrays(pa.array(slots["offsets"], pa.int32()), items))
            else:
                arrays.append(pa.array([r[field.name] for r in group.rows], type=field.type))
        return pa.Table.from_arrays(arrays, schema=self.write_schema)

    def _flush(self) -> None:
        if not self._group.rows:
            return
        if self._writer is None:
            path = self.staging / f"shard-{len(self._shard_paths):05d}.parquet"
            self._shard_paths.append(path)
            # store_schema=False: readers see plain binary, not the dictionary type used to write
            self._writer = pq.ParquetWriter(
                path, self.write_schema, compression="zstd", use_dictionary=True, store_schema=False,
                dictionary_pagesize_limit=DICTIONARY_PAGE_LIMIT, write_statistics=False,
            )
            self._writer.add_key_value_metadata(_features_metadata(self.features))
        table = self._table(self._group)
        self._writer.write_table(table, row_group_size=table.num_rows)
        self._group = _RowGroup(self.image_columns)
        if self._shard_paths[-1].stat().st_size >= self.shard_bytes:
            self._writer.close()
            self._writer = None

    # -- end -----------------------------------------------------------------------------------
    def abort(self) -> None:
        """Drop everything written so far (the previous version of the config stays)."""
        if self._writer is not None:
            self._writer.close()
        shutil.rmtree(self.staging, ignore_errors=True)

    def close(self) -> ConfigStats:
        """Finish the last shard and move the config into place atomically."""
        self._flush()
        if self._writer is not None:
            self._writer.close()
        if not self._shard_paths:  # an empty config still gets one valid, empty shard
            path = self.staging / "shard-00000.parquet"
            pq.write_table(self.schema.with_metadata(_features_metadata(self.features)).empty_table(),
                           path, compression="zstd")
            self._shard_paths.append(path)
        total = len(self._shard_paths)
        digest = hashlib.sha256()
        for index, path in enumerate(self._shard_paths):
            final = path.with_name(f"{SPLIT}-{index:05d}-of-{total:05d}.parquet")
            path.rename(final)
            with open(final, "rb") as handle:
                while block := handle.read(1 << 20):
                    digest.update(block)
            self.stats.num_bytes += final.stat().st_size
        self.stats.num_shards = total
        self.stats.fingerprint = digest.hexdigest()
        self.stats.seconds = round(time.perf_counter() - self._started, 3)
        target = config_data_dir(self.out_dir, self.config)
        if target.exists():
            old = target.with_name(f".{self.config}.old")
            shutil.rmtree(old, ignore_errors=True)
            target.rename(old)
            self.staging.rename(target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            self.staging.rename(target)
        return self.stats


def _is_image_list(feature: Any) -> bool:
    from datasets import Image, List, Sequence

    inner = getattr(feature, "feature", None)
    return isinstance(feature, (List, Sequence)) and isinstance(inner, Image)


def write_config(
    out_dir: os.PathLike,
    config: str,
    rows: Iterable[dict[str, Any]],
    features: Features = FEATURES,
    *,
    manifest: Optional[dict[str, Any]] = None,
    **writer_options: Any,
) -> ConfigStats:
    """Write ``rows`` as ``config`` under ``out_dir``, then its manifest and the README YAML.

    If ``rows`` raises, nothing of this config is left behind (a previous build of it stays).
    """
    writer = ConfigWriter(out_dir, config, features, **writer_options)
    try:
        for row in rows:
            writer.write(row)
    except BaseException:
        writer.abort()
        raise
    stats = writer.close()
    # wall-clock time stays out of the manifest so that rebuilds give byte-identical manifests
    recorded = {k: v for k, v in stats.to_dict().items() if k != "seconds"}
    write_manifest(out_dir, config, {**(manifest or {}), "stats": recorded})
    from .card import update_readme

    update_readme(out_dir, config, features, stats)
    return stats


def manifest_path(out_dir: os.PathLike, config: str) -> Path:
    return Path(out_dir) / "manifests" / f"{config}.json"


def write_manifest(out_dir: os.PathLike, config: str, content: dict[str, Any]) -> Path:
    path = manifest_path(out_dir, config)
    path.parent.mkdir(parents=True, exist_ok=True)
    body = {"config": config, "mmlbdata_version": __version__, **content}
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(body, indent=2, sort_keys=True, default=str) + "\n")
    os.replace(tmp, path)
    return path


def read_manifest(out_dir: os.PathLike, config: str) -> Optional[dict[str, Any]]:
    path = manifest_path(out_dir, config)
    return json.loads(path.read_text()) if path.exists() else None
