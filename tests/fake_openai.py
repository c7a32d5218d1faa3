"""A loopback server speaking enough of the OpenAI chat completions API for tests."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable


class FakeOpenAI:
    """``responder(body) -> str`` makes each reply; ``fail_first`` requests get ``fail_status``.
    Every request body is kept in ``requests``; ``max_in_flight`` records peak concurrency."""

    def __init__(self, responder: Callable[[dict], str], fail_first: int = 0, fail_status: int = 500,
                 delay: float = 0.0):
        self.responder = responder
        self.fail_first = fail_first
        self.fail_status = fail_status
        self.delay = delay
        self.requests: list[dict] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with fake._lock:
                    fake.requests.append(body)
                    fail = len(fake.requests) <= fake.fail_first
                    fake.in_flight += 1
                    fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
                try:
                    if fake.delay:
                        import time

                        time.sleep(fake.delay)
                    if not self.path.endswith("/chat/completions"):
                        return self._send(404, {"error": {"message": "not found"}})
                    if fail:
                        return self._send(fake.fail_status, {"error": {"message": "try again", "type": "server_error"}})
                    text = fake.responder(body)
                    n_prompt = sum(len(str(m.get("content", "")).split()) for m in body["messages"])
                    return self._send(200, {
                        "id": f"cmpl-{len(fake.requests)}", "object": "chat.completion", "created": 0,
                        "model": body["model"],
                        "choices": [{"index": 0, "finish_reason": "stop",
                                     "message": {"role": "assistant", "content": text}}],
                        "usage": {"prompt_tokens": n_prompt, "completion_tokens": len(text.split()),
                                  "total_tokens": n_prompt + len(text.split())}})
                finally:
                    with fake._lock:
                        fake.in_flight -= 1

            def _send(self, status, payload):
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
