"""Fetching every source release from its official place into the layout the readers expect.

Why: rebuilding any config from public sources should start from an empty disk with one command,
and say exactly what was downloaded, from where, under which licence. The *where* is data, not
code: ``sources/registry.yaml`` lists each source key's parts (Hub files with a revision and the
patterns actually needed, official archive URLs with sizes and checksums, licence, terms) and how
they are placed (archive members, a stripped folder, renames). This module turns a selection of
keys (or of configs) into a plan, runs it and reports each part as fetched, kept (already placed
by an earlier run), failed (with why), manual (a step the user must take) or skipped.

- URL files go through :mod:`mmlbdata.sources.download` (resume, retries, checksums, atomic rename);
  Hub files through ``huggingface_hub.snapshot_download`` (allow_patterns, the user's token,
  ``HF_ENDPOINT``); archives are unpacked by :mod:`mmlbdata.sources.archives` (checked names, staged).
- Downloads are kept under ``DEST/.mmlb-fetch/downloads`` until their part is placed; a part's
  record ``DEST/.mmlb-fetch/<key>.<part>.json`` (origin, resolved revision, files) is written
  last, so a rerun keeps finished parts and resumes the rest; ``last-report.json`` keeps the
  outcome of the last run.
"""
from __future__ import annotations

import fnmatch
import json
import os
import shutil
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence

import yaml

from mmlbdata.core.suggest import did_you_mean

__all__ = ["HubFiles", "Part", "SourceEntry", "PartOutcome", "FetchReport", "FetchOptions",
           "load_registry", "select_parts", "fetch", "fetch_needed", "source_paths",
           "describe_plan", "STATE_DIR"]

STATE_DIR = ".mmlb-fetch"


@dataclass(frozen=True)
class HubFiles:
    repo: str
    revision: str = "main"
    patterns: tuple[str, ...] = ()
    repo_type: str = "dataset"


@dataclass(frozen=True)
class Part:
    """One downloadable (or manual) piece of a source release."""

    key: str
    name: str
    url: Optional[str] = None
    hub: Optional[HubFiles] = None
    extract: Optional[str] = None
    split: bool = False  # the files are the ordered pieces of one archive (videos.tar.part.aa, ...)
    members: tuple[str, ...] = ()
    strip: str = ""
    anchor: str = ""
    into: str = ""
    rename: Mapping[str, str] = field(default_factory=dict)
    families: tuple[str, ...] = ()
    optional: bool = False
    large: Optional[bool] = None  # None: the entry's ``large``
    manual: Optional[str] = None
    then: Optional[str] = None
    size: Optional[int] = None
    sha256: Optional[str] = None
    md5: Optional[str] = None
    note: Optional[str] = None

    @property
    def label(self) -> str:
        return f"{self.key}:{self.name}"

    @property
    def origin(self) -> str:
        if self.url:
            return self.url
        if self.hub:
            return f"hf://datasets/{self.hub.repo}@{self.hub.revision} {' '.join(self.hub.patterns)}"
        return "manual" if self.manual else f"follow-up step {self.then}"


@dataclass(frozen=True)
class SourceEntry:
    key: str
    title: str
    origin: str
    licence: str
    size: str
    parts: tuple[Part, ...]
    terms: Optional[str] = None
    large: bool = False
    root: str = ""
    verified: str = ""


# --------------------------------------------------------------------------- the registry

def _part(key: str, raw: Mapping[str, Any]) -> Part:
    hub = raw.get("hub")
    if hub:
        hub = HubFiles(hub["repo"], str(hub.get("revision", "main")), tuple(hub.get("patterns", ())),
                       hub.get("repo_type", "dataset"))
    if not (raw.get("url") or hub or raw.get("manual") or raw.get("then")):
        raise ValueError(f"registry: {key}:{raw.get('part')} has no url, hub, manual or then")
    return Part(key=key, name=raw["part"], url=raw.get("url"), hub=hub, extract=raw.get("extract"),
                split=bool(raw.get("split", False)),
                members=tuple(raw.get("members", ())), strip=raw.get("strip", ""),
                anchor=raw.get("anchor", ""), into=raw.get("into", ""),
                rename=dict(raw.get("rename", {})), families=tuple(raw.get("for", ())),
                optional=bool(raw.get("optional", False)), large=raw.get("large"), manual=raw.get("manual"), then=raw.get("then"),
                size=raw.get("size"), sha256=raw.get("sha256"), md5=raw.get("md5"), note=raw.get("note"))


def _entry(key: str, raw: Mapping[str, Any]) -> SourceEntry:
    parts = tuple(_part(key, p) for p in raw["parts"])
    names = [p.name for p in parts]
    if len(set(names)) != len(names):
        raise ValueError(f"registry: {key} has two parts with the same name")
    return SourceEntry(key=key, title=raw["title"], origin=raw["origin"], licence=raw["licence"],
                       size=str(raw.get("size", "?")), parts=parts, terms=raw.get("terms"),
                       large=bool(raw.get("large", False)), root=raw.get("root", ""),
                       verified=raw.get("verified", ""))


def load_registry(path: Optional[os.PathLike] = None) -> dict[str, SourceEntry]:
    """Source key -> entry, from ``sources/registry.yaml`` (package data) or ``path``."""
    if path is None:
        text = resources.files("mmlbdata.sources").joinpath("registry.yaml").read_text(encoding="utf-8")
    else:
        text = Path(path).read_text(encoding="utf-8")
    raw = yaml.safe_load(text) or {}
    return {key: _entry(key, value) for key, value in sorted(raw.items())}


# --------------------------------------------------------------------------- selection

def _split_request(text: str) -> tuple[str, Optional[str]]:
    key, _, part = text.partition(":")
    return key, part or None


def _takes(part: Part, part_name: Optional[str], families: Optional[set[str]]) -> bool:
    if part_name is not None:
        return part.name == part_name
    if part.optional:
        return False
    return families is None or not part.families or bool(set(part.families) & families)


def select_parts(registry: Mapping[str, SourceEntry], requests: Sequence[str] = (),
                 families: Optional[Mapping[str, set[str]]] = None) -> list[Part]:
    """The parts to fetch for ``KEY`` / ``KEY:PART`` requests and/or ``families`` (key -> families).

    A bare key takes every non-optional part; a key needed by families takes the non-optional
    parts whose ``for`` is empty or names one of those families; ``KEY:PART`` takes that part.
    """
    chosen: dict[str, Part] = {}
    wanted = [(k, p, None) for k, p in map(_split_request, requests)]
    wanted += [(k, None, fams) for k, fams in sorted((families or {}).items())]
    for key, part_name, fams in wanted:
        if key not in registry:
            raise KeyError(f"unknown source key {key!r}{did_you_mean(key, registry)}; known: {', '.join(registry)}")
        for part in registry[key].parts:
            if _takes(part, part_name, fams):
                chosen.setdefault(part.label, part)
        if part_name and f"{key}:{part_name}" not in chosen:
            known = ", ".join(p.name for p in registry[key].parts)
            raise KeyError(f"source {key} has no part {part_name!r}; its parts: {known}")
    return list(chosen.values())


def source_paths(registry: Mapping[str, SourceEntry], dest: os.PathLike, keys: Iterable[str]) -> dict[str, Path]:
    """Key -> the path a reader is given (``DEST/KEY``, or the entry's ``root`` below it)."""
    return {key: Path(dest) / key / registry[key].root if registry[key].root else Path(dest) / key
            for key in keys}


# --------------------------------------------------------------------------- report

@dataclass
class PartOutcome:
    label: str
    status: str  # fetched | kept | failed | manual | skipped
    detail: str = ""
    files: int = 0


@dataclass
class FetchReport:
    outcomes: list[PartOutcome]

    def count(self, status: str) -> int:
        return sum(o.status == status for o in self.outcomes)

    @property
    def ok(self) -> bool:
        return not any(o.status == "failed" for o in self.outcomes)

    def keys_ready(self) -> set[str]:
        """Keys none of whose parts failed or were skipped."""
        bad = {o.label.split(":")[0] for o in self.outcomes if o.status in ("failed", "skipped")}
        return {o.label.split(":")[0] for o in self.outcomes} - bad

    def to_json(self) -> str:
        return json.dumps([vars(o) for o in self.outcomes], indent=1)

    def summary(self) -> str:
        counts = ", ".join(f"{self.count(s)} {s}" for s in ("fetched", "kept", "failed", "manual", "skipped"))
        lines = [f"mmlb fetch: {counts}"]
        for o in self.outcomes:
            if o.status in ("fetched", "kept"):
                lines.append(f"  {o.status:<8} {o.label} ({o.files} files)")
            else:
                lines.append(f"  {o.status.upper():<8} {o.label}: {o.detail}")
        return "\n".join(lines)


# --------------------------------------------------------------------------- running

@dataclass
class FetchOptions:
    token: Optional[str] = None
    endpoint: Optional[str] = None       # default: $HF_ENDPOINT, else huggingface.co
    mirror: Optional[str] = None         # default: $MMLB_FETCH_MIRROR (resolved in fetch())
    # URL files from MIRROR/<host>/<path> (a local copy of the official hosts)
    allow_large: bool = False
    delete_archives: bool = False
    progress: bool = True
    retries: int = 4
    workers: int = 4


class PartError(Exception):
    """A part could not be fetched or placed; the message says why."""


def _record_path(dest: Path, part: Part) -> Path:
    return dest / STATE_DIR / f"{part.key}.{part.name}.json"


def _is_kept(dest: Path, part: Part) -> Optional[dict]:
    """The part's record when it came from the same origin and every file it placed is still there."""
    record_file = _record_path(dest, part)
    if not record_file.is_file():
        return None
    record = json.loads(record_file.read_text())
    if record.get("origin") != part.origin:
        return None  # the registry moved on (another revision or URL): fetch again
    base = dest / part.key
    placed = [base / name for name in record.get("files", [])]
    if not all(path.exists() for path in placed):
        return None
    if not part.extract and any(_too_small(path) for path in placed):
        return None  # an empty file placed before downloads were checked for it: fetch again
    return record


def _too_small(path: Path) -> bool:
    from mmlbdata.sources.download import implausibly_small

    return path.is_file() and implausibly_small(path) is not None


def _write_record(dest: Path, part: Part, files: Sequence[str], revision: Optional[str]) -> None:
    path = _record_path(dest, part)
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"part": part.label, "origin": part.origin, "revision": revision, "files": sorted(files)}
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record, indent=1))
    os.replace(tmp, path)


def _mirrored(url: str, mirror: Optional[str]) -> str:
    if not mirror:
        return url
    rest = url.split("://", 1)[1]
    return f"{mirror.rstrip('/')}/{rest}"


def _staging(dest: Path, part: Part) -> Path:
    return dest / STATE_DIR / "downloads" / part.key / part.name


def _check_space(dest: Path, part: Part, target: Path) -> None:
    """A download of known size that cannot fit is refused before it starts."""
    have = target.with_name(target.name + ".part")
    missing = (part.size or 0) - (have.stat().st_size if have.exists() else 0)
    free = shutil.disk_usage(dest).free
    if not target.exists() and missing > free:
        raise PartError(f"needs {missing / 1e9:.1f} GB more, {free / 1e9:.1f} GB free under {dest}")


def _download_url(dest: Path, part: Part, options: FetchOptions) -> list[Path]:
    from mmlbdata.sources.download import FileSpec, download_all

    target = _staging(dest, part) / part.url.rsplit("/", 1)[-1]
    _check_space(dest, part, target)
    spec = FileSpec(url=_mirrored(part.url, options.mirror), dest=target, sha256=part.sha256,
                    md5=part.md5, size=part.size)
    report = download_all([spec], num_workers=1, progress=options.progress, desc=part.label,
                          retries=options.retries)
    if not report.ok:
        raise PartError(report.failures[0].error)
    return [target]


def _hub_error(part: Part, err: Exception, terms: Optional[str]) -> PartError:
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError, RevisionNotFoundError

    repo = part.hub.repo
    if isinstance(err, GatedRepoError):
        return PartError(f"{repo} is gated: {terms or 'accept its terms on the Hub and log in'}")
    if isinstance(err, RevisionNotFoundError):
        return PartError(f"{repo} has no revision {part.hub.revision!r}")
    if isinstance(err, RepositoryNotFoundError):
        return PartError(f"{repo} not found (or private: log in with `hf auth login` / set HF_TOKEN)")
    return PartError(f"{repo}: {type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}")


def _resolve_revision(part: Part, options: FetchOptions) -> str:
    from huggingface_hub import HfApi

    api = HfApi(endpoint=options.endpoint, token=options.token)
    return api.repo_info(part.hub.repo, repo_type=part.hub.repo_type, revision=part.hub.revision).sha


def _download_hub(dest: Path, part: Part, options: FetchOptions, terms: Optional[str]) -> tuple[list[Path], str]:
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError
    from huggingface_hub.utils import are_progress_bars_disabled, disable_progress_bars, enable_progress_bars

    staging = _staging(dest, part)
    silence = not options.progress and not are_progress_bars_disabled()
    if silence:
        disable_progress_bars()
    try:
        commit = _resolve_revision(part, options)
        snapshot_download(part.hub.repo, repo_type=part.hub.repo_type, revision=commit,
                          allow_patterns=list(part.hub.patterns), local_dir=staging,
                          token=options.token, endpoint=options.endpoint, max_workers=options.workers)
    except (HfHubHTTPError, LocalEntryNotFoundError, OSError, ValueError) as err:
        raise _hub_error(part, err, terms) from None
    finally:
        if silence:  # the switch is process-wide: give it back as found
            enable_progress_bars()
    files = sorted(p for p in staging.rglob("*") if p.is_file() and ".cache" not in p.relative_to(staging).parts
                   and any(fnmatch.fnmatch(p.relative_to(staging).as_posix(), pat) for pat in part.hub.patterns))
    if not files:
        raise PartError(f"no file of {part.hub.repo}@{commit[:12]} matches {', '.join(part.hub.patterns)}")
    _refuse_implausible(part, files)
    return files, commit


def _refuse_implausible(part: Part, files: Sequence[Path]) -> None:
    """A Hub file below the plausible floor (an empty file) fails the part before it is placed or
    recorded; it is removed from staging so that the next run downloads it again."""
    from mmlbdata.sources.download import implausibly_small

    for path in files:
        why = implausibly_small(path)
        if why:
            path.unlink()
            raise PartError(f"{why} (from {part.hub.repo})")


def _place_file(src: Path, target: Path) -> None:
    """Hard link (no second copy on disk) where possible, else copy; atomic either way."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".placing")
    tmp.unlink(missing_ok=True)
    try:
        os.link(src, tmp)
    except OSError:
        shutil.copyfile(src, tmp)
    os.replace(tmp, target)


def _place_plain(dest: Path, part: Part, files: Sequence[Path], base: Path) -> list[str]:
    """Place downloaded files; ``strip`` / ``anchor`` rename (or leave out) names as for archive members."""
    from mmlbdata.core.paths import resolve_inside
    from mmlbdata.sources.archives import _target_name

    root = dest / part.key
    placed = []
    for src in files:
        name = _target_name(src.relative_to(base).as_posix(), part.strip, part.anchor)
        if name is None:
            continue
        name = part.rename.get(name, name)
        rel = f"{part.into}/{name}" if part.into else name
        _place_file(src, resolve_inside(root, rel, what=f"file of {part.label}"))
        placed.append(rel)
    if files and not placed:
        raise PartError(f"no downloaded file of {part.label} is kept by strip {part.strip!r} / anchor {part.anchor!r}")
    return placed


def _place_archive(dest: Path, part: Part, files: Sequence[Path], progress: bool) -> list[str]:
    from tqdm.auto import tqdm

    from mmlbdata.sources.archives import ArchiveError, extract_archive

    target = dest / part.key / part.into if part.into else dest / part.key
    archives = [sorted(files)] if part.split else [[f] for f in sorted(files)]
    names: list[str] = []
    with tqdm(desc=f"{part.label} extract", unit=" files", disable=not progress) as bar:
        for pieces in archives:
            try:
                names += extract_archive(pieces, target, kind=None if part.extract == "tar" else part.extract,
                                         members=part.members or None, strip=part.strip, anchor=part.anchor,
                                         on_member=lambda _: bar.update(1))
            except ArchiveError as err:
                raise PartError(str(err)) from None
    return [f"{part.into}/{n}" if part.into else n for n in names]


def _run_part(dest: Path, part: Part, entry: SourceEntry, options: FetchOptions) -> PartOutcome:
    if part.url:
        files, revision = _download_url(dest, part, options), None
    else:
        files, revision = _download_hub(dest, part, options, entry.terms)
    if part.extract:
        placed = _place_archive(dest, part, files, options.progress)
    else:
        placed = _place_plain(dest, part, files, _staging(dest, part))
    _write_record(dest, part, placed, revision)
    if options.delete_archives and part.extract:
        shutil.rmtree(_staging(dest, part), ignore_errors=True)
    return PartOutcome(part.label, "fetched", files=len(placed))


def _follow_up(dest: Path, part: Part, options: FetchOptions) -> PartOutcome:
    """The ``then`` step: the files a release refers to (mmlbdata.sources.download): a summarization
    release's PDFs, MemLens's images named by URL."""
    from mmlbdata.sources.download import download_all

    try:
        specs = release_pdf_specs(FOLLOW_UPS[part.then], dest / part.key)
    except (FileNotFoundError, ValueError) as err:  # a missing or malformed release (UnsafePathError too)
        raise PartError(f"{part.then}: {err}") from None
    specs = [replace(spec, url=_mirrored(spec.url, options.mirror)) for spec in specs]
    report = download_all(specs, num_workers=options.workers, progress=options.progress,
                          desc=f"{part.label}", retries=options.retries)
    if not report.ok:
        return PartOutcome(part.label, "failed", report.summary().replace("\n", "; "), len(report.results))
    status = "kept" if all(r.cached for r in report.results) else "fetched"
    return PartOutcome(part.label, status, files=len(report.results))


def release_pdf_specs(key: str, root: Path, *, split: str = "test", dest: Optional[Path] = None,
                      urls: Optional[Mapping[str, str]] = None, checksums: Optional[Mapping[str, str]] = None,
                      url_template: Optional[str] = None, version: Optional[str] = None) -> list:
    """The PDFs a GovReport / Multi-LexSum release at ``root`` refers to, as download specs (MemLens:
    the images its records name by URL, into ``url_images/``).

    Shared by the registry's follow-up steps and ``mmlb fetch KEY=PATH``; ``dest`` defaults to the
    release's ``pdfs/`` folder. Raises FileNotFoundError / ValueError for a missing or bad release.
    """
    if key == "memlens":
        from mmlbdata.sources import memlens

        return memlens.url_image_specs(root, dest)
    if key == "govreport":
        from mmlbdata.sources import govreport

        if not (govreport.release_root(root) / "gao").is_dir():
            raise FileNotFoundError(f"no GovReport release under {root} (expected gov-report/gao/): place it first")
        records = list(govreport.iter_records(root, split=split))
        kwargs = {"url_template": url_template} if url_template else {}
        return govreport.pdf_specs(records, Path(dest or govreport.release_root(root) / "pdfs"),
                                   urls=urls, checksums=checksums, **kwargs)
    if key == "multi_lexsum":
        from mmlbdata.sources import multi_lexsum

        cases = list(multi_lexsum.iter_cases(root, split=split, version=version))
        return multi_lexsum.pdf_specs(cases, Path(dest or root / "pdfs"), urls=urls, checksums=checksums)
    raise ValueError(f"no release PDFs for source key {key!r}")


FOLLOW_UPS: dict[str, str] = {  # follow-up step -> the source key whose release PDFs it fetches
    "govreport_pdfs": "govreport",
    "multi_lexsum_pdfs": "multi_lexsum",
    "memlens_url_images": "memlens",
}


def _kept_record(dest: Path, part: Part) -> Optional[dict]:
    return _is_kept(dest, part) if (part.url or part.hub) else None


def _refusal(part: Part, entry: SourceEntry, options: FetchOptions,
             record: Optional[dict]) -> Optional[PartOutcome]:
    """Manual parts, and large parts not yet placed (``record``: a large part placed by an earlier
    ``--allow-large`` run is kept, not skipped, so its key stays ready for ``build --fetch``)."""
    if part.manual:
        return PartOutcome(part.label, "manual", part.manual)
    large = entry.large if part.large is None else part.large
    if large and not options.allow_large and record is None:
        return PartOutcome(part.label, "skipped", f"large download ({entry.size}): pass --allow-large to fetch it")
    return None


def fetch_part(dest: Path, part: Part, entry: SourceEntry, options: FetchOptions) -> PartOutcome:
    """Fetch and place one part; never raises for a failed download or a bad archive."""
    record = _kept_record(dest, part)
    refused = _refusal(part, entry, options, record)
    if refused:
        return refused
    outcomes = []
    try:
        if record is not None:
            outcomes.append(PartOutcome(part.label, "kept", files=len(record.get("files", []))))
        elif part.url or part.hub:
            outcomes.append(_run_part(dest, part, entry, options))
        if part.then:
            outcomes.append(_follow_up(dest, part, options))
    except PartError as err:
        return PartOutcome(part.label, "failed", str(err))
    return _merge(part, outcomes)


def _merge(part: Part, outcomes: Sequence[PartOutcome]) -> PartOutcome:
    failed = [o for o in outcomes if o.status == "failed"]
    if failed:
        return failed[0]
    status = "fetched" if any(o.status == "fetched" for o in outcomes) else "kept"
    return PartOutcome(part.label, status, files=sum(o.files for o in outcomes))


def _with_env_defaults(options: FetchOptions) -> FetchOptions:
    """The one place the environment fills what the caller (API or CLI) left unset.

    HF_ENDPOINT is read here as well as by huggingface_hub because huggingface_hub reads it once,
    at import: a value set later in the same process (a test, a notebook) would otherwise be missed.
    """
    return replace(options, endpoint=options.endpoint or os.environ.get("HF_ENDPOINT") or None,
                   mirror=options.mirror or os.environ.get("MMLB_FETCH_MIRROR") or None)


def fetch(registry: Mapping[str, SourceEntry], parts: Sequence[Part], dest: os.PathLike,
          options: Optional[FetchOptions] = None) -> FetchReport:
    """Fetch ``parts`` into ``dest`` (one folder per key); one outcome per part, in order."""
    options = _with_env_defaults(options or FetchOptions())
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    report = FetchReport([fetch_part(dest, part, registry[part.key], options) for part in parts])
    (dest / STATE_DIR).mkdir(exist_ok=True)
    (dest / STATE_DIR / "last-report.json").write_text(report.to_json())
    return report


def fetch_needed(needed: Mapping[str, set[str]], dest: os.PathLike, options: Optional[FetchOptions] = None,
                 registry: Optional[Mapping[str, SourceEntry]] = None) -> tuple[FetchReport, dict[str, Path]]:
    """``mmlb build --fetch``: fetch the parts ``needed`` (source key -> the families that read it:
    ``mmlbdata.dataset.registry.families_for_configs``); the report and the paths of ready keys.
    Keys the registry does not list (a release given by hand) are left to the caller."""
    registry = registry if registry is not None else load_registry()
    needed = {k: f for k, f in needed.items() if k in registry}
    report = fetch(registry, select_parts(registry, families=needed), dest, options)
    return report, source_paths(registry, dest, sorted(report.keys_ready()))


# --------------------------------------------------------------------------- listing

def describe_plan(registry: Mapping[str, SourceEntry], parts: Sequence[Part], dest: os.PathLike,
                  options: Optional[FetchOptions] = None) -> str:
    """What ``fetch`` would do, one line per part (nothing is downloaded)."""
    options = options or FetchOptions()
    dest = Path(dest)
    lines = []
    for part in parts:
        entry = registry[part.key]
        record = _kept_record(dest, part)
        refused = _refusal(part, entry, options, record)
        state = refused.status if refused else ("kept" if record is not None else "fetch")
        where = dest / part.key / part.into if part.into else dest / part.key
        how = f" extract {part.extract}" + (f" [{', '.join(part.members)}]" if part.members else "") if part.extract else ""
        lines.append(f"{state:<7} {part.label:<28} {part.origin}{how} -> {where}")
        if refused:
            lines.append(f"        {refused.detail}")
    for key in sorted({p.key for p in parts}):
        if registry[key].terms:
            lines.append(f"terms   {key}: {registry[key].terms}")
    lines.append(_plan_total(parts))
    return "\n".join(lines)


def _plan_total(parts: Sequence[Part]) -> str:
    """The plan's last line; a size only where the registry lists one (never "0.00 GB" for unknown)."""
    from mmlbdata.core.report import human_bytes

    fetched = [p for p in parts if p.url or p.hub]
    known = sum(p.size or 0 for p in fetched)
    unknown = sum(p.size is None for p in fetched)
    if not fetched:
        return f"total   {len(parts)} parts; nothing to download"
    if unknown == len(fetched):
        return f"total   {len(parts)} parts; sizes not listed in the registry (see `mmlb fetch --list`)"
    return (f"total   {len(parts)} parts; known download size {human_bytes(known)}"
            + (f", plus {unknown} parts of unlisted size (see `mmlb fetch --list`)" if unknown else ""))


def describe_registry(registry: Mapping[str, SourceEntry]) -> str:
    """``mmlb fetch --list``: each key's origin, size and licence."""
    lines = []
    for key, entry in registry.items():
        flags = " [large: --allow-large]" if entry.large or any(p.large for p in entry.parts) else ""
        flags += " [terms]" if entry.terms else ""
        lines.append(f"{key:<16} {entry.size}{flags}\n    origin:  {entry.origin}\n    licence: {entry.licence}")
        if entry.terms:
            lines.append(f"    terms:   {entry.terms}")
    return "\n".join(lines)
