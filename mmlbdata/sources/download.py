"""Fetch source files over HTTP(S): retries, resume, checksums, atomic placement, a report.

Why its own module: every family that builds from files not shipped with a release (GAO report
PDFs, Multi-LexSum court documents, videos, ...) needs the same careful download loop, and a
half-written or corrupted file must never be mistaken for a good one. The rules:

- a file is written to ``<dest>.part`` and renamed onto ``<dest>`` only once it is complete and
  its checksum (sha256 and/or md5, when given) matches, so ``<dest>`` is either absent or good;
- a file of unknown size must still reach :func:`plausible_floor` (one byte; more for formats with
  a fixed minimum): an empty body served with status 200 is refused, never placed;
- an interrupted or truncated transfer leaves the ``.part`` file, and the next attempt asks for
  the rest with an HTTP ``Range`` header (a server that ignores it is handled: we start over);
- transient failures (connection errors, timeouts, short reads, 408/425/429/5xx) are retried
  with exponential backoff (``Retry-After`` honoured, capped); other HTTP errors fail at once;
- nothing raises out of :func:`download_all`: every file gets a :class:`DownloadResult` and the
  :class:`DownloadReport` lists the failures with their reason.

Hub files go through the same loop: :func:`hub_spec` turns a (repo, filename, revision) into the
Hub's resolve URL with ``huggingface_hub.hf_hub_url`` (so an ``endpoint`` mirror works too).
Only the standard library is used for HTTP; ``tqdm`` draws the progress bar.
"""
from __future__ import annotations

import email.utils
import hashlib
import http.client
import os
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Mapping

__all__ = [
    "FileSpec", "DownloadResult", "DownloadReport", "DownloadError", "ChecksumError",
    "download_file", "download_all", "hub_spec", "file_digest", "verify_file", "plausible_floor",
    "implausibly_small",
]

USER_AGENT = "mmlbdata-downloader/1.0"
RETRYABLE_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})
CHUNK = 1 << 20


class DownloadError(Exception):
    """A download failed; ``retryable`` says whether trying again may help."""

    def __init__(self, message: str, *, retryable: bool = True, retry_after: float | None = None):
        super().__init__(message)
        self.retryable = retryable
        self.retry_after = retry_after


class ChecksumError(DownloadError):
    """The complete file does not have the expected digest (the partial file is discarded)."""


@dataclass(frozen=True)
class FileSpec:
    """One file to fetch: where from, where to, and what it must hash to."""

    url: str
    dest: Path
    sha256: str | None = None
    md5: str | None = None
    size: int | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    # Sent only to the first host, never forwarded on a redirect (tokens must not reach a CDN).
    auth_headers: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self):
        object.__setattr__(self, "dest", Path(self.dest))
        for name in ("sha256", "md5"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, value.strip().lower())


@dataclass
class DownloadResult:
    spec: FileSpec
    ok: bool
    attempts: int = 0
    bytes_received: int = 0
    cached: bool = False
    error: str | None = None

    @property
    def path(self) -> Path:
        return self.spec.dest


@dataclass
class DownloadReport:
    results: list[DownloadResult]

    @property
    def failures(self) -> list[DownloadResult]:
        return [r for r in self.results if not r.ok]

    @property
    def ok(self) -> bool:
        return not self.failures

    def summary(self) -> str:
        done = sum(r.ok and not r.cached for r in self.results)
        cached = sum(r.cached for r in self.results)
        lines = [f"{done} downloaded, {cached} already present, {len(self.failures)} failed"]
        lines += [f"  FAILED {r.spec.url} -> {r.spec.dest}: {r.error}" for r in self.failures]
        return "\n".join(lines)

    def raise_for_failures(self) -> None:
        if self.failures:
            raise DownloadError(self.summary(), retryable=False)


def file_digest(path: Path, algorithm: str) -> str:
    """Hex digest of a file, read in chunks (files may be larger than memory)."""
    h = hashlib.new(algorithm)
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


#: the smallest file a format allows, in bytes (what the format itself forces, nothing guessed):
#: a zip holds at least its end-of-central-directory record, gzip its header and trailer, parquet
#: its magic, footer length and magic, JSON ``{}``. No ``.tar``: releases name compressed tars so
#: too (the registry's ``extract: tar`` reads any compression), so the name does not tell the format.
FORMAT_FLOORS = {".zip": 22, ".gz": 18, ".tgz": 18, ".parquet": 12, ".json": 2, ".jsonl": 2}


def plausible_floor(name: str) -> int:
    """The fewest bytes a file called ``name`` can have and still be a release file.

    Used where no size is known (the registry lists none, a Hub file): no release file is empty,
    so the floor is one byte, or the format's own minimum (:data:`FORMAT_FLOORS`). A higher floor
    would need a size the registry does not have; the exact size and checksums, where listed,
    check the rest. The pieces of a split archive (``videos.tar.part.aa``) have only the floor 1.
    """
    return FORMAT_FLOORS.get(Path(name).suffix.lower(), 1)


def implausibly_small(path: Path, name: str | None = None) -> str | None:
    """Why ``path`` (a file called ``name``) is too small to be what was asked for, or None."""
    name = name or path.name
    size, floor = path.stat().st_size, plausible_floor(name)
    if size >= floor:
        return None
    if not size:
        return f"{name}: empty download (0 bytes), refused"
    return f"{name}: {size} bytes, less than any {Path(name).suffix} file can have ({floor}), refused"


def verify_file(path: Path, spec: FileSpec) -> None:
    """Raise :class:`ChecksumError` if ``path`` does not match the spec's size or digests, or, where
    no size is given, is smaller than any file of its kind (:func:`plausible_floor`)."""
    if spec.size is not None and path.stat().st_size != spec.size:
        raise ChecksumError(f"size mismatch for {path}: expected {spec.size}, got {path.stat().st_size}")
    too_small = implausibly_small(path, spec.dest.name) if spec.size is None else None
    if too_small:
        raise ChecksumError(too_small)
    for algorithm in ("sha256", "md5"):
        expected = getattr(spec, algorithm)
        if expected is not None:
            got = file_digest(path, algorithm)
            if got != expected:
                raise ChecksumError(f"{algorithm} mismatch for {path}: expected {expected}, got {got}")


def _part_path(dest: Path) -> Path:
    return dest.with_name(dest.name + ".part")


def _retry_after(headers) -> float | None:
    value = headers.get("Retry-After") if headers is not None else None
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value)
        return max(0.0, parsed.timestamp() - time.time()) if parsed else None


def _open(spec: FileSpec, offset: int, timeout: float):
    request = urllib.request.Request(spec.url, headers={"User-Agent": USER_AGENT, **spec.headers})
    for key, value in spec.auth_headers.items():
        request.add_unredirected_header(key, value)
    if offset:
        request.add_header("Range", f"bytes={offset}-")
    try:
        return urllib.request.urlopen(request, timeout=timeout)
    except urllib.error.HTTPError as err:
        if err.code == 416 and offset:
            return err  # the part file may already be complete; the caller checks
        raise DownloadError(f"HTTP {err.code} {err.reason}", retryable=err.code in RETRYABLE_STATUS,
                            retry_after=_retry_after(err.headers)) from None
    except (urllib.error.URLError, OSError, http.client.HTTPException) as err:
        reason = getattr(err, "reason", err)
        raise DownloadError(f"connection failed: {reason}") from None


def _start_offset(response, offset: int) -> int:
    """Where the body of ``response`` starts in the file: ``offset`` (206) or 0 (full body)."""
    if response.status != 206:
        return 0
    content_range = response.headers.get("Content-Range", "")
    try:
        start = int(content_range.split()[1].split("-")[0])
    except (IndexError, ValueError):
        raise DownloadError(f"bad Content-Range {content_range!r}") from None
    if start != offset:
        raise DownloadError(f"server resumed at {start}, expected {offset}")
    return offset


def _expected_total(response, start: int) -> int | None:
    length = response.headers.get("Content-Length")
    return start + int(length) if length and length.isdigit() else None


def _transfer(spec: FileSpec, timeout: float, on_bytes: Callable[[int], None]) -> None:
    """One attempt: append the rest of the file to the part file (``on_bytes`` sees each block)."""
    part = _part_path(spec.dest)
    offset = part.stat().st_size if part.exists() else 0
    response = _open(spec, offset, timeout)
    if getattr(response, "code", None) == 416:
        response.close()
        return  # nothing more to fetch; verification decides whether the part is good
    with response:
        start = _start_offset(response, offset)
        expected = _expected_total(response, start)
        received = 0
        with open(part, "r+b" if start else "wb") as out:
            out.seek(start)
            out.truncate()
            try:
                for block in iter(lambda: response.read(CHUNK), b""):
                    out.write(block)
                    received += len(block)
                    on_bytes(len(block))
            except (OSError, http.client.HTTPException) as err:
                raise DownloadError(f"transfer interrupted after {start + received} bytes: {err}") from None
            finally:
                out.flush()
                os.fsync(out.fileno())
        if expected is not None and start + received < expected:
            raise DownloadError(f"short read: got {start + received} of {expected} bytes")


def download_file(spec: FileSpec, *, retries: int = 4, backoff: float = 1.0, max_backoff: float = 60.0,
                  timeout: float = 60.0, overwrite: bool = False,
                  on_bytes: Callable[[int], None] = lambda n: None,
                  sleep: Callable[[float], None] = time.sleep) -> DownloadResult:
    """Fetch one file (see the module docstring); never raises for a failed download."""
    dest = spec.dest
    result = DownloadResult(spec, ok=False)
    if dest.exists() and not overwrite:
        try:
            verify_file(dest, spec)
            result.ok = result.cached = True
            return result
        except ChecksumError as err:
            result.error = f"existing file replaced: {err}"
            dest.unlink()
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = _part_path(dest)

    def count(n: int) -> None:
        result.bytes_received += n
        on_bytes(n)

    while result.attempts <= retries:
        result.attempts += 1
        try:
            _transfer(spec, timeout, count)
            verify_file(part, spec)
            os.replace(part, dest)
            result.ok, result.error = True, None
            return result
        except ChecksumError as err:
            part.unlink(missing_ok=True)  # a corrupt part cannot be resumed: start over
            result.error = str(err)
            delay = None
        except DownloadError as err:
            result.error = str(err)
            if not err.retryable:
                break
            delay = err.retry_after
        if result.attempts <= retries:
            wait = backoff * 2 ** (result.attempts - 1) if delay is None else delay
            sleep(min(wait, max_backoff))
    return result


def download_all(specs: Iterable[FileSpec], *, num_workers: int = 4, progress: bool = True,
                 desc: str = "download", **kwargs) -> DownloadReport:
    """Fetch many files in parallel threads; results keep the input order."""
    from tqdm.auto import tqdm

    specs = list(specs)
    dests = [s.dest.resolve() for s in specs]
    if len(set(dests)) != len(dests):
        raise ValueError("two downloads share a destination path")
    known = [s.size for s in specs]
    total = sum(known) if all(k is not None for k in known) else None
    lock = threading.Lock()
    with tqdm(total=total, unit="B", unit_scale=True, desc=desc, disable=not progress) as bar:
        def on_bytes(n: int) -> None:
            with lock:
                bar.update(n)

        with ThreadPoolExecutor(max_workers=max(1, num_workers)) as pool:
            results = list(pool.map(lambda s: download_file(s, on_bytes=on_bytes, **kwargs), specs))
    return DownloadReport(results)


def hub_spec(repo_id: str, filename: str, dest: Path, *, repo_type: str = "dataset",
             revision: str | None = None, endpoint: str | None = None, sha256: str | None = None,
             size: int | None = None, token: str | None = None) -> FileSpec:
    """A :class:`FileSpec` for a file of a Hugging Face Hub repository.

    The URL comes from ``huggingface_hub.hf_hub_url`` (``endpoint`` for a mirror); a ``token``
    is sent as an unredirected header, so it never reaches the storage host a file redirects to.
    Pin ``revision`` to a commit for reproducible builds.
    """
    from huggingface_hub import hf_hub_url

    url = hf_hub_url(repo_id, filename, repo_type=repo_type, revision=revision, endpoint=endpoint)
    auth = {"Authorization": f"Bearer {token}"} if token else {}
    return FileSpec(url=url, dest=Path(dest), sha256=sha256, size=size, auth_headers=auth)
