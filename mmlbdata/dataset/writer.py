"""Write a built config as files that ``datasets.load_dataset(folder, config)`` reads.

Two layouts; ``files`` is the default (ARCHITECTURE.md has the figures that chose it)::

    README.md                          YAML front matter: configs (data_files) + dataset_info
    <config>.metadata.parquet          files: one row per example, images as relative paths
    imagefolder-hint/1.png, 2.png      files: two 1-pixel PNGs every config's data files name, so
                                       that datasets reads the folder with its image builder
    images/<group>/<users>/ab/<sha256>.<ext>   files: each distinct image once per folder, in the
                                       partition of the configs that use it (partitions.py)
    data/<config>/test-00000-of-00002.parquet   embedded: images inside the rows
    manifests/<config>.json            what was built, from what, with which statistics and skips

**files** (:class:`FilesConfigWriter`): the config's README entry names
``data_files: [<config>.metadata.parquet, imagefolder-hint/1.png, imagefolder-hint/2.png,
images/<group>/<users>/** for each partition it uses]`` and
``metadata_filenames: [<config>.metadata.parquet]``, so ``datasets``' folder-based builder
(imagefolder) reads the metadata rows and turns the ``images_file_names`` column into the
``images`` list of ``Image()``, decoded on access, in memory and streaming. An image used by six
depths, five lengths and two configs is one file; the Arrow cache of an in-memory load holds
paths, not bytes. Image files are content-addressed, so two builds placing one are harmless, and
one photo under two source names is one file (staged once); the
metadata file is renamed into place last: a config is complete exactly when
its ``<config>.metadata.parquet`` exists. New images and the metadata are written under
``.<config>.partial/``; at the end, under the family's lock, :class:`~mmlbdata.dataset.partitions.Relayout`
gives every image its partition (links, never moves: safe at every step), then the metadata is
put in place, so a failed build leaves no half config and breaks no other. A build never deletes
an image another config may use (others, or a build beside it): ``mmlb gc`` does (``cleanup.py``).

**embedded** (:class:`ConfigWriter`): the rows carry the image bytes, in parquet shards. Kept for
small self-contained configs (one file per config, no image tree). Its shards are:

* **bounded for readers**: a row group holds at most :data:`DEFAULT_ROW_GROUP_BYTES` of *decoded*
  image bytes (every image slot counted, as a reader materialises them; two rows at least) and
  :data:`DEFAULT_ROW_GROUP_ROWS` rows, so ``load_dataset`` (in memory or streaming) never holds
  more than one such group, whatever the size of the config;
* **deduplicated where it pays**: a shard whose first row group shares images between slots (the
  six depths of one question, a common distractor) stores image bytes dictionary-encoded, each
  distinct image once per row group; a shard whose rows share nothing is written plain, which a
  reader decodes without holding a dictionary beside the values;
* **atomic**: shards are written into ``data/.<config>.partial/`` and moved into place only when
  the whole config is complete; a crash never leaves a half-finished config looking complete.

Both are **deterministic**: same rows in the same order give byte-identical files. The build layer
(:mod:`mmlbdata.dataset.build`) holds the config's lock, writes the manifest and updates the README.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Optional

import pyarrow as pa
import pyarrow.parquet as pq
from datasets import Features

from mmlbdata import __version__
from mmlbdata.core import locks
from mmlbdata.core.paths import resolve_inside
from mmlbdata.core.schema import FEATURES
from mmlbdata.core.store import ImageRef, file_sha256, image_extension
from mmlbdata.dataset.partitions import (
    FILE_NAMES_SUFFIX,
    IMAGES_DIR,
    METADATA_SUFFIX,
    Relayout,
    RelayoutError,
    existing_partitions,
    family_lock_path,
    find_image,
    image_key,
)
from mmlbdata.sources.download import file_digest

logger = logging.getLogger("mmlbdata")

SPLIT = "test"
# Row groups are bounded by what a reader materialises, not by what they weigh on disk. `datasets`
# reads a parquet file one row group per batch (packaged_modules/parquet: batch_size is the first
# row group's num_rows) and expands dictionary pages, so a 26 MB row group on disk whose 13,704
# image slots decode to 2.2 GB overflowed Arrow's 2 GiB binary array ("Nested data conversions not
# implemented for chunked array outputs"). `datasets` itself aims for row groups of at most 100 MB
# uncompressed (datasets.config.MAX_ROW_GROUP_SIZE = "100MB", used by push_to_hub and to_parquet)
# and the Hub's dataset viewer recommends "100-300MB in-memory" per row group (it refuses groups
# over 286 MiB). So: 100 MB of decoded image bytes, and at most 100 rows, the record batch size
# `datasets` uses for image datasets (datasets.config.ARROW_RECORD_BATCH_SIZE_FOR_IMAGE_DATASETS).
# A row group holds at least two rows even past the budget (so up to ~110 MB at 128K, still in the
# viewer's range): `datasets` hands a one-row table to ArrowWriter.write_row, which buffers rows
# until its writer_batch_size (100 for image datasets) before writing; one-row row groups of 58 MB
# made an in-memory load of a 128K config hold 100 of them (3 GB peak RSS measured with 6 rows).
DEFAULT_ROW_GROUP_BYTES = 100 * 10**6
DEFAULT_ROW_GROUP_ROWS = 100
MIN_ROW_GROUP_ROWS = 2
DEFAULT_SHARD_BYTES = 1 << 30
# The failure was the size, not the dictionary: the 600-row vh_single_8k as one row group fails
# both ways (dictionary: written, then unreadable; plain: the 2.2 GB binary column cannot even be
# built). Dictionary-encode a shard's image bytes when its first row group's distinct bytes are at
# most this share of its decoded bytes (otherwise the dictionary only costs readers memory).
DEDUP_PAYS_BELOW = 0.8


# `datasets` picks ONE builder for a whole folder (or Hub repository) from the data files of the
# first config in its README (load.py, LocalDatasetModuleFactory / HubDatasetModuleFactory.get_module:
# `next(iter(metadata_configs.values()))["data_files"]`): infer_module_for_data_files_list counts the
# files' extensions, every suffix of a name (`<config>.metadata.parquet` counts `.metadata` and
# `.parquet`; only `metadata.csv/jsonl/parquet` are known metadata, sorted last) and a draw goes to
# `.parquet`. A text-only config (its metadata alone) or a one-image config listed first made every
# config of the folder read as plain parquet (CastError: `images_file_names` vs `images`). Every
# files-layout config therefore names these two 1-pixel PNGs after its metadata: `.png` counts 2
# against `.parquet`'s 1 whatever the config holds and wherever it is listed, in datasets 4.0 and
# 5.2 (ARCHITECTURE.md, "Dataset layout"). The image builder downloads them with a config's files
# (134 bytes) and yields rows from the metadata only, so they are in no row.
IMAGE_FOLDER_HINT = ("imagefolder-hint/1.png", "imagefolder-hint/2.png")
HINT_PNG = (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x00\x00\x00\x00:~\x9bU"
            b"\x00\x00\x00\nIDATx\x9cc\xf8\x0f\x00\x01\x01\x01\x00\xb18\xf6\x14\x00\x00\x00\x00IEND\xaeB`\x82")


def write_image_folder_hint(out_dir: os.PathLike) -> None:
    """Put :data:`IMAGE_FOLDER_HINT` in ``out_dir`` (atomically; parallel builds write the same bytes)."""
    for relative in IMAGE_FOLDER_HINT:
        path = Path(out_dir) / relative
        try:
            if path.read_bytes() == HINT_PNG:
                continue
        except OSError:
            path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_bytes(HINT_PNG)
        os.replace(tmp, path)


LAYOUTS = ("files", "embedded")
DEFAULT_LAYOUT = "files"
# Extensions datasets' imagefolder accepts that our images use; other files are sniffed.
_IMAGE_EXTENSIONS = {"jpg", "png", "webp", "gif", "bmp", "tif", "tiff"}



def metadata_filename(config: str) -> str:
    return f"{config}{METADATA_SUFFIX}"


def metadata_path(out_dir: os.PathLike, config: str) -> Path:
    """``<config>.metadata.parquet`` at the folder's root: a ``files``-layout config's rows."""
    return Path(out_dir) / metadata_filename(config)


def config_data_dir(out_dir: Path, config: str) -> Path:
    return Path(out_dir) / "data" / config


def staging_dir(out_dir: Path, config: str) -> Path:
    return Path(out_dir) / "data" / f".{config}.partial"


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
    image_bytes_decoded: int = 0  # every image slot: what a reader materialises
    num_bytes: int = 0  # on disk
    num_shards: int = 0
    num_row_groups: int = 0
    row_group_decoded_max: int = 0  # largest row group's decoded image bytes
    tokens_min: Optional[int] = None
    tokens_max: Optional[int] = None
    tokens_sum: int = 0
    fill_sum: float = 0.0
    rows_with_length: int = 0  # rows with a token budget (0 for length-free original benchmarks)
    seconds: float = 0.0
    fingerprint: str = ""
    layout: str = "embedded"
    metadata_bytes: int = 0  # files layout: the <config>.metadata.parquet alone
    images_written: int = 0  # files layout: image files this build added to the folder
    image_dirs: Optional[list] = None  # files layout: the partitions its rows use (README data files)
    # files layout: the re-partitioning's configs whose metadata it rewrote, its mark, and whether
    # another build's mark was there (build.refresh_relaid_manifests)
    relayout: Optional[dict] = None

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
    """Rows of one row group; each distinct image's bytes are held once (a dictionary), keyed by
    content: the same bytes under two source names (a re-uploaded photo) are one entry."""

    def __init__(self, image_columns: list[str]):
        self.rows: list[dict] = []
        self.blobs: list[bytes] = []
        self.digests: list[str] = []  # SHA-256 of each blob
        self.index: dict[str, int] = {}  # image path -> position in blobs
        self.by_digest: dict[str, int] = {}  # SHA-256 -> position in blobs
        self.unique_bytes = 0
        self.decoded_bytes = 0
        self.images = {name: {"offsets": [0], "indices": [], "names": []} for name in image_columns}

    def intern(self, path: str, read: Callable[[], bytes], sha256: Optional[str] = None) -> tuple[int, bool]:
        """Position of the image in this group's dictionary and whether its bytes are new to the
        group; reads each path only once, and hashes it only when ``sha256`` is not known (a store
        object is named by it)."""
        position = self.index.get(path)
        new = False
        if position is None:
            blob = read()
            digest = sha256 or hashlib.sha256(blob).hexdigest()
            position = self.by_digest.get(digest)
            if position is None:
                position = self.by_digest[digest] = len(self.blobs)
                self.blobs.append(blob)
                self.digests.append(digest)
                self.unique_bytes += len(blob)
                new = True
            self.index[path] = position
        self.decoded_bytes += len(self.blobs[position])
        return position, new

    @property
    def dedup_pays(self) -> bool:
        return self.unique_bytes <= DEDUP_PAYS_BELOW * self.decoded_bytes


def _dictionary_schema(schema: pa.Schema, image_columns: list[str]) -> pa.Schema:
    """Image ``bytes`` as ``dictionary<int32, binary>``: parquet stores each distinct image once."""
    image_struct = pa.struct([("bytes", pa.dictionary(pa.int32(), pa.binary())), ("path", pa.string())])
    fields = [pa.field(f.name, pa.list_(image_struct)) if f.name in image_columns else f for f in schema]
    return pa.schema(fields)


def _features_metadata(features: Features) -> dict[bytes, bytes]:
    """The schema metadata ``datasets`` reads back to restore ``Image()`` and friends."""
    return {b"huggingface": json.dumps({"info": {"features": features.to_dict()}}).encode()}


def _plain_dictionary_columns(schema: pa.Schema, image_columns: list[str]) -> list[str]:
    """Every leaf column but the image bytes: small repeated values still get parquet dictionaries."""
    image_bytes = {f"{name}.list.element.bytes" for name in image_columns}
    return [path for field in schema for path in _leaf_paths(field.name, field.type) if path not in image_bytes]


def _leaf_paths(prefix: str, kind: pa.DataType) -> list[str]:
    """Parquet's dotted leaf column paths of an Arrow field (``images.list.element.bytes``)."""
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return _leaf_paths(f"{prefix}.list.element", kind.value_type)
    if pa.types.is_struct(kind):
        return [p for i in range(kind.num_fields) for p in _leaf_paths(f"{prefix}.{kind.field(i).name}",
                                                                           kind.field(i).type)]
    return [prefix]


class ConfigWriter:
    """Streams one config's rows into parquet shards; see the module docstring.

    ``dictionary``: ``None`` decides per shard from its first row group (dedup where it pays);
    ``True`` / ``False`` force dictionary-encoded / plain image bytes (benchmarks compare both).
    """

    def __init__(
        self,
        out_dir: os.PathLike,
        config: str,
        features: Features = FEATURES,
        *,
        row_group_bytes: int = DEFAULT_ROW_GROUP_BYTES,
        shard_bytes: int = DEFAULT_SHARD_BYTES,
        row_group_rows: int = DEFAULT_ROW_GROUP_ROWS,
        dictionary: Optional[bool] = None,
        image_name: Callable[[ImageRef], str] = lambda ref: ref.name,
    ):
        self.out_dir = Path(out_dir)
        self.config = config
        self.features = features
        self.image_columns = [name for name, feat in features.items() if _is_image_list(feat)]
        self.schema = features.arrow_schema
        self.dictionary_schema = _dictionary_schema(self.schema, self.image_columns)
        self.row_group_bytes = row_group_bytes
        self.row_group_rows = row_group_rows
        self.shard_bytes = shard_bytes
        self.dictionary = dictionary
        self.image_name = image_name
        self.staging = staging_dir(self.out_dir, config)
        self.stats = ConfigStats(config)
        self._group = _RowGroup(self.image_columns)
        self._writer: Optional[pq.ParquetWriter] = None
        self._shard_dictionary = False  # the encoding of the open shard's image bytes
        self._shard_paths: list[Path] = []
        self._unique: set[str] = set()
        self._sizes: dict[str, int] = {}
        self._started = time.perf_counter()
        if self.staging.exists():  # left by a crashed build of this config (the caller holds its lock)
            shutil.rmtree(self.staging)
        self.staging.mkdir(parents=True)

    # -- rows ----------------------------------------------------------------------------------
    def write(self, row: dict[str, Any]) -> None:
        group = self._group
        if len(group.rows) >= MIN_ROW_GROUP_ROWS and \
                group.decoded_bytes + self._decoded_size(row) > self.row_group_bytes:
            self._flush()
            group = self._group
        for column in self.image_columns:
            slots = group.images[column]
            for ref in row[column]:
                position, new = group.intern(ref.path, ref.read_bytes, ref.sha256)
                if new and group.digests[position] not in self._unique:  # distinct bytes, not names
                    self._unique.add(group.digests[position])
                    self.stats.num_unique_images += 1
                    self.stats.image_bytes_unique += len(group.blobs[position])
                slots["indices"].append(position)
                slots["names"].append(self.image_name(ref))
            slots["offsets"].append(len(slots["indices"]))
        group.rows.append({k: v for k, v in row.items() if k not in self.image_columns})
        self.stats.add(row)
        full = group.decoded_bytes >= self.row_group_bytes and len(group.rows) >= MIN_ROW_GROUP_ROWS
        if full or len(group.rows) >= self.row_group_rows:
            self._flush()

    def _decoded_size(self, row: dict[str, Any]) -> int:
        """Bytes the row's image slots decode to, from file sizes (no read)."""
        total = 0
        for column in self.image_columns:
            for ref in row[column]:
                size = self._sizes.get(ref.path)
                if size is None:
                    size = self._sizes[ref.path] = os.path.getsize(ref.path)
                total += size
        return total

    def _table(self, group: _RowGroup, dictionary: bool) -> pa.Table:
        blobs = pa.array(group.blobs, pa.binary())
        schema = self.dictionary_schema if dictionary else self.schema
        arrays = []
        for field in schema:
            if field.name in self.image_columns:
                slots = group.images[field.name]
                indices = pa.array(slots["indices"], pa.int32())
                values = pa.DictionaryArray.from_arrays(indices, blobs) if dictionary else blobs.take(indices)
                items = pa.StructArray.from_arrays([values, pa.array(slots["names"], pa.string())],
                                                   names=["bytes", "path"])
                arrays.append(pa.ListArray.from_arrays(pa.array(slots["offsets"], pa.int32()), items))
            else:
                arrays.append(pa.array([r[field.name] for r in group.rows], type=field.type))
        return pa.Table.from_arrays(arrays, schema=schema)

    def _open_shard(self, dictionary: bool) -> None:
        path = self.staging / f"shard-{len(self._shard_paths):05d}.parquet"
        self._shard_paths.append(path)
        self._shard_dictionary = dictionary
        # store_schema=False: readers see plain binary either way, not the type used to write
        schema = self.dictionary_schema if dictionary else self.schema
        use_dictionary = True if dictionary else _plain_dictionary_columns(self.schema, self.image_columns)
        self._writer = pq.ParquetWriter(
            path, schema, compression="zstd", use_dictionary=use_dictionary, store_schema=False,
            dictionary_pagesize_limit=2 * self.row_group_bytes + (64 << 20), write_statistics=False,
        )
        self._writer.add_key_value_metadata(_features_metadata(self.features))

    def _flush(self) -> None:
        group = self._group
        if not group.rows:
            return
        if self._writer is None:
            self._open_shard(group.dedup_pays if self.dictionary is None else self.dictionary)
        table = self._table(group, self._shard_dictionary)
        self._writer.write_table(table, row_group_size=table.num_rows)
        self.stats.num_row_groups += 1
        self.stats.image_bytes_decoded += group.decoded_bytes
        self.stats.row_group_decoded_max = max(self.stats.row_group_decoded_max, group.decoded_bytes)
        self._group = _RowGroup(self.image_columns)
        if self._shard_paths[-1].stat().st_size >= self.shard_bytes:
            self._writer.close()
            self._writer = None

    # -- end -----------------------------------------------------------------------------------
    def abort(self) -> None:
        """Drop everything written so far (the previous version of the config stays)."""
        if self._writer is not None:
            try:
                self._writer.close()
            except OSError:  # e.g. the disk is still full: the folder goes anyway
                pass
        shutil.rmtree(self.staging, ignore_errors=True)
        remove_if_empty(self.staging.parent)

    def close(self) -> ConfigStats:
        """Finish the last shard and move the config into place atomically."""
        self._flush()
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        if not self._shard_paths:  # an empty config still gets one valid, empty shard
            path = self.staging / "shard-00000.parquet"
            pq.write_table(self.schema.with_metadata(_features_metadata(self.features)).empty_table(),
                           path, compression="zstd")
            self._shard_paths.append(path)
        self._name_shards()
        self.stats.seconds = round(time.perf_counter() - self._started, 3)
        self._move_into_place()
        return self.stats

    def _name_shards(self) -> None:
        """Final ``test-i-of-n`` names; the fingerprint hashes every shard's bytes in order."""
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

    def _move_into_place(self) -> None:
        target = config_data_dir(self.out_dir, self.config)
        if target.exists():
            old = target.with_name(f".{self.config}.old")
            shutil.rmtree(old, ignore_errors=True)
            target.rename(old)
            self.staging.rename(target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            self.staging.rename(target)
        stale = metadata_path(self.out_dir, self.config)  # the config was in the files layout before
        if stale.exists():
            stale.unlink()


class FilesConfigWriter:
    """Streams one config's rows into ``<config>.metadata.parquet`` + the shared image tree.

    ``image_group`` names the folder under ``images/`` (the build layer passes the family, so
    every config and length of a family stores an image once). New images are staged under its
    own name; at close, under the family's lock, :class:`~mmlbdata.dataset.partitions.Relayout`
    gives each image of the family the partition of the configs using it and rewrites the paths.
    Rows are buffered :data:`DEFAULT_ROW_GROUP_ROWS` at a time (no image bytes in them).
    """

    def __init__(self, out_dir: os.PathLike, config: str, features: Features = FEATURES, *,
                 image_group: str = "shared", row_group_rows: int = DEFAULT_ROW_GROUP_ROWS):
        self.out_dir = Path(out_dir)
        self.config = config
        self.features = features
        self.image_columns = [name for name, feat in features.items() if _is_image_list(feat)]
        resolve_inside(self.out_dir, f"{IMAGES_DIR}/{image_group}/{config}", what="image group")  # plain names
        self.image_group = image_group
        self.group_dir = self.out_dir / IMAGES_DIR / image_group
        self.image_prefix = f"{IMAGES_DIR}/{image_group}/{config}"  # until Relayout names the partition
        self._partitions = existing_partitions(self.group_dir)  # where earlier builds put the family's images
        # the loaded features ride in the schema: the card and stats read them without a README
        self.schema = metadata_schema(features, self.image_columns).with_metadata(_features_metadata(features))
        self.row_group_rows = row_group_rows
        self.stats = ConfigStats(config, layout="files")
        self.final = metadata_path(self.out_dir, config)
        self.staging = self.out_dir / f".{config}.partial"  # new images + metadata until close
        self.partial = self.staging / self.final.name
        self._rows: list[dict] = []
        self._placed: dict[str, tuple[str, int]] = {}  # source path -> (relative path, bytes)
        self._staged: dict[str, int] = {}  # relative path -> bytes of each new image waiting in staging
        self._sources: dict[str, str] = {}  # relative path -> the file it was built from (images found in place)
        self.relaid: list[str] = []  # configs whose metadata the re-partitioning rewrote at close
        self._unique: set[str] = set()
        self._started = time.perf_counter()
        if self.staging.exists():  # left by a crashed build of this config (the caller holds its lock)
            shutil.rmtree(self.staging)
        try:  # no staging folder outlives a writer that was never made (write_config aborts made ones)
            self.staging.mkdir(parents=True)
            self._writer = pq.ParquetWriter(self.partial, self.schema, compression="zstd", write_statistics=False)
        except BaseException:  # a full disk, or `kill` just then
            shutil.rmtree(self.staging, ignore_errors=True)
            raise

    def write(self, row: dict[str, Any]) -> None:
        stored = {k: v for k, v in row.items() if k not in self.image_columns}
        for column in self.image_columns:
            names = []
            for ref in row[column]:
                relative, size = self._place(ref)
                if relative not in self._unique:
                    self._unique.add(relative)
                    self.stats.num_unique_images += 1
                    self.stats.image_bytes_unique += size
                self.stats.image_bytes_decoded += size
                names.append(relative)
            stored[column + FILE_NAMES_SUFFIX] = names
        self._rows.append(stored)
        self.stats.add(row)
        if len(self._rows) >= self.row_group_rows:
            self._flush()

    def _place(self, ref: ImageRef) -> tuple[str, int]:
        """The image's path in the folder, copied there (atomically) the first time it is seen."""
        placed = self._placed.get(ref.path)
        if placed is None:
            digest = ref.sha256 or file_sha256(ref.path)  # a store object is named by its hash: not read again
            relative = f"{self.image_prefix}/{digest[:2]}/{digest}.{image_file_extension(ref.path)}"
            if relative in self._staged:  # the same bytes under another source name: one file
                size = self._staged[relative]
            elif (found := find_image(self.group_dir, image_key(relative), self._partitions)) is not None:
                size = found.stat().st_size  # placed by an earlier build (or another config): complete
                self._sources[relative] = ref.path  # where to copy it from, should a parallel rebuild drop it
            else:  # staged, moved into place at close: an aborted build leaves no image behind
                staged = self.staging / relative
                staged.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(ref.path, staged)
                size = self._staged[relative] = staged.stat().st_size
            placed = self._placed[ref.path] = (relative, size)
        return placed

    def _flush(self) -> None:
        if self._rows:
            table = pa.Table.from_pylist(self._rows, schema=self.schema)
            self._writer.write_table(table, row_group_size=table.num_rows)
            self.stats.num_row_groups += 1
            self._rows = []

    def abort(self) -> None:
        """Drop the staging folder (new images and partial metadata); the previous build stays."""
        try:
            self._writer.close()
        except OSError:  # e.g. the disk is still full: the folder goes anyway
            pass
        shutil.rmtree(self.staging, ignore_errors=True)

    def close(self, before_place: Optional[Callable[[ConfigStats], None]] = None,
              after_place: Optional[Callable[[ConfigStats], None]] = None) -> ConfigStats:
        """Finish the metadata, re-partition the family's images under its lock (partitions.Relayout:
        new names linked, metadata rewritten, nothing moved), put the metadata in place (from now
        on the config exists), then remove the old names. ``before_place`` / ``after_place``: the
        build layer's manifest and README steps, run under the same lock (no other build of the
        family re-partitions between them)."""
        self._flush()
        self._writer.close()
        with locks.hold(family_lock_path(self.out_dir, self.image_group)):
            relayout = Relayout(self.out_dir, self.image_group, self.config, self.partial, self._sources).plan()
            relayout.link()
            relayout.rewrite()
            self.relaid = relayout.changed
            self.stats.relayout = {"relaid": relayout.changed, "check_all": relayout.stale}
            self.stats.image_dirs = relayout.folders.get(self.config, [])
            self.stats.images_written = relayout.added
            # the metadata's paths name the images' hashes, so its digest covers them too
            self.stats.fingerprint = file_digest(self.partial, "sha256")
            self.stats.metadata_bytes = self.partial.stat().st_size
            self.stats.num_bytes = self.stats.metadata_bytes + self.stats.image_bytes_unique
            self.stats.num_shards = 1
            self.stats.seconds = round(time.perf_counter() - self._started, 3)
            self._step(before_place, placed=False)
            self._step(lambda _: write_image_folder_hint(self.out_dir), placed=False)
            self._step(lambda _: os.replace(self.partial, self.final), placed=False)
            self._step(after_place, placed=True)
            self._step(lambda _: relayout.finish(), placed=True)
        shutil.rmtree(self.staging, ignore_errors=True)
        shutil.rmtree(config_data_dir(self.out_dir, self.config), ignore_errors=True)  # an older embedded build
        remove_if_empty(self.out_dir / "data")
        return self.stats

    def _step(self, step: Optional[Callable[[ConfigStats], None]], placed: bool) -> None:
        """One step after the metadata were rewritten; a failure says what state the folder is in."""
        if step is None:
            return
        try:
            step(self.stats)
        except OSError as err:
            if isinstance(err, RelayoutError):
                raise
            if placed:
                state = (f"{self.config} is in place, but its manifest or README entry may lag and the re-partitioning "
                         f"of images/{self.image_group} is unfinished: every config built before loads as before, and "
                         "the next build into the folder finishes both")
            else:
                state = (f"{self.config} was not added (its staged rows are removed; its previous build, if any, is "
                         f"kept); every config built before loads as before, and the next build of the family "
                         f"finishes the re-partitioning of images/{self.image_group}")
            raise RelayoutError(err, state) from err


def metadata_schema(features: Features, image_columns: list[str]) -> pa.Schema:
    """The metadata file's columns: the features', each image list as ``<name>_file_names``."""
    fields = [pa.field(f.name + FILE_NAMES_SUFFIX, pa.list_(pa.string())) if f.name in image_columns else f
              for f in features.arrow_schema]
    return pa.schema(fields)


def image_file_extension(path: str) -> str:
    """The image file's extension as imagefolder knows it, from its magic bytes first, so that one
    content gets one name whatever its source names it (``a.jpg``, ``a.jpeg``, a JPEG saved as
    ``b.png`` or ``c``); the name's (``.jpeg`` -> ``jpg``) for kinds not sniffed (TIFF, BMP)."""
    with open(path, "rb") as handle:
        sniffed = image_extension(handle.read(12))
    if sniffed in _IMAGE_EXTENSIONS:
        return sniffed
    suffix = Path(path).suffix.lower().lstrip(".")
    suffix = {"jpeg": "jpg"}.get(suffix, suffix)
    return suffix if suffix in _IMAGE_EXTENSIONS else "png"



def remove_if_empty(folder: Path) -> None:
    """Remove ``folder`` if nothing is in it (a failed first build leaves no empty ``data/``)."""
    try:
        folder.rmdir()
    except OSError:
        pass


def _is_image_list(feature: Any) -> bool:
    from datasets import Image, List, Sequence

    inner = getattr(feature, "feature", None)
    return isinstance(feature, (List, Sequence)) and isinstance(inner, Image)


#: the embedded layout's size and encoding options (a files-layout build leaves them out)
EMBEDDED_OPTIONS = ("shard_bytes", "row_group_bytes", "dictionary")


def write_config(
    out_dir: os.PathLike,
    config: str,
    rows: Iterable[dict[str, Any]],
    features: Features = FEATURES,
    **writer_options: Any,
) -> ConfigStats:
    """Write ``rows`` as ``config`` under ``out_dir`` in ``layout`` (``files``, the default, or
    ``embedded``; no manifest, no README: files layout, ``before_place`` / ``after_place`` are
    the build's steps around the moment its metadata is put in place, see FilesConfigWriter.close).

    If ``rows`` raises, nothing of this config is left behind (a previous build of it stays).
    The caller serialises builds of one config (:func:`mmlbdata.dataset.build.store_config` holds its lock).
    """
    layout = writer_options.pop("layout", None) or DEFAULT_LAYOUT
    if layout not in LAYOUTS:
        raise ValueError(f"unknown layout {layout!r} (one of {', '.join(LAYOUTS)})")
    check_one_layout(Path(out_dir), config, layout)
    steps = {k: writer_options.pop(k) for k in ("before_place", "after_place") if k in writer_options}
    if layout == "files":
        for option in EMBEDDED_OPTIONS:  # one set of build options serves both layouts: these bound nothing here
            writer_options.pop(option, None)
        writer: Any = FilesConfigWriter(out_dir, config, features, **writer_options)
    else:
        writer_options.pop("image_group", None)
        writer = ConfigWriter(out_dir, config, features, **writer_options)
    try:
        for row in rows:
            writer.write(row)
        return writer.close(**steps)
    except BaseException:
        writer.abort()
        raise


def check_one_layout(out_dir: Path, config: str, layout: str) -> None:
    """Refuse to mix layouts in one folder: ``datasets`` infers one builder for all its configs
    (from the first config's files), so configs of the other layout would load empty or fail."""
    other = other_layout(layout)
    others = sorted(built_configs(out_dir)[other] - {config})  # its own older build is replaced
    if others:
        raise ValueError(f"{layout_conflict(out_dir, others, other)}; datasets reads one layout per folder: build "
                         f"{config} with --layout {other}, or into another folder")


def built_configs(out_dir: os.PathLike) -> dict[str, set[str]]:
    """The configs built in ``out_dir``, per layout: ``<config>.metadata.parquet`` files (files),
    ``data/<config>/`` folders (embedded)."""
    out_dir = Path(out_dir)
    data = out_dir / "data"
    return {
        "files": {p.name[:-len(METADATA_SUFFIX)] for p in out_dir.glob(f"*{METADATA_SUFFIX}") if p.is_file()},
        "embedded": ({p.name for p in data.iterdir() if p.is_dir() and not p.name.startswith(".")}
                     if data.is_dir() else set()),
    }


def other_layout(layout: str) -> str:
    return "embedded" if layout == "files" else "files"


def layout_conflict(where: object, others: list[str], layout: str) -> str:
    """``<where> holds N config(s) in the <layout> layout (a, b, c ...)``: the start of a refusal to mix layouts."""
    shown = ", ".join(others[:3]) + (" ..." if len(others) > 3 else "")
    return f"{where} holds {len(others)} config(s) in the {layout} layout ({shown})"


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
