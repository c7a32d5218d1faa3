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
as each files-layout config is written, :class:`Relayout` (under the family's lock) gives every
image of the family the partition of its users and rewrites the metadata files whose paths
changed, with the writer's own parquet options, so a folder holds the same bytes whatever the
build order (tests/test_partitions.py builds both orders); it never moves a file, so a full disk
or ``kill -9`` at any step breaks no config (tests/test_relayout_faults.py). Users are ordered by
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

from mmlbdata.core import locks

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


class RelayoutError(OSError):
    """A re-partitioning stopped part-way (a full disk, say). Every metadata file still names
    images that exist, so every config loads as before; the journal it leaves
    (:func:`relayout_pending_path`) is finished by the next build of the family. ``state`` says so."""

    def __init__(self, err: OSError, state: str):
        super().__init__(err.errno, f"{err.strerror or err}; {state}")
        self.state = state


def config_lock_path(out_dir: os.PathLike, config: str) -> Path:
    """The lock a build of ``config`` holds for its whole run (build.store_config)."""
    return Path(out_dir) / f".mmlb-{config}.lock"


class Relayout:
    """One re-partitioning of ``images/<group>/``, safe at every step (a full disk, ``kill -9``).

    Run under :func:`family_lock_path`, in four steps: :meth:`plan` reads the family's metadata
    (the config being built, ``incoming``, from its staged file in place of its previous build)
    and works out each image's partition; :meth:`link` writes the journal, then gives each image
    its new name as a hard link (a copy where links are refused): nothing is moved, so every name
    a metadata file holds still exists; :meth:`rewrite` rewrites the metadata whose paths changed,
    one file at a time, atomically (and the staged metadata of ``incoming``); the caller then puts
    ``incoming`` in place and writes manifests and README entries, and :meth:`finish` removes the
    old names, now named by no metadata, and the journal.

    A failure in :meth:`link` takes back the links it made (the folder is as before); in
    :meth:`rewrite` or later, the metadata files name either the old or the new paths, both on
    disk, and the journal stays. The next relayout of the family finds that journal (no build
    can hold it: the family's lock is held from plan to finish), redoes the plan from the
    metadata as they are, and its :meth:`finish` also removes what the journal lists that no
    metadata names (old names, links made for a config never put in place, staged folders and
    temporary metadata of the killed build).
    """

    def __init__(self, out_dir: os.PathLike, group: str, incoming: Optional[str] = None,
                 staged: Optional[Path] = None, sources: Optional[dict[str, str]] = None):
        self.out_dir, self.group = Path(out_dir), group
        self.prefix = f"{IMAGES_DIR}/{group}/"
        self.incoming, self.staged, self.sources = incoming, staged, sources or {}
        self.journal = relayout_pending_path(self.out_dir, group)
        self.stale = self.journal.exists()  # left by a build that died or failed part-way
        self.moves: dict[str, dict[str, str]] = {}  # config -> {old path: new path}
        self.folders: dict[str, list[str]] = {}  # config -> its partitions (README data files)
        self.named: set[str] = set()  # every image path the family's metadata names once done
        self.users: dict[str, Path] = {}  # config -> its metadata file (incoming: staged)
        self.created: list[str] = []
        self.added = 0  # image files new to the folder (from the incoming build's staging)

    @property
    def changed(self) -> list[str]:
        """The configs already in the folder whose metadata :meth:`rewrite` rewrote."""
        return sorted(c for c, moves in self.moves.items() if moves and c != self.incoming)

    def plan(self) -> "Relayout":
        users: list[tuple[str, Path, list[str]]] = []
        for path in sorted(self.out_dir.glob(f"*{METADATA_SUFFIX}")):
            config = path.name[:-len(METADATA_SUFFIX)]
            if config == self.incoming or _other_family(self.out_dir, config, self.group):
                continue  # its previous build is being replaced / no image of it lies under this group
            users.append((config, path, [n for n in metadata_image_names(path) if n.startswith(self.prefix)]))
        if self.incoming is not None and self.staged is not None:
            users.append((self.incoming, self.staged,
                          [n for n in metadata_image_names(self.staged) if n.startswith(self.prefix)]))
        users = [user for user in users if user[2]]
        users.sort(key=lambda user: partition_order(user[0]))
        signatures: dict[str, list[str]] = {}
        for config, _, names in users:
            for name in names:
                signatures.setdefault(image_key(name), []).append(config)
        owners = {key: f"{self.prefix}{partition_name(signature)}/{key}" for key, signature in signatures.items()}
        for config, path, names in users:
            self.users[config] = path
            self.folders[config] = partition_dirs(owners[image_key(n)] for n in names)
            self.moves[config] = {n: owners[image_key(n)] for n in names if n != owners[image_key(n)]}
        self.named = set(owners.values())
        return self

    def link(self) -> None:
        """Journal, then the new names as links; on failure the links made are taken back."""
        targets = sorted({new for moves in self.moves.values() for new in moves.values()
                          if not (self.out_dir / new).is_file()})
        olds = sorted({old for config, moves in self.moves.items() if config != self.incoming for old in moves})
        listed = self._listed() if self.stale else []
        staging = [f".{self.incoming}.partial"] if self.incoming else []
        self._write_journal({"incoming": self.incoming, "remove_unless_named": sorted(set(olds + targets + listed)),
                             "staging": sorted(set(staging + (self._listed_staging() if self.stale else [])))})
        try:
            for config, moves in sorted(self.moves.items()):
                for old, new in sorted(moves.items()):
                    self._link_one(config, old, new)
        except BaseException:
            for relative in reversed(self.created):
                (self.out_dir / relative).unlink(missing_ok=True)
                _remove_empty_parents((self.out_dir / relative).parent, self.out_dir / IMAGES_DIR)
            if not self.stale:
                self.journal.unlink(missing_ok=True)
            raise

    def _link_one(self, config: str, old: str, new: str) -> None:
        target = self.out_dir / new
        if target.is_file():
            return
        source = self._source(config, old, new)
        if source is None:
            if config == self.incoming:
                raise FileNotFoundError(f"{self.incoming}: image {old} vanished while it was built (a parallel "
                                        "rebuild or `mmlb gc` removed it): build it again")
            return  # a damaged folder: resume's completeness check rebuilds that config
        target.parent.mkdir(parents=True, exist_ok=True)
        _link_or_copy(source, target)
        self.created.append(new)
        if self.staged is not None and source.is_relative_to(self.staged.parent):
            self.added += 1

    def _source(self, config: str, old: str, new: str) -> Optional[Path]:
        """Where the image ``old`` of ``config`` is now: its own path, the incoming build's
        staging, any partition of the family, or (incoming) the file it was built from."""
        candidates = [self.out_dir / old]
        if config == self.incoming and self.staged is not None:
            candidates.insert(0, self.staged.parent / old)
        for candidate in candidates:
            if candidate.is_file():
                return candidate
        found = find_image(self.out_dir / IMAGES_DIR / self.group, image_key(new))
        if found is None and config == self.incoming and old in self.sources:
            found = Path(self.sources[old]) if Path(self.sources[old]).is_file() else None
        return found

    def rewrite(self) -> None:
        """Each metadata file whose paths changed, one at a time (atomically); the incoming one last."""
        order = self.changed + ([self.incoming] if self.moves.get(self.incoming) else [])
        for done, config in enumerate(order):
            try:
                rewrite_metadata(self.users[config], self.moves[config])
            except OSError as err:
                raise RelayoutError(err, f"re-partitioning images/{self.group} stopped after rewriting {done} of "
                                         f"{len(order)} metadata file(s): each names images that exist, so every "
                                         "config built before loads as before; the next build of the family "
                                         f"finishes it ({self.journal.name})") from err

    def finish(self) -> None:
        """Remove what the journal lists that no metadata names now, then the journal."""
        import shutil

        listed = self._listed() if self.journal.exists() else []
        for relative in listed:
            if relative not in self.named:
                path = self.out_dir / relative
                path.unlink(missing_ok=True)
                _remove_empty_parents(path.parent, self.out_dir / IMAGES_DIR)
        for name in self._listed_staging() if self.journal.exists() else []:
            config = name[1:-len(".partial")]
            if config == self.incoming or not locks.is_held(config_lock_path(self.out_dir, config)):
                shutil.rmtree(self.out_dir / name, ignore_errors=True)
        for config in self.users:
            (self.out_dir / f".{config}{METADATA_SUFFIX}.tmp").unlink(missing_ok=True)  # a killed rewrite's
        self.journal.unlink(missing_ok=True)

    def _write_journal(self, content: dict) -> None:
        tmp = self.journal.with_name(self.journal.name + ".tmp")
        tmp.write_text(json.dumps(content, sort_keys=True))
        os.replace(tmp, self.journal)

    def _read_journal(self) -> dict:
        try:
            content = json.loads(self.journal.read_text())
        except (OSError, ValueError):  # a journal cut short by kill -9 or a full disk: its list is lost
            return {}
        return content if isinstance(content, dict) else {}

    def _listed(self) -> list[str]:
        return [p for p in self._read_journal().get("remove_unless_named") or [] if isinstance(p, str)
                and p.startswith(self.prefix) and ".." not in p.split("/")]

    def _listed_staging(self) -> list[str]:
        return [name for name in self._read_journal().get("staging") or [] if isinstance(name, str)
                and name.startswith(".") and name.endswith(".partial") and "/" not in name]


def _link_or_copy(source: Path, target: Path) -> None:
    """``target`` as a second name of ``source`` (no bytes written); a copy, put in place
    atomically, where the file system refuses links (another device, FAT, some network shares)."""
    import errno
    import shutil

    try:
        os.link(source, target)
    except OSError as err:
        if err.errno not in (errno.EXDEV, errno.EPERM, errno.ENOTSUP, errno.EMLINK, errno.EOPNOTSUPP):
            raise
        tmp = target.with_name(f".{target.name}.tmp")
        try:
            shutil.copyfile(source, tmp)
            os.replace(tmp, target)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise


def _other_family(out_dir: Path, config: str, group: str) -> bool:
    """Whether ``config``'s manifest says it belongs to another image group (a config without a
    readable manifest is read, to be safe): a folder of many families reads only its own family's
    metadata at each config close."""
    try:
        family = json.loads((out_dir / "manifests" / f"{config}.json").read_text()).get("family")
    except (OSError, ValueError, AttributeError):
        return False
    return image_group_of(family) != group


def _remove_empty_parents(folder: Path, stop: Path) -> None:
    while folder != stop and folder.is_relative_to(stop):
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
    try:
        with pq.ParquetWriter(tmp, schema, compression="zstd", write_statistics=False) as writer:
            for index in range(source.num_row_groups):
                table = source.read_row_group(index)
                for column in columns:
                    position = table.schema.get_field_index(column)
                    table = table.set_column(position, schema.field(column), _renamed(table.column(column), moves))
                writer.write_table(table, row_group_size=table.num_rows)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _renamed(column: pa.ChunkedArray, moves: dict[str, str]) -> pa.Array:
    lists = column.combine_chunks()
    offsets = lists.offsets
    if offsets[0].as_py():  # a slice: offsets that start at 0 for the flattened values
        offsets = pc.subtract(offsets, offsets[0])
    values = [moves.get(name, name) for name in lists.flatten().to_pylist()]
    return pa.ListArray.from_arrays(offsets, pa.array(values, pa.string()))
