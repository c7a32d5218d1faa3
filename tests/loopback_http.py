"""A real HTTP server on 127.0.0.1 for download tests (no network leaves the machine).

Serves in-memory files and can misbehave on purpose, per path: fail the first N requests with
503, cut the first full transfer short (the Content-Length still promises the whole file), or
ignore ``Range`` headers. It records every request so tests can assert what was asked for.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Behaviour:
    fail_first: int = 0          # answer 503 to this many requests first
    truncate_first: int | None = None  # the first 200/206 body stops after this many bytes
    ignore_range: bool = False
    status: int | None = None    # always answer this status (e.g. 404)
    redirect_to: str | None = None


@dataclass
class LoopbackServer:
    files: dict[str, bytes] = field(default_factory=dict)
    behaviour: dict[str, Behaviour] = field(default_factory=dict)
    requests: list[tuple[str, str | None, dict]] = field(default_factory=list)

    def __enter__(self) -> "LoopbackServer":
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def do_GET(self):
                server._handle(self)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}{path}"

    def count(self, path: str) -> int:
        return sum(1 for p, _, _ in self.requests if p == path)

    def ranges(self, path: str) -> list[str | None]:
        return [r for p, r, _ in self.requests if p == path]

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        path = h.path
        rng = h.headers.get("Range")
        self.requests.append((path, rng, dict(h.headers)))
        b = self.behaviour.setdefault(path, Behaviour())
        if b.redirect_to:
            h.send_response(302)
            h.send_header("Location", self.url(b.redirect_to))
            h.send_header("Content-Length", "0")
            h.end_headers()
            return
        if b.status is not None or path not in self.files:
            h.send_error(b.status or 404)
            return
        if b.fail_first > 0:
            b.fail_first -= 1
            h.send_response(503)
            h.send_header("Retry-After", "0")
            h.send_header("Content-Length", "0")
            h.end_headers()
            return
        data = self.files[path]
        start = 0
        if rng and not b.ignore_range:
            start = int(rng.split("=")[1].split("-")[0])
            if start >= len(data):
                h.send_response(416)
                h.send_header("Content-Range", f"bytes */{len(data)}")
                h.send_header("Content-Length", "0")
                h.end_headers()
                return
            h.send_response(206)
            h.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        else:
            h.send_response(200)
        body = data[start:]
        h.send_header("Content-Length", str(len(body)))
        h.send_header("Accept-Ranges", "bytes")
        h.end_headers()
        if b.truncate_first is not None:
            body = body[: b.truncate_first]
            b.truncate_first = None
            h.wfile.write(body)
            h.wfile.flush()
            h.close_connection = True
            return
        h.wfile.write(body)
