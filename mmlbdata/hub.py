"""Publishing a built folder to the Hugging Face Hub.

Each config is pushed with ``Dataset.push_to_hub(repo, config_name=..., split="test")``, which
embeds the image bytes and updates the Hub README's ``configs``/``dataset_info`` entries itself.
The network layer sits behind :class:`Uploader` so tests check exactly what would be sent
without a network.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Protocol

from .stats import configs_in, shard_files


class Uploader(Protocol):
    def push_config(self, dataset: Any, repo_id: str, config: str, **kwargs: Any) -> None: ...


class HubUploader:
    """The real thing: ``Dataset.push_to_hub`` (token from the standard HF login or HF_TOKEN)."""

    def push_config(self, dataset: Any, repo_id: str, config: str, **kwargs: Any) -> None:
        dataset.push_to_hub(repo_id, config_name=config, split="test", embed_external_files=True, **kwargs)


@dataclass
class PushPlan:
    repo_id: str
    configs: list[str] = field(default_factory=list)


def load_config(folder: os.PathLike, config: str):
    """The built config as a ``datasets.Dataset`` (read from its parquet shards, offline)."""
    from datasets import load_dataset

    return load_dataset(str(folder), config, split="test")


def push_folder(folder: os.PathLike, repo_id: str, *, configs: Optional[list[str]] = None,
                private: bool = False, revision: Optional[str] = None,
                max_shard_size: Optional[str] = None, uploader: Optional[Uploader] = None) -> PushPlan:
    """Push every (or the named) config of ``folder`` to ``repo_id``."""
    folder = Path(folder)
    names = configs or configs_in(folder)
    missing = [n for n in names if not shard_files(folder, n)]
    if missing:
        raise FileNotFoundError(f"{folder}: no built data for {', '.join(missing)}")
    uploader = uploader or HubUploader()
    kwargs: dict[str, Any] = {"private": private}
    if revision:
        kwargs["revision"] = revision
    if max_shard_size:
        kwargs["max_shard_size"] = max_shard_size
    plan = PushPlan(repo_id)
    for name in names:
        uploader.push_config(load_config(folder, name), repo_id, name, **kwargs)
        plan.configs.append(name)
    return plan
