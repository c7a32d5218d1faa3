"""``load_dataset`` of a built folder that reads *this* folder's images, wherever it was moved.

``datasets`` keys the Arrow cache of an in-memory ``load_dataset(folder, config)`` by the folder's
*name*, the config and its README (``configs`` + ``dataset_info``; ``datasets/load.py``,
``LocalDatasetModuleFactory.get_module``: the data files enter the hash as patterns, never as
resolved paths). A files-layout row caches absolute image paths. So ``mv x/mmlb y/mmlb``, a copy,
or a byte-identical rebuild ``q/mmlb`` loaded after ``p/mmlb`` was loaded and deleted all hit the
first folder's cache: rows whose images point into the old place (``FileNotFoundError`` on decode,
or, while the old folder lives, silently its files). Nothing inside the folder can tell two
locations apart without breaking byte-identical builds, so the cache is chosen here instead: an
in-memory load of a local folder gets a cache directory of its own per (resolved location, build
of the config). Streaming is unaffected (it resolves the data files at every load), and a Hub
repository is keyed by its commit.

A plain ``load_dataset`` user without mmlbdata does the same with ``cache_dir=`` or
``download_mode="force_redownload"`` (README, "Output layout").
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from mmlbdata.dataset.stats import shard_files
from mmlbdata.dataset.writer import SPLIT, read_manifest

#: under ``datasets``' cache (``HF_DATASETS_CACHE``): one folder per (location, build)
FOLDER_CACHES = "mmlbdata-folders"


def load_built(where: os.PathLike | str, config: str, *, split: str = SPLIT, streaming: bool = False,
               **kwargs: Any):
    """``datasets.load_dataset(where, config, split=split, streaming=streaming, **kwargs)``; an
    in-memory load of a local folder (without an explicit ``cache_dir``) is cached per location
    and build (:func:`folder_cache_dir`), so a moved, copied or rebuilt folder reads its own images."""
    import datasets

    if not streaming and "cache_dir" not in kwargs and Path(where).is_dir():
        kwargs["cache_dir"] = str(folder_cache_dir(where, config))
    return datasets.load_dataset(str(where), config, split=split, streaming=streaming, **kwargs)


def folder_cache_dir(folder: os.PathLike | str, config: str) -> Path:
    """``$HF_DATASETS_CACHE/mmlbdata-folders/<key>``: the key hashes the folder's resolved path and
    :func:`build_identity` of ``config``, so another place or another build never shares it."""
    import datasets.config

    identity = {"folder": str(Path(folder).resolve()), "config": config, "build": build_identity(folder, config)}
    key = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:20]
    return Path(datasets.config.HF_DATASETS_CACHE) / FOLDER_CACHES / key


def build_identity(folder: os.PathLike | str, config: str) -> Any:
    """What tells one build of ``config`` from another, cheaply: the manifest's fingerprint (a
    digest of its metadata or shards, which for the files layout names every image by its hash),
    else each of its parquet files' name, size and modification time."""
    fingerprint = ((read_manifest(folder, config) or {}).get("stats") or {}).get("fingerprint")
    if fingerprint:
        return fingerprint
    return [[p.name, p.stat().st_size, p.stat().st_mtime_ns] for p in shard_files(Path(folder), config)]
