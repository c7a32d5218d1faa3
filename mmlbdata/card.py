"""The dataset README: YAML front matter that makes ``load_dataset(folder, config)`` work.

``configs`` maps each config to its parquet files (split ``test``); ``dataset_info`` carries the
features and split sizes, written with ``datasets``' own ``DatasetInfo._to_yaml_dict`` so the
Hub and ``datasets`` read it exactly as they read their own cards. A build into an existing
folder adds or replaces its configs' entries and keeps the others and the card's body.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml
from filelock import FileLock
from datasets import Features
from datasets.info import DatasetInfo
from datasets.splits import SplitDict, SplitInfo

from .writer import SPLIT, ConfigStats, data_files_pattern

DEFAULT_BODY = """
# mmlb

Long-context multimodal benchmark configs built with mmlbdata: every example is filled to its
token budget by the unified counter (Llama-2 text tokens + one image token per 28x28 pixels).

```python
from datasets import load_dataset
ds = load_dataset("<this folder, or org/name on the Hub>", "{config}", split="test")
```
"""


def split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """``(yaml_dict, body)`` of a README; a README without front matter has an empty dict."""
    if text.startswith("---"):
        end = text.find("\n---", 3)
        if end != -1:
            meta = yaml.safe_load(text[3:end]) or {}
            return meta, text[end + 4:].lstrip("\n")
    return {}, text


def join_front_matter(meta: dict[str, Any], body: str) -> str:
    dumped = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True, width=1000)
    return f"---\n{dumped}---\n\n{body.rstrip()}\n"


def config_yaml_entries(config: str, features: Features, stats: ConfigStats) -> tuple[dict, dict]:
    """The ``configs`` and ``dataset_info`` entries of one config."""
    splits = SplitDict()
    splits.add(SplitInfo(name=SPLIT, num_bytes=stats.num_bytes, num_examples=stats.num_rows))
    info = DatasetInfo(features=features, splits=splits,
                       download_size=stats.num_bytes, dataset_size=stats.num_bytes)
    info_entry = {"config_name": config, **info._to_yaml_dict()}
    config_entry = {"config_name": config, "data_files": [{"split": SPLIT, "path": data_files_pattern(config)}]}
    return config_entry, info_entry


def _upsert(entries: list[dict], entry: dict) -> list[dict]:
    kept = [e for e in entries if e.get("config_name") != entry["config_name"]]
    return sorted(kept + [entry], key=lambda e: e["config_name"])


def update_readme(out_dir: os.PathLike, config: str, features: Features, stats: ConfigStats) -> Path:
    """Add or replace ``config`` in the folder's README front matter (atomic write)."""
    path = Path(out_dir) / "README.md"
    with FileLock(str(path) + ".lock"):  # parallel config builds share one README
        return _update_readme_locked(path, config, features, stats)


def _update_readme_locked(path: Path, config: str, features: Features, stats: ConfigStats) -> Path:
    meta, body = split_front_matter(path.read_text()) if path.exists() else ({}, "")
    config_entry, info_entry = config_yaml_entries(config, features, stats)
    configs = meta.get("configs") or []
    infos = meta.get("dataset_info") or []
    if isinstance(infos, dict):
        infos = [infos]
    meta["configs"] = _upsert(configs, config_entry)
    meta["dataset_info"] = _upsert(infos, info_entry)
    if not body.strip():
        body = DEFAULT_BODY.format(config=config)
    tmp = path.with_suffix(".md.tmp")
    tmp.write_text(join_front_matter(meta, body))
    os.replace(tmp, path)
    return path
