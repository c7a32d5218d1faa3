"""``mmlb build --executor ray``: every config a Ray task, anywhere in the cluster.

:class:`RayExecutor` is handed to :func:`build.build_configs` / :func:`build.build_all` by the
caller (the CLI); this module imports the build, never the reverse. Each task runs the same :func:`build.build_config` a local build runs, so the parquet files are
byte-identical to a local build (same builder, same writer, same seeds); only where it runs
changes. Every node must see the same paths: the sources, the output folder (the writer's
atomic config swap and README lock work on a shared file system) and the image store
(``--cache-dir``). Resuming is :func:`build.build_all`'s: configs already complete are kept
before any task is scheduled.
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Optional

from mmlbdata.core.parallel import ray_units
from mmlbdata.core.raycluster import connect
from mmlbdata.dataset.build import ConfigResult, build_config

logger = logging.getLogger("mmlbdata")


def _build_task(name: str, sources: Mapping[str, os.PathLike], out_dir: os.PathLike, kwargs: dict) -> ConfigResult:
    with ray_units():  # the config's units (videos, grids, pages) become Ray tasks too
        return build_config(name, sources, out_dir, **kwargs)


def build_configs_on_ray(names: list[str], sources: Mapping[str, os.PathLike], out_dir: os.PathLike, *,
                         address: Optional[str] = None, num_proc: int = 1,
                         progress: bool = True, **kwargs: Any) -> list[ConfigResult]:
    """Build ``names`` as Ray tasks, with one progress bar over configs on the driver.

    A config task holds one CPU; its units of work (LongVideoBench videos, MMNeedle grids, PDF
    pages) are Ray tasks of their own (:mod:`mmlbdata.core.parallel`), about ``2 * num_proc`` in flight
    per config, spread over the cluster, so the largest configs do not bound the wall time alone.

    A task whose worker dies (node lost) is retried by Ray; a config that fails inside its builder
    comes back as a failed :class:`ConfigResult`, like a local build.
    """
    from tqdm.auto import tqdm

    ray = connect(address, "mmlb build --executor ray")
    task = ray.remote(num_cpus=1, max_retries=2)(_build_task)
    kwargs = {**_absolute(kwargs, ("store_root", "tokenizer")), "num_proc": num_proc, "progress": False}
    sources = {key: Path(path).absolute() for key, path in sources.items()}
    out_dir = Path(out_dir).absolute()
    pending = {task.remote(name, sources, out_dir, kwargs): name for name in names}
    results: dict[str, ConfigResult] = {}
    with tqdm(total=len(names), desc="configs on ray", unit=" config", disable=not progress) as bar:
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            name = pending.pop(done[0])
            results[name] = _result(ray, done[0], name)
            logger.info("%s: %s", name, "done" if results[name].ok else results[name].error)
            bar.update(1)
    return [results[n] for n in names]


@dataclass(frozen=True)
class RayExecutor:
    """The Ray executor of :func:`build.build_configs`: ``address`` is the cluster to join
    (``auto``, ``ray://head:10001``; ``None``: the one ``RAY_ADDRESS`` names, else a local Ray)."""

    address: Optional[str] = None

    def __call__(self, names: list[str], sources: Mapping[str, os.PathLike], out_dir: os.PathLike, *,
                 num_proc: int = 1, **kwargs: Any) -> list[ConfigResult]:
        return build_configs_on_ray(names, sources, out_dir, address=self.address, num_proc=num_proc, **kwargs)


def _absolute(kwargs: dict, keys: tuple) -> dict:
    """Paths made absolute here: a Ray worker does not run in this process's directory."""
    return {k: (Path(v).absolute() if k in keys and v is not None else v) for k, v in kwargs.items()}


def _result(ray, ref, name: str) -> ConfigResult:
    """The task's result, or a failed one when the task itself could not run (worker lost)."""
    try:
        return ray.get(ref)
    except Exception as err:  # noqa: BLE001 - a lost task must not lose the other configs
        return ConfigResult(name, False, error=f"ray task failed: {type(err).__name__}: {err}", status="failed")
