"""Exports of a built folder for other harnesses: lmms-eval, VLMEvalKit, MMLongBench's own layout.

Every exporter reads the parquet shards in small batches (memory bounded by a batch, whatever the
config size) and works from what every built folder has: the common schema and the manifests.
Names taken from a built folder (config names, a manifest's ``dataset``/``family``, image names)
are data: every path joined from them goes through :func:`mmlbdata.core.paths.resolve_inside`, so an
export never writes outside ``--out``.

Owns the harness formats: ``lmms_eval`` (task folders) and ``lmms_eval_hooks`` (what their
``utils.py`` calls), ``vlmevalkit`` (TSV) and ``vlmevalkit_dataset`` (the dataset class, scored by
the evaluator's ``evaluate_config``), ``mmlongbench`` (MMLongBench's release layout), and here the
row reader every exporter shares (``iter_rows``). May import every layer up to ``evaluation``;
independent of ``runner``; only ``cli`` imports it.
"""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Iterator, Optional, Sequence

import pyarrow.parquet as pq

from mmlbdata.core.paths import resolve_inside
from mmlbdata.core.store import image_extension
from mmlbdata.core.tokens import IMAGE_PLACEHOLDER
from mmlbdata.dataset.stats import IMAGE_FILES_COLUMN, configs_in, is_files_layout, shard_files
from mmlbdata.dataset.writer import read_manifest

FORMATS = ("lmms-eval", "vlmevalkit", "mmlongbench")


def iter_rows(folder: Path, config: str, columns: Optional[Sequence[str]] = None,
              batch_size: int = 8) -> Iterator[dict]:
    """Rows of a built config as plain dicts (images as ``{"bytes", "path"}``), streamed, in
    either layout (a files-layout image's bytes are read from its file, its path kept relative)."""
    files = shard_files(Path(folder), config)
    if not files:
        raise FileNotFoundError(f"{folder}/data/{config}: no parquet shard")
    for path in files:
        wanted = columns
        if columns is not None and is_files_layout(path):  # its images are a column of file names
            wanted = [IMAGE_FILES_COLUMN if c == "images" else c for c in columns]
        for batch in pq.ParquetFile(path).iter_batches(batch_size=batch_size, columns=wanted):
            for row in batch.to_pylist():
                if IMAGE_FILES_COLUMN in row:
                    row["images"] = [_image_file(folder, name) for name in row.pop(IMAGE_FILES_COLUMN)]
                yield row


def _image_file(folder: Path, name: str) -> dict:
    """A files-layout image as the embedded layout gives it: ``{"bytes", "path"}``."""
    return {"bytes": resolve_inside(folder, name, what="image path").read_bytes(), "path": name}


def split_prompt(prompt: str) -> list[str]:
    """The text around each ``<image>``: ``len(result) == number of images + 1``."""
    return prompt.split(IMAGE_PLACEHOLDER)


def content_name(data: bytes, name: str = "") -> str:
    """``ab/ab12...ef.jpg``: a file name that only these bytes get."""
    digest = hashlib.sha256(data).hexdigest()[:32]
    return f"{digest[:2]}/{digest}.{image_extension(data, name)}"


def write_image(root: Path, data: bytes, name: str = "", relative: Optional[str] = None) -> str:
    """Store ``data`` once under ``root`` (at ``relative``, default: named by its content);
    returns its path relative to ``root``."""
    relative = relative or content_name(data, name)
    target = resolve_inside(root, relative, what="exported image path")
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(target.name + ".tmp")
        tmp.write_bytes(data)
        tmp.replace(target)
    return relative


def selected_configs(folder: Path, configs: Optional[Sequence[str]]) -> list[str]:
    names = list(configs or configs_in(folder))
    if not names:
        raise FileNotFoundError(f"no built config under {folder}/data")
    for name in names:
        if "/" in name or "\\" in name or name in (".", ".."):
            raise ValueError(f"config name {name!r} is not a plain name")
    missing = [n for n in names if not shard_files(folder, n)]
    if missing:
        raise FileNotFoundError(f"{folder}: no built data for {', '.join(missing)}")
    return names


def config_family(folder: Path, config: str) -> str:
    """The family recorded in the config's manifest (``mmlb`` if it has none)."""
    return (read_manifest(folder, config) or {}).get("family") or "mmlb"
