"""Build configs into a dataset folder: the library behind ``mmlb build``.

One config at a time per process: resolve it, construct its builder, stream its rows through the
writer (progress bar), record the manifest. ``num_proc > 1`` builds several configs in parallel
worker processes; the README is always updated by the writer of each config under a file lock.
"""
from __future__ import annotations

import logging
import os
import traceback
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Optional

from .registry import resolve
from .report import BuildReport
from .store import ImageStore
from .writer import ConfigStats, write_config

logger = logging.getLogger("mmlbdata")


@dataclass
class ConfigResult:
    config: str
    ok: bool
    stats: Optional[ConfigStats] = None
    error: str = ""
    report: dict[str, Any] = field(default_factory=dict)


class EmptyBuildError(RuntimeError):
    """A config produced no example at all."""


def _progress(rows: Iterable[dict], config: str, enabled: bool) -> Iterator[dict]:
    if not enabled:
        yield from rows
        return
    from tqdm.auto import tqdm

    with tqdm(desc=config, unit=" ex", dynamic_ncols=True) as bar:
        for row in rows:
            bar.update(1)
            yield row


def _count_rows(rows: Iterable[dict], config: str) -> Iterator[dict]:
    produced = 0
    for row in rows:
        produced += 1
        yield row
    if not produced:
        raise EmptyBuildError(f"{config}: no example could be built (see the skipped records above)")


def build_config(
    name: str,
    sources: Mapping[str, os.PathLike],
    out_dir: os.PathLike,
    *,
    seed: int = 0,
    limit: Optional[int] = None,
    options: Optional[Mapping[str, Any]] = None,
    store_root: Optional[os.PathLike] = None,
    tokenizer: Optional[os.PathLike] = None,
    progress: bool = True,
    num_proc: int = 1,
) -> ConfigResult:
    """Build one config into ``out_dir``; errors become a failed :class:`ConfigResult`."""
    entry = resolve(name)
    report = BuildReport()
    try:
        counter = None
        if tokenizer is not None:
            from .tokens import TokenCounter

            counter = TokenCounter(tokenizer)
        builder = entry.builder(entry.name, sources=sources, seed=seed, limit=limit, options=options,
                                store=ImageStore(store_root), counter=counter, report=report,
                                num_proc=num_proc)
        manifest = {
            "family": entry.family, "dataset": entry.config.dataset, "length": entry.config.length,
            "metric": entry.config.metric, "seed": seed, "limit": limit,
            "options": {**entry.config.options, **dict(options or {})},
            "sources": {k: Path(v).name for k, v in sorted(sources.items()) if k in entry.config.sources},
        }
        rows = _count_rows(_progress(builder.generate(), entry.name, progress), entry.name)
        stats = write_config(out_dir, entry.name, rows, builder.info.features,
                             manifest={**manifest, "report": report.to_dict()})
        return ConfigResult(entry.name, True, stats, report=report.to_dict())
    except Exception as err:  # one broken config must not stop the others
        logger.debug("build of %s failed:\n%s", name, traceback.format_exc())
        return ConfigResult(entry.name, False, error=f"{type(err).__name__}: {err}", report=report.to_dict())


def build_configs(names: list[str], sources: Mapping[str, os.PathLike], out_dir: os.PathLike, *,
                  num_proc: int = 1, **kwargs: Any) -> list[ConfigResult]:
    """Build several configs, in parallel processes when ``num_proc > 1``."""
    names = [resolve(n).name for n in names]  # fail fast on a typo, before any work
    if num_proc <= 1 or len(names) == 1:
        return [build_config(n, sources, out_dir, num_proc=num_proc, **kwargs) for n in names]
    kwargs["progress"] = False
    results: dict[str, ConfigResult] = {}
    with ProcessPoolExecutor(max_workers=min(num_proc, len(names))) as pool:
        futures = {pool.submit(build_config, n, sources, out_dir, **kwargs): n for n in names}
        for future in as_completed(futures):
            result = future.result()
            results[result.config] = result
            logger.info("%s: %s", result.config, "done" if result.ok else result.error)
    return [results[n] for n in names]
