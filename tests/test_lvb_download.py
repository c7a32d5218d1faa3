"""yt-dlp downloads against a loopback HTTP server (127.0.0.1) serving the real friday.mp4."""
from __future__ import annotations

import http.server
import json
import re
import threading

import pytest

pytest.importorskip("yt_dlp")

from mmlbdata.media.download_video import (VideoRequest, download_videos, format_selector,  # noqa: E402
                                           main, parse_requests)


class _Handler(http.server.BaseHTTPRequestHandler):
    """Serves one file with Range support; ``/flaky/`` paths fail their first requests."""

    def log_message(self, *args):
        pass

    def do_HEAD(self):
        self._serve(body=False)

    def do_GET(self):
        self._serve(body=True)

    def _serve(self, body):
        server = self.server
        server.log.append((self.command, self.path, self.headers.get("Range")))
        if self.path.startswith("/flaky/") and server.failures_left > 0:
            server.failures_left -= 1
            self.send_error(503)
            return
        if not self.path.endswith("/friday.mp4"):
            self.send_error(404)
            return
        data, start = server.data, 0
        match = re.match(r"bytes=(\d+)-", self.headers.get("Range") or "")
        if match:
            start = int(match.group(1))
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        else:
            self.send_response(200)
        self.send_header("Content-Type", "video/mp4")
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Content-Length", str(len(data) - start))
        self.end_headers()
        if body:
            self.wfile.write(data[start:])


@pytest.fixture
def server(real_data):
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.data = (real_data / "video" / "friday.mp4").read_bytes()
    httpd.log, httpd.failures_left = [], 0
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    httpd.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    yield httpd
    httpd.shutdown()
    httpd.server_close()


FAST = dict(retries=1, retry_sleep=0.0, socket_timeout=5.0)


def test_download_archive_and_skip(server, tmp_path):
    archive, report = tmp_path / "done.txt", tmp_path / "report.json"
    requests = [VideoRequest("vid_a", f"{server.url}/v/friday.mp4")]
    result = download_videos(requests, tmp_path / "videos", archive=archive, report=report, **FAST)
    assert result.failed == [] and [d["id"] for d in result.downloaded] == ["vid_a"]
    assert (tmp_path / "videos" / "vid_a.mp4").read_bytes() == server.data
    assert archive.read_text() == "vid_a\n"
    assert json.loads(report.read_text())["downloaded"][0]["id"] == "vid_a"
    before = len(server.log)
    again = download_videos(requests, tmp_path / "videos", archive=archive, **FAST)
    assert again.skipped == ["vid_a"] and len(server.log) == before  # nothing fetched


def test_failures_reported_rest_downloaded(server, tmp_path):
    requests = [VideoRequest("missing", f"{server.url}/v/none.mp4"),
                VideoRequest("ok", f"{server.url}/v/friday.mp4"),
                VideoRequest("../evil", f"{server.url}/v/friday.mp4")]
    result = download_videos(requests, tmp_path / "videos", attempts=2, report=tmp_path / "r.json", **FAST)
    assert [d["id"] for d in result.downloaded] == ["ok"]
    failed = {f["id"]: f for f in result.failed}
    assert "404" in failed["missing"]["error"] and failed["missing"]["attempts"] == 2
    assert "unsafe video id" in failed["../evil"]["error"]
    assert not (tmp_path / "evil.mp4").exists()
    assert {f["id"] for f in json.loads((tmp_path / "r.json").read_text())["failed"]} == {"missing", "../evil"}


def test_retries_after_server_errors(server, tmp_path):
    server.failures_left = 2
    result = download_videos([VideoRequest("flaky", f"{server.url}/flaky/friday.mp4")],
                             tmp_path / "videos", attempts=3, **FAST)
    assert result.failed == [] and (tmp_path / "videos" / "flaky.mp4").read_bytes() == server.data


def test_resume_partial_download(server, tmp_path):
    out = tmp_path / "videos"
    out.mkdir()
    half = len(server.data) // 2
    (out / "vid.mp4.part").write_bytes(server.data[:half])
    result = download_videos([VideoRequest("vid", f"{server.url}/v/friday.mp4")], out, **FAST)
    assert result.failed == []
    assert (out / "vid.mp4").read_bytes() == server.data
    assert ("GET", "/v/friday.mp4", f"bytes={half}-") in server.log


def test_parse_requests_and_format():
    reqs = parse_requests(["# ids", "abc123", "http://h/x/clip.one.mp4?a=1", "myid  https://e.com/v", ""])
    assert reqs == [VideoRequest("abc123", "https://www.youtube.com/watch?v=abc123"),
                    VideoRequest("clip_one", "http://h/x/clip.one.mp4?a=1"),
                    VideoRequest("myid", "https://e.com/v")]
    assert format_selector(480, can_merge=False) == "b[height<=480][ext=mp4]/b[height<=480]/b"
    assert format_selector(720, can_merge=True).startswith("bv*[height<=720][ext=mp4]+ba[ext=m4a]/")


def test_cli_main(server, tmp_path, capsys):
    listing = tmp_path / "ids.txt"
    listing.write_text(f"one {server.url}/v/friday.mp4\ntwo {server.url}/v/nope.mp4\n")
    code = main([str(listing), "--out", str(tmp_path / "v"), "--attempts", "1", "--retries", "0"])
    assert code == 1
    assert "downloaded 1, skipped 0, failed 1" in capsys.readouterr().out
    assert (tmp_path / "v" / "downloaded.txt").read_text() == "one\n"
