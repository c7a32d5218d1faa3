"""Download the videos of a LongVideoBench-style release with the yt-dlp Python API.

Everything goes through ``yt_dlp.YoutubeDL`` in-process: no shell, no subprocess, and user
strings never reach a command line. Video ids become file names only after a strict check
(``[A-Za-z0-9_-]``), so an id cannot escape the output folder.

Robustness for long lists:
- *retries*: yt-dlp's own HTTP/fragment retries, plus whole-item attempts with a back-off for
  failures yt-dlp does not retry (an extractor error, a 5xx on the first request);
- *resume*: partial ``.part`` files are continued with HTTP range requests (``continuedl``);
- *archive*: ids that finished are appended (and flushed) to an archive file, and skipped on
  the next run, so an interrupted run restarts where it stopped;
- *report*: a JSON file listing downloaded, skipped and failed ids with the error of each.
"""
from __future__ import annotations

import argparse
import json
import logging
import re
import shutil
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

from mmlbdata.core.extras import MissingExtraError, require

__all__ = ["VideoRequest", "DownloadReport", "parse_requests", "format_selector",
           "download_videos", "main"]

log = logging.getLogger(__name__)
_SAFE_ID = re.compile(r"^[A-Za-z0-9_-]{1,128}$")
YOUTUBE = "https://www.youtube.com/watch?v={}"


@dataclass(frozen=True)
class VideoRequest:
    """One video to fetch: the id names the output file, the URL is what yt-dlp opens."""

    id: str
    url: str


@dataclass
class DownloadReport:
    downloaded: list = field(default_factory=list)  # {"id", "path"}
    skipped: list = field(default_factory=list)  # ids already in the archive
    failed: list = field(default_factory=list)  # {"id", "url", "error", "attempts"}

    def write(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(asdict(self), indent=2, sort_keys=True) + "\n")


def _id_from_url(url: str) -> str:
    stem = Path(url.split("?", 1)[0].rstrip("/")).stem
    return re.sub(r"[^A-Za-z0-9_-]", "_", stem) or "video"


def parse_requests(lines: Iterable[str]) -> list[VideoRequest]:
    """``ID``, ``URL`` or ``ID URL`` per line (``#`` comments); bare ids are YouTube ids."""
    out = []
    for line in lines:
        parts = line.split("#", 1)[0].split()
        if not parts:
            continue
        if len(parts) == 1:
            token = parts[0]
            is_url = "://" in token
            out.append(VideoRequest(_id_from_url(token) if is_url else token,
                                    token if is_url else YOUTUBE.format(token)))
        else:
            out.append(VideoRequest(parts[0], parts[1]))
    return out


def format_selector(max_height: int | None = 720, prefer_mp4: bool = True,
                    can_merge: bool | None = None) -> str:
    """A yt-dlp format string: best video+audio up to ``max_height`` (merging needs ffmpeg;
    without it only single-file formats are asked for)."""
    if can_merge is None:
        can_merge = shutil.which("ffmpeg") is not None
    cap = f"[height<={max_height}]" if max_height else ""
    mp4 = "[ext=mp4]" if prefer_mp4 else ""
    single = f"b{cap}{mp4}/b{cap}/b"
    if not can_merge:
        return single
    audio = "[ext=m4a]" if prefer_mp4 else ""
    return f"bv*{cap}{mp4}+ba{audio}/bv*{cap}+ba/{single}"


def _read_archive(path: Path | None) -> set[str]:
    if path is None or not path.exists():
        return set()
    return {line.strip() for line in path.read_text().splitlines() if line.strip()}


class _Logger:
    """Routes yt-dlp's messages to ``logging`` instead of stdout."""

    def debug(self, msg):
        log.debug(msg)

    def info(self, msg):
        log.debug(msg)

    def warning(self, msg):
        log.info(msg)

    def error(self, msg):
        log.warning(msg)


def _ydl_params(request: VideoRequest, out_dir: Path, fmt: str, retries: int,
                socket_timeout: float, rate_limit: int | None) -> dict:
    params = {
        "outtmpl": {"default": str(out_dir / f"{request.id}.%(ext)s")},
        "format": fmt,
        "merge_output_format": "mp4",
        "retries": retries,
        "fragment_retries": retries,
        "continuedl": True,
        "noplaylist": True,
        "socket_timeout": socket_timeout,
        "quiet": True,
        "no_warnings": True,
        "noprogress": True,
        "logger": _Logger(),
    }
    if rate_limit:
        params["ratelimit"] = rate_limit
    return params


def _download_one(request: VideoRequest, params: dict) -> str:
    import yt_dlp  # lazy: only the download path needs it

    with yt_dlp.YoutubeDL(params) as ydl:
        info = ydl.extract_info(request.url, download=True)
        if info is None:
            raise RuntimeError("yt-dlp returned no information")
        downloads = info.get("requested_downloads") or [{}]
        return downloads[0].get("filepath") or ydl.prepare_filename(info)


def download_videos(requests: Sequence[VideoRequest], out_dir: str | Path, *,
                    max_height: int | None = 720, fmt: str | None = None, retries: int = 3,
                    attempts: int = 3, retry_sleep: float = 5.0, socket_timeout: float = 30.0,
                    rate_limit: int | None = None, archive: str | Path | None = None,
                    report: str | Path | None = None) -> DownloadReport:
    """Fetch every request into ``out_dir/<id>.<ext>``; never raises for one bad video."""
    yt_dlp = require("yt_dlp", "video", "video downloads")

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    archive = Path(archive) if archive else None
    done = _read_archive(archive)
    fmt = fmt or format_selector(max_height)
    result = DownloadReport()
    for request in requests:
        if not _SAFE_ID.match(request.id):
            result.failed.append({"id": request.id, "url": request.url, "attempts": 0,
                                  "error": "unsafe video id (allowed: letters, digits, _ and -)"})
            continue
        if request.id in done:
            result.skipped.append(request.id)
            continue
        params = _ydl_params(request, out_dir, fmt, retries, socket_timeout, rate_limit)
        error = None
        for attempt in range(1, attempts + 1):
            try:
                path = _download_one(request, params)
            except (yt_dlp.utils.YoutubeDLError, OSError, RuntimeError) as err:
                error = str(err)
                log.info("%s: attempt %d/%d failed: %s", request.id, attempt, attempts, err)
                if attempt < attempts:
                    time.sleep(retry_sleep * attempt)
                continue
            result.downloaded.append({"id": request.id, "path": str(path)})
            done.add(request.id)
            if archive:
                with archive.open("a") as handle:
                    handle.write(request.id + "\n")
            error = None
            break
        if error is not None:
            result.failed.append({"id": request.id, "url": request.url, "error": error,
                                  "attempts": attempts})
    if report:
        result.write(report)
    return result


def main(argv: Sequence[str] | None = None) -> int:
    """``python scripts/download_videos.py ids.txt --out videos/``; exit 1 if any failed."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("list", help="file with one 'ID', 'URL' or 'ID URL' per line")
    parser.add_argument("--out", required=True, help="output folder (the release's videos/)")
    parser.add_argument("--max-height", type=int, default=720)
    parser.add_argument("--format", dest="fmt", default=None, help="yt-dlp format string")
    parser.add_argument("--retries", type=int, default=3)
    parser.add_argument("--attempts", type=int, default=3)
    parser.add_argument("--archive", default=None, help="file of finished ids (resume)")
    parser.add_argument("--report", default=None, help="JSON report of the run")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    with open(args.list, encoding="utf-8") as handle:
        requests = parse_requests(handle)
    archive = args.archive or str(Path(args.out) / "downloaded.txt")
    try:
        result = download_videos(requests, args.out, max_height=args.max_height, fmt=args.fmt,
                                 retries=args.retries, attempts=args.attempts, archive=archive,
                                 report=args.report)
    except MissingExtraError as err:  # one line naming the extra, as `mmlb` says it
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"downloaded {len(result.downloaded)}, skipped {len(result.skipped)}, "
          f"failed {len(result.failed)}")
    for failure in result.failed:
        print(f"FAILED {failure['id']}: {failure['error']}")
    return 1 if result.failed else 0
