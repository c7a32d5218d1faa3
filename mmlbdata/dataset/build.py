"""Build configs into a dataset folder: the library behind ``mmlb build``.

One config at a time per process: resolve it, construct its builder, stream its rows through the
writer (progress bar), then record the manifest (with the build report as it stands once every row
is generated) and the README entry. The build layer owns the folder: :func:`store_config` holds a
per-config lock for all three steps, so two builds of one config into one folder run one after the
other and never mix shards; the README has its own lock. ``num_proc > 1`` builds several configs
in parallel worker processes, capped at the CPUs this process may use.

:func:`build_all` (``mmlb build --all``) builds every config of a benchmark from one sources folder
and is resumable: a config whose manifest records the requested parameters and whose shards are
all there is kept; anything else is rebuilt. The writer only moves a complete config into place,
so a crash leaves either the previous complete config or nothing (its ``.partial`` staging folder
is wiped when the config is rebuilt).
"""
from __future__ import annotations

import errno
import json
import logging
import os
import traceback
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from dataclasses import fields as dataclass_fields
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Optional, Protocol

from datasets import Features

from mmlbdata import __version__
from mmlbdata.core import locks
from mmlbdata.core.report import BuildReport, source_label
from mmlbdata.core.schema import FEATURES
from mmlbdata.core.store import ImageStore
from mmlbdata.dataset.demo import is_demo
from mmlbdata.dataset.partitions import config_lock_path, image_group_of
from mmlbdata.dataset.registry import UnknownConfigError, all_configs, resolve
from mmlbdata.dataset.stats import image_paths, shard_files
from mmlbdata.dataset.writer import (
    DEFAULT_LAYOUT,
    ConfigStats,
    built_configs,
    metadata_path,
    read_manifest,
    remove_if_empty,
    write_config,
    write_manifest,
)
from mmlbdata.sources.download import file_digest

logger = logging.getLogger("mmlbdata")


@dataclass
class ConfigResult:
    config: str
    ok: bool
    stats: Optional[ConfigStats] = None
    error: str = ""
    report: dict[str, Any] = field(default_factory=dict)
    status: str = ""  # built, kept (resumed build), failed, missing sources


class EmptyBuildError(RuntimeError):
    """A config produced no example at all."""


def _progress(rows: Iterable[dict], config: str, enabled: bool, builder: Any = None) -> Iterator[dict]:
    """A bar over the rows built, with a total (and so an ETA) once the builder knows how many
    rows it will make (its ``expected_rows``: e.g. questions x depths, or ``--limit`` where that
    caps rows; often known only once the source is read, so it is looked up as rows come)."""
    if not enabled:
        yield from rows
        return
    from tqdm.auto import tqdm

    with tqdm(desc=config, unit=" ex", dynamic_ncols=True) as bar:
        for row in rows:
            total = getattr(builder, "expected_rows", None)
            if total is not None and total != bar.total:
                bar.total = max(total, bar.n + 1)
            bar.update(1)
            yield row


def _count_rows(rows: Iterable[dict], config: str) -> Iterator[dict]:
    produced = 0
    for row in rows:
        produced += 1
        yield row
    if not produced:
        raise EmptyBuildError(f"{config}: no example could be built (every record was skipped: the reasons "
                              "are listed with this config)")


# Where a config's examples come from; the manifest, card and `mmlb stats` repeat it.
RELEASE_PROVENANCE = "rebuilt from local copies of the original releases"


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
    shard_bytes: Optional[int] = None,
    provenance: str = RELEASE_PROVENANCE,
    layout: Optional[str] = None,
) -> ConfigResult:
    """Build one config into ``out_dir`` (``layout``: the writer's, ``files`` by default);
    errors become a failed :class:`ConfigResult`."""
    entry = resolve(name)
    writer_options: dict[str, Any] = {"shard_bytes": shard_bytes} if shard_bytes else {}
    if layout:
        writer_options["layout"] = layout
    report = BuildReport(sources=sources)  # files named the same under every executor (source_label)
    try:
        counter = None
        if tokenizer is not None:
            from mmlbdata.core.tokens import TokenCounter

            counter = TokenCounter(tokenizer)
        builder = entry.builder(entry.name, sources=sources, seed=seed, limit=limit, options=options,
                                store=ImageStore(store_root), counter=counter, report=report,
                                num_proc=num_proc)
        manifest = {**build_parameters(entry, sources, seed=seed, limit=limit, options=options),
                    "provenance": provenance}
        rows = _count_rows(_progress(builder.generate(), entry.name, progress, builder), entry.name)

        def learnt_while_generating() -> dict[str, Any]:
            """The builder's notes (``manifest_extra``: the release file it read ...) and the report."""
            return {**(getattr(builder, "manifest_extra", None) or {}), "report": report.to_dict()}

        stats = store_config(out_dir, entry.name, rows, builder.info.features, manifest=manifest,
                             after_rows=learnt_while_generating, **writer_options)
        failure_manifest_path(out_dir, entry.name).unlink(missing_ok=True)  # an earlier failure's, now stale
        return ConfigResult(entry.name, True, stats, report=result_report(report), status="built")
    except Exception as err:  # one broken config must not stop the others
        logger.debug("build of %s failed:\n%s", name, traceback.format_exc())
        return ConfigResult(entry.name, False, error=describe_failure(entry.name, out_dir, err),
                            report=result_report(report), status="failed")


def result_report(report: BuildReport) -> dict:
    """What a :class:`ConfigResult` carries: the manifest's report and the skips counted by reason."""
    return {**report.to_dict(), "by_reason": report.by_reason()}


def failure_manifest_path(out_dir: os.PathLike, config: str) -> Path:
    return Path(out_dir) / "manifests" / f"{config}.failed.json"


def write_failure_manifest(out_dir: os.PathLike, result: ConfigResult) -> Path:
    """``manifests/<config>.failed.json``: why ``result``'s config failed and what was skipped, by
    reason (the printed lines scroll away; this stays until the config builds)."""
    path = failure_manifest_path(out_dir, result.config)
    path.parent.mkdir(parents=True, exist_ok=True)
    content = {"config": result.config, "status": "failed", "error": result.error,
               "num_skipped": result.report.get("num_skipped", 0), "by_reason": result.report.get("by_reason", []),
               "skipped": result.report.get("skipped", []), "notes": result.report.get("notes", [])}
    path.write_text(json.dumps(content, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def describe_failure(config: str, out_dir: os.PathLike, err: BaseException) -> str:
    """One line saying why ``config`` failed; a full disk is said in words."""
    if isinstance(err, OSError) and err.errno == errno.ENOSPC:
        return (f"no space left on device while writing {config} into {out_dir} "
                f"(its partial shards were removed; the previous build of {config}, if any, is kept)")
    return f"{type(err).__name__}: {err}"


def store_config(out_dir: os.PathLike, config: str, rows: Iterable[dict], features: Features = FEATURES, *,
                 manifest: Optional[Mapping[str, Any]] = None,
                 after_rows: Optional[Callable[[], Mapping[str, Any]]] = None,
                 **writer_options: Any) -> ConfigStats:
    """Shards, then manifest, then README entry of ``config``, all under the config's lock.

    The manifest is ``manifest`` plus what ``after_rows()`` returns, called once the last row is
    written: what is known only then (the build report's skipped records, the release file a
    builder read) is recorded as it really was. If anything fails, the config's partial shards
    are gone and a folder this call created is not left behind empty. In the files layout the
    manifest and README steps run under the family's lock, around the moment the metadata is
    put in place (writer.FilesConfigWriter.close), so no other build re-partitions in between.
    """
    out_dir = Path(out_dir)
    created = not out_dir.exists()
    out_dir.mkdir(parents=True, exist_ok=True)
    # the files layout shares one image tree per family: every length of it stores an image once
    writer_options.setdefault("image_group", image_group_of((manifest or {}).get("family")))
    from mmlbdata.dataset.card import sync_readme, update_readme

    def record(stats: ConfigStats) -> None:
        # facts of this run (wall-clock time; image files this build added, which depends on what
        # the folder held before, e.g. on the order configs sharing images were built) stay out
        # of the manifest so that rebuilds give byte-identical manifests
        content = {**(manifest or {}), **(after_rows() if after_rows else {}),
                   "stats": {k: v for k, v in stats.to_dict().items() if k not in RUN_ONLY_STATS}}
        write_manifest(out_dir, config, content)

    def before_place(stats: ConfigStats) -> None:
        record(stats)
        if metadata_path(out_dir, config).is_file():  # a rebuild: the entry must fit both builds meanwhile
            update_readme(out_dir, config, features, stats, written=True, sizes=False)

    def after_place(stats: ConfigStats) -> None:
        refreshed = refresh_relaid_manifests(out_dir, stats.relayout)
        update_readme(out_dir, config, features, stats, written=True)
        if (stats.relayout or {}).get("check_all"):  # after a failed build: its entries may lag its manifests
            refreshed = sorted(set(built_configs(out_dir)["files"]) - {config})
        if refreshed:  # entries as the folder has them now
            sync_readme(out_dir, refreshed)

    try:
        with locks.hold(config_lock_path(out_dir, config), what=f"another build of {config} into {out_dir}"):
            if (writer_options.get("layout") or DEFAULT_LAYOUT) == "files":
                return write_config(out_dir, config, rows, features, before_place=before_place,
                                    after_place=after_place, **writer_options)
            stats = write_config(out_dir, config, rows, features, **writer_options)
            record(stats)
            update_readme(out_dir, config, features, stats, written=True)
        return stats
    except BaseException:
        if created:
            remove_if_empty(out_dir)
        raise


RUN_ONLY_STATS = ("seconds", "images_written", "image_dirs", "relayout")


def refresh_relaid_manifests(out_dir: Path, relayout: Optional[dict]) -> list[str]:
    """Configs whose metadata a build's re-partitioning rewrote (their images have new paths)
    after their manifest was written: their manifests get the new metadata's fingerprint and
    size, so push uploads them and resume keeps them; returned for their README entries.
    ``relayout`` (the writer's ``stats.relayout``): the configs it rewrote are checked; every
    built config is when it found the journal of a re-partitioning that a killed or failed build
    left, so the next build repairs a folder. The caller holds the family's lock."""
    relayout = relayout or {"relaid": [], "check_all": True}
    names = sorted(built_configs(out_dir)["files"]) if relayout["check_all"] else sorted(relayout["relaid"])
    refreshed = []
    for name in names:
        manifest = read_manifest(out_dir, name)
        path = metadata_path(out_dir, name)
        stats = (manifest or {}).get("stats") or {}
        digest = file_digest(path, "sha256") if manifest and path.is_file() else None
        if digest is None or stats.get("fingerprint") == digest:
            continue
        size = path.stat().st_size
        stats.update(fingerprint=digest, metadata_bytes=size,
                     num_bytes=stats.get("num_bytes", 0) - stats.get("metadata_bytes", 0) + size)
        write_manifest(out_dir, name, {**manifest, "stats": stats})
        refreshed.append(name)
    return refreshed


def pending_relayouts(out_dir: os.PathLike) -> list[str]:
    """The image groups whose re-partitioning a failed or killed build left unfinished (journal)."""
    prefix, suffix = ".mmlb-relayout-", ".pending"
    return sorted(p.name[len(prefix):-len(suffix)] for p in Path(out_dir).glob(f"{prefix}*{suffix}"))


def finish_relayouts(out_dir: os.PathLike) -> list[str]:
    """Finish what :func:`pending_relayouts` names, as the next build of each family would: the
    re-partitioning redone from the metadata as they are, every manifest and README entry
    refreshed, what the journal lists that no metadata names removed. Returns the groups done."""
    from mmlbdata.dataset.card import sync_readme
    from mmlbdata.dataset.partitions import Relayout, family_lock_path

    out_dir = Path(out_dir)
    done = []
    for group in pending_relayouts(out_dir):
        with locks.hold(family_lock_path(out_dir, group)):
            relayout = Relayout(out_dir, group).plan()
            relayout.link()
            relayout.rewrite()
            refresh_relaid_manifests(out_dir, {"relaid": relayout.changed, "check_all": True})
            sync_readme(out_dir, sorted(built_configs(out_dir)["files"]))
            relayout.finish()
        done.append(group)
    return done


def available_cpus() -> int:
    """CPUs this process may run on (its affinity mask, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def cap_num_proc(requested: int) -> int:
    """``requested`` workers, at most the CPUs available; says so (once per call) when capped."""
    cpus = available_cpus()
    if requested > cpus:
        logger.warning("--num-proc %d capped at %d: only %d CPU(s) available to this process",
                       requested, cpus, cpus)
        return cpus
    return max(1, requested)


def build_parameters(entry: Any, sources: Mapping[str, os.PathLike], *, seed: int = 0,
                     limit: Optional[int] = None, options: Optional[Mapping[str, Any]] = None) -> dict:
    """What a config's manifest records about how it was requested (compared on resume)."""
    keys = config_source_keys(entry.config, sources)
    return {
        "family": entry.family, "dataset": entry.config.dataset, "length": entry.config.length,
        "metric": entry.config.metric, "seed": seed, "limit": limit,
        "options": {**entry.config.options, **dict(options or {})},
        "sources": {k: source_label(v, {k: v}) for k, v in sorted(sources.items()) if k in keys},
    }


def config_source_keys(config: Any, sources: Mapping[str, Any]) -> tuple[str, ...]:
    """The source keys a build of ``config`` reads (a config may read an official release instead)."""
    keys = getattr(config, "source_keys", None)
    return tuple(keys(sources)) if keys else tuple(config.sources)


def config_missing_sources(config: Any, sources: Mapping[str, Any]) -> list[str]:
    missing = getattr(config, "missing_sources", None)
    return missing(sources) if missing else [k for k in config.sources if k not in sources]


class Executor(Protocol):
    """Where several configs are built: :func:`build_configs` resolves the names and hands them to
    one. Each runs :func:`build_config` per config and returns the results in ``names`` order.
    :func:`run_locally` is the default; :class:`mmlbdata.dataset.ray_build.RayExecutor` spreads the
    configs over a Ray cluster (the build imports no executor: the caller chooses one)."""

    def __call__(self, names: list[str], sources: Mapping[str, os.PathLike], out_dir: os.PathLike, *,
                 num_proc: int = 1, **kwargs: Any) -> list[ConfigResult]: ...


def run_locally(names: list[str], sources: Mapping[str, os.PathLike], out_dir: os.PathLike, *,
                num_proc: int = 1, **kwargs: Any) -> list[ConfigResult]:
    """The default executor: one config after another in this process, or ``num_proc`` configs
    at a time in a process pool (capped at the CPUs available)."""
    num_proc = cap_num_proc(num_proc)
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


def build_configs(names: list[str], sources: Mapping[str, os.PathLike], out_dir: os.PathLike, *,
                  num_proc: int = 1, executor: Executor = run_locally, **kwargs: Any) -> list[ConfigResult]:
    """Build several configs with ``executor``: locally by default (in parallel processes when
    ``num_proc > 1``), or ``RayExecutor(address)`` from :mod:`mmlbdata.dataset.ray_build`."""
    names = [resolve(n).name for n in names]  # fail fast on a typo, before any work
    return executor(names, sources, out_dir, num_proc=num_proc, **kwargs)


# -- full, resumable builds -------------------------------------------------------------------
RESUME_KEYS = ("family", "dataset", "length", "metric", "seed", "limit", "options", "sources")


def _normalized(value: Any) -> Any:
    """As the manifest stores it (JSON), so tuples and lists, ints and strings compare alike."""
    return json.loads(json.dumps(value, sort_keys=True, default=str))


def completed_stats(out_dir: os.PathLike, name: str, requested: Mapping[str, Any],
                    requested_layout: Optional[str] = None) -> Optional[ConfigStats]:
    """The stats of ``name`` if it is built with ``requested`` parameters, in ``requested_layout``,
    and all its files are there.

    The check is cheap (manifest fields, shard names and sizes; for the files layout the metadata
    file's size and every image it names being present); the writer's atomic move already
    guarantees a listed config is complete, this guards against a manifest left from another build.
    """

    manifest = read_manifest(out_dir, name)
    if not manifest or manifest.get("mmlbdata_version") != __version__:
        return None
    if any(_normalized(manifest.get(k)) != _normalized(requested.get(k)) for k in RESUME_KEYS):
        return None
    if is_demo(manifest):
        return None  # a demo config never counts as a finished real build

    stats = manifest.get("stats") or {}
    if (stats.get("layout") or "embedded") != (requested_layout or DEFAULT_LAYOUT):
        return None
    if stats.get("layout") == "files":
        if not _files_config_complete(Path(out_dir), name, stats):
            return None
    else:
        files = shard_files(Path(out_dir), name)
        total = stats.get("num_shards", -1)
        expected = [f"test-{i:05d}-of-{total:05d}.parquet" for i in range(max(total, 0))]
        if [f.name for f in files] != expected or sum(f.stat().st_size for f in files) != stats.get("num_bytes"):
            return None
    known = {f.name for f in dataclass_fields(ConfigStats)}
    return ConfigStats(**{k: v for k, v in stats.items() if k in known})


def _files_config_complete(out_dir: Path, name: str, stats: Mapping[str, Any]) -> bool:
    """The metadata file has the recorded size and every image it names is in the folder."""

    path = metadata_path(out_dir, name)
    if not path.is_file() or path.stat().st_size != stats.get("metadata_bytes"):
        return False
    return all((out_dir / relative).is_file() for relative in image_paths(path))


def select_configs(*, benchmark: Optional[str] = None, families: Optional[list[str]] = None,
                   patterns: Optional[list[str]] = None) -> list[str]:
    """Every registered config of ``benchmark`` (its card template's families), only of
    ``families`` when given (both given: the benchmark's configs of those families). An unknown
    benchmark or family, or a family the benchmark does not cover, raises with the close names."""
    import fnmatch

    from mmlbdata.core.suggest import did_you_mean

    registered = all_configs()
    every_family = sorted({entry.family for entry in registered.values()})
    for family in families or []:
        if family not in every_family:
            raise UnknownConfigError(f"unknown family {family!r}{did_you_mean(family, every_family)}; "
                                     f"known: {', '.join(every_family)}")
    wanted = set(families or [])
    if benchmark:
        from mmlbdata.dataset.card import benchmark_families

        known = benchmark_families()
        if benchmark not in known:
            raise UnknownConfigError(f"unknown benchmark {benchmark!r}{did_you_mean(benchmark, list(known))}; "
                                     f"known: {', '.join(known)}")
        outside = sorted(wanted - set(known[benchmark]))
        if outside:
            raise UnknownConfigError(f"family {outside[0]!r} is not part of benchmark {benchmark!r} (its families: "
                                     f"{', '.join(known[benchmark])})")
        wanted = wanted or set(known[benchmark])
    names = [name for name, entry in registered.items() if not wanted or entry.family in wanted]
    if patterns:
        names = [n for n in names if any(fnmatch.fnmatch(n, p) for p in patterns)]
    return names


#: other names a benchmark is asked for by (``mmlb fetch --benchmark lvb``)
BENCHMARK_ALIASES = {"lvb": "longvideobench"}


def benchmark_configs(benchmark: str) -> list[str]:
    """Every config of a benchmark (``lvb`` is accepted for ``longvideobench``)."""
    return select_configs(benchmark=BENCHMARK_ALIASES.get(benchmark, benchmark))


def sources_from_dir(sources_dir: Optional[os.PathLike], explicit: Mapping[str, os.PathLike]) -> dict[str, Path]:
    """``sources_dir/<key>`` for every key that exists there; explicit ``--source`` paths win."""
    found: dict[str, Path] = {}
    if sources_dir is not None:
        for path in sorted(Path(sources_dir).iterdir()):
            if path.is_dir() or path.is_symlink():
                found[path.name] = path
    found.update({k: Path(v) for k, v in explicit.items()})
    return found


def build_all(names: list[str], sources: Mapping[str, os.PathLike], out_dir: os.PathLike, *,
              num_proc: int = 1, force: bool = False, seed: int = 0, limit: Optional[int] = None,
              options: Optional[Mapping[str, Any]] = None, **kwargs: Any) -> list[ConfigResult]:
    """Build ``names`` into ``out_dir``, keeping those already complete with the same parameters.

    Configs whose sources are absent are reported (status ``missing sources``), not attempted.
    """
    from mmlbdata.dataset.card import sync_readme

    results: dict[str, ConfigResult] = {}
    todo = []
    for name in names:
        entry = resolve(name)
        missing = config_missing_sources(entry.config, sources)
        if missing:
            results[name] = ConfigResult(name, False, error=f"no source folder for {', '.join(missing)}",
                                         report={"missing_sources": missing}, status="missing sources")
            continue
        requested = build_parameters(entry, sources, seed=seed, limit=limit, options=options)
        stats = None if force else completed_stats(out_dir, name, requested, kwargs.get("layout"))
        if stats is not None:
            results[name] = ConfigResult(name, True, stats, status="kept")
        else:
            todo.append(name)
    kept = [n for n, r in results.items() if r.status == "kept"]
    if kept:  # a crash after a config's move but before its README update must not unlist it
        sync_readme(out_dir, kept)
    if todo:
        built = build_configs(todo, sources, out_dir, num_proc=num_proc, seed=seed, limit=limit,
                              options=options, **kwargs)
        results.update({r.config: r for r in built})
        for result in built:
            if result.ok and result.stats is not None:
                result.stats = as_recorded(out_dir, result.stats)
    return [results[n] for n in names]


def as_recorded(out_dir: os.PathLike, stats: ConfigStats) -> ConfigStats:
    """A built config's statistics as its manifest holds them now: a config built later in the
    same run may have moved its shared images to a new partition, rewriting its metadata (and
    refreshing its manifest's size), so the summary says what a rerun, which keeps it, says."""
    recorded = (read_manifest(out_dir, stats.config) or {}).get("stats") or {}
    known = {f.name for f in dataclass_fields(ConfigStats)} - set(RUN_ONLY_STATS)
    return ConfigStats(**{**{f.name: getattr(stats, f.name) for f in dataclass_fields(ConfigStats)},
                          **{k: v for k, v in recorded.items() if k in known}})


def summary_table(results: list[ConfigResult], seconds: float) -> str:
    """The final table of a full build: configs, rows, images, bytes, time."""
    lines = [f"{'config':<36} {'status':<16} {'rows':>7} {'images':>8} {'bytes':>13} {'time(s)':>8}"]
    totals = [0, 0, 0]
    for r in results:
        if r.status == "missing sources":
            continue  # one summary below, not a line each
        if r.ok and r.stats is not None:
            s = r.stats
            totals = [totals[0] + s.num_rows, totals[1] + s.num_images, totals[2] + s.num_bytes]
            took = f"{s.seconds:.1f}" if r.status == "built" else "-"
            lines.append(f"{r.config:<36} {r.status:<16} {s.num_rows:>7} {s.num_images:>8} "
                         f"{s.num_bytes:>13,} {took:>8}")
        else:
            first_line = r.error.splitlines()[0] if r.error else ""
            lines.append(f"{r.config:<36} {r.status or 'failed':<16} {first_line}")
    ok = sum(r.ok for r in results)
    lines.append(f"{f'total: {ok}/{len(results)} configs':<53} {totals[0]:>7} {totals[1]:>8} "
                 f"{totals[2]:>13,} {seconds:>8.1f}")
    return "\n".join(lines + missing_sources_summary(results))


def missing_sources_summary(results: list[ConfigResult]) -> list[str]:
    """One short table for the configs not built for lack of sources: per missing source key, how
    many configs need it and the first few of them (a full build with one source gave 150 lines)."""
    by_key: dict[str, list[str]] = {}
    for r in results:
        for key in r.report.get("missing_sources", []) if r.status == "missing sources" else []:
            by_key.setdefault(key, []).append(r.config)
    if not by_key:
        return []
    count = sum(r.status == "missing sources" for r in results)
    lines = [f"\nnot built, sources missing: {count} config(s)", f"  {'source key':<24} {'configs':>7}  e.g."]
    for key, names in sorted(by_key.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        lines.append(f"  {key:<24} {len(names):>7}  {', '.join(names[:3])}{' ...' if len(names) > 3 else ''}")
    return lines
