"""Image partitions of the files layout: each config's README entry names only the images it uses.

``datasets`` downloads every file a config's ``data_files`` name before it reads a row (an
in-memory load from the Hub), so naming a family's whole image tree made ``mmlongdoc_8k`` fetch
every page of every DocVQA-family config (5-37x the bytes its rows use). Images are therefore
stored once per folder in *partitions*, one per set of configs that use an image::

    images/<family>/<first user>-<digest of all users>/<sha256[:2]>/<sha256>.<ext>

An image used by ``vh_single_8k`` ... ``vh_single_128k`` lies in ``vh_single_8k-<digest>``; one
used by the 128K config alone in ``vh_single_128k-<digest>``. A config's ``data_files`` name the
partitions whose users include it, which hold exactly the images its rows use: an in-memory load
downloads its own images and nothing else. Where lengths nest (haystacks and page windows that
grow with the length) a family of n lengths has about n partitions; the number of files is one
per distinct image, as before.

Partitions depend only on *which* configs the folder holds, never on the order they were built:
after each files-layout config is written, :func:`relayout_images` (under the family's lock)
moves every image of the family to the partition of its users and rewrites the metadata files
whose paths changed, with the writer's own parquet options, so a folder holds the same bytes
whatever the build order (tests/test_partitions.py builds both orders). Users are ordered by
:func:`partition_order` (shortest length first, then name).
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import re
from pathlib import Path
from typing import Iterable, Optional

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

IMAGES_DIR = "images"
METADATA_SUFFIX = ".metadata.parquet"
FILE_NAMES_SUFFIX = "_file_names"  # <column>_file_names: what the folder-based builder maps to <column>
_LENGTH = re.compile(r"_(\d+)k$")


def partition_order(config: str) -> tuple[float, str]:
    """Shortest token budget first (``_8k`` < ``_128k``; configs without one last), then name:
    the order that puts the pages an 8K document config shares with its 128K sibling in the 8K
    config's partition."""
    found = _LENGTH.search(config)
    return (int(found.group(1)) if found else math.inf, config)


def partition_name(users: list[str]) -> str:
    """The folder of the images used by exactly ``users`` (in :func:`partition_order`): the first
    of them, then a digest of them all (``vh_single_8k-1f3a9c07``), so every config names exactly
    the partitions holding its own images, whatever other configs share them."""
    digest = hashlib.sha256("\n".join(users).encode()).hexdigest()[:8]
    return f"{users[0]}-{digest}"


def family_lock_path(out_dir: Path, group: str) -> Path:
    """One lock per image family: placing images and re-partitioning them are serialised."""
    return Path(out_dir) / f".mmlb-images-{group}.lock"


def image_group_of(family: Optional[str]) -> str:
    """The ``images/<group>`` folder of a family's configs (``shared`` when none is known)."""
    group = "".join(c if c.isalnum() or c in "-_" else "_" for c in (family or ""))
    return group or "shared"


def relayout_pending_path(out_dir: Path, group: str) -> Path:
    """Present from a re-partitioning until the build has refreshed the manifests it touched: a
    build killed in between leaves it, and the next build of the family then checks every config."""
    return Path(out_dir) / f".mmlb-relayout-{group}.pending"


def image_key(relative: str) -> str:
    """``<sha[:2]>/<sha>.<ext>``: an image's name inside any partition."""
    return "/".join(relative.split("/")[-2:])


def partition_of(relative: str) -> str:
    """``images/<family>/<owner>`` of an image path (its folder without the shard level)."""
    return "/".join(relative.split("/")[:-2])


def partition_dirs(names: Iterable[str]) -> list[str]:
    """The sorted partitions a config's image paths lie in (what its ``data_files`` name)."""
    return sorted({partition_of(name) for name in names})


def existing_partitions(group_dir: Path) -> list[Path]:
    return sorted(p for p in group_dir.iterdir() if p.is_dir()) if group_dir.is_dir() else []


def find_image(group_dir: Path, key: str, partitions: Optional[list[Path]] = None) -> Optional[Path]:
    """Where the family already stores the image ``key`` (None: nowhere)."""
    for partition in partitions if partitions is not None else existing_partitions(group_dir):
        candidate = partition / key
        if candidate.is_file():
            return candidate
    return None


def file_name_columns(schema: pa.Schema) -> list[str]:
    return [name for name in schema.names if name.endswith(FILE_NAMES_SUFFIX)]


def metadata_image_names(path: Path) -> list[str]:
    """The distinct image paths a metadata file names (every ``*_file_names`` column), sorted."""
    table = pq.read_table(path, columns=file_name_columns(pq.read_schema(path)))
    names: set[str] = set()
    for column in table.columns:
        names.update(pc.unique(pc.list_flatten(column)).to_pylist())
    return sorted(names)


def relayout_images(out_dir: os.PathLike, group: str) -> tuple[list[str], dict[str, list[str]]]:
    """Move every image of ``images/<group>/`` to the partition of its users; rewrite the metadata of
    the configs whose paths changed. Returns those configs (sorted) and each user config's partition
    folders (what its README entry names, so the build need not read its metadata back). The caller
    holds :func:`family_lock_path`."""
    out_dir = Path(out_dir)
    prefix = f"{IMAGES_DIR}/{group}/"
    users: list[tuple[str, Path, list[str]]] = []
    for path in sorted(out_dir.glob(f"*{METADATA_SUFFIX}")):
        if _other_family(out_dir, path.name[:-len(METADATA_SUFFIX)], group):
            continue  # its manifest names another family: none of its images lie under this group
        names = [name for name in metadata_image_names(path) if name.startswith(prefix)]
        if names:
            users.append((path.name[:-len(METADATA_SUFFIX)], path, names))
    users.sort(key=lambda user: partition_order(user[0]))
    signatures: dict[str, list[str]] = {}
    for config, _, names in users:
        for name in names:
            signatures.setdefault(image_key(name), []).append(config)
    owners = {key: partition_name(signature) for key, signature in signatures.items()}
    partitions = existing_partitions(out_dir / IMAGES_DIR / group)
    changed, folders = [], {}
    for config, path, names in users:
        folders[config] = sorted({f"{prefix}{owners[image_key(name)]}" for name in names})
        moves = {name: f"{prefix}{owners[image_key(name)]}/{image_key(name)}" for name in names}
        moves = {old: new for old, new in moves.items() if old != new}
        for old, new in sorted(moves.items()):
            _move_image(out_dir, group, old, new, partitions)
        if moves:
            rewrite_metadata(path, moves)
            changed.append(config)
    return sorted(changed), folders


def _other_family(out_dir: Path, config: str, group: str) -> bool:
    """Whether ``config``'s manifest says it belongs to another image group (a config without a
    readable manifest is read, to be safe): a folder of many families reads only its own family's
    metadata at each config close."""
    try:
        family = json.loads((out_dir / "manifests" / f"{config}.json").read_text()).get("family")
    except (OSError, ValueError, AttributeError):
        return False
    return image_group_of(family) != group


def _move_image(out_dir: Path, group: str, current: str, relative: str, partitions: list[Path]) -> None:
    """Put the family's copy of an image at ``relative`` (its partition), from where the metadata
    names it (``current``; a folder built before partitions: ``images/<family>/ab/...``) or from
    whichever partition holds it."""
    target = out_dir / relative
    if target.is_file():
        return
    found = out_dir / current if (out_dir / current).is_file() else \
        find_image(out_dir / IMAGES_DIR / group, image_key(relative), partitions)
    if found is None:  # a damaged folder: resume's completeness check rebuilds the config
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    os.replace(found, target)
    _remove_empty_parents(found.parent, out_dir / IMAGES_DIR)


def _remove_empty_parents(folder: Path, stop: Path) -> None:
    while folder != stop:
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent


def rewrite_metadata(path: Path, moves: dict[str, str]) -> None:
    """``path`` with its image paths renamed by ``moves``, row group for row group, written with
    the writer's options, so the bytes equal those of a build that wrote the new paths itself."""
    source = pq.ParquetFile(path)
    schema = source.schema_arrow
    columns = file_name_columns(schema)
    tmp = path.with_name(f".{path.name}.tmp")
    with pq.ParquetWriter(tmp, schema, compression="zstd", write_statistics=False) as writer:
        for index in range(source.num_row_groups):
            table = source.read_row_group(index)
            for column in columns:
                position = table.schema.get_field_index(column)
                table = table.set_column(position, schema.field(column), _renamed(table.column(column), moves))
            writer.write_table(table, row_group_size=table.num_rows)
    os.replace(tmp, path)


def _renamed(column: pa.ChunkedArray, moves: dict[str, str]) -> pa.Array:
    lists = column.combine_chunks()
    offsets = lists.offsets
    if offsets[0].as_py():  # a slice: offsets that start at 0 for the flattened values
        offsets = pc.subtract(offsets, offsets[0])
    values = [moves.get(name, name) for name in lists.flatten().to_pylist()]
    return pa.ListArray.from_arrays(offsets, pa.array(values, pa.string()))
