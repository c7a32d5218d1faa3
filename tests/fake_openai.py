"""A loopback server speaking enough of the OpenAI chat completions API for tests.

``strict=True`` answers as OpenAI does to what it does not document: HTTP 400
``Unrecognized request argument supplied: <name>`` for a body parameter outside
:data:`DOCUMENTED` (the create-chat-completion reference), and 400 for a content part of another
shape (text: ``type``, ``text``; image: ``type``, ``image_url`` with ``url`` and an optional
``detail`` of auto/low/high). A failing request (``fail_first``, or ``fails(number, body)``) is
answered ``fail_status`` with ``retry-after-ms: 1``, so the ``openai`` client's own retries do not
sleep; ``delay`` is a fixed latency per request.
"""
from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, Optional

#: POST /v1/chat/completions body parameters in OpenAI's API reference
DOCUMENTED = frozenset({
    "messages", "model", "audio", "frequency_penalty", "function_call", "functions", "logit_bias", "logprobs",
    "max_completion_tokens", "max_tokens", "metadata", "modalities", "n", "parallel_tool_calls", "prediction",
    "presence_penalty", "prompt_cache_key", "reasoning_effort", "response_format", "safety_identifier", "seed",
    "service_tier", "stop", "store", "stream", "stream_options", "temperature", "tool_choice", "tools",
    "top_logprobs", "top_p", "user", "verbosity", "web_search_options"})


def shape_problem(body: dict) -> Optional[str]:
    """What OpenAI would refuse in ``body`` (None: nothing)."""
    for name in body:
        if name not in DOCUMENTED:
            return f"Unrecognized request argument supplied: {name}"
    for message in body.get("messages", []):
        content = message.get("content")
        if message.get("role") not in ("system", "developer", "user", "assistant", "tool"):
            return f"Invalid value: '{message.get('role')}'. Supported values are: 'system', 'assistant', 'user'..."
        for part in content if isinstance(content, list) else []:
            kind = part.get("type")
            if kind == "text" and set(part) == {"type", "text"} and isinstance(part["text"], str):
                continue
            if kind == "image_url" and set(part) == {"type", "image_url"} and set(part["image_url"]) <= {"url", "detail"} \
                    and part["image_url"].get("detail", "auto") in ("auto", "low", "high"):
                continue
            return f"Invalid content part: {json.dumps(part)[:200]}"
    return None


class FakeOpenAI:
    """``responder(body) -> str`` makes each reply; ``fail_first`` requests (or those ``fails(n, body)``
    picks, ``n`` counting from 1) get ``fail_status``. Every request body is kept in ``requests``;
    ``max_in_flight`` records peak concurrency."""

    def __init__(self, responder: Callable[[dict], str], fail_first: int = 0, fail_status: int = 500,
                 delay: float = 0.0, strict: bool = False, fails: Optional[Callable[[int, dict], bool]] = None):
        self.responder = responder
        self.fail_first = fail_first
        self.fail_status = fail_status
        self.delay = delay
        self.strict = strict
        self.fails = fails
        self.requests: list[dict] = []
        self.refused: list[str] = []  # the 400 messages of strict mode
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
                    number = len(fake.requests)
                    fail = number <= fake.fail_first or bool(fake.fails and fake.fails(number, body))
                    fake.in_flight += 1
                    fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
                try:
                    if fake.delay:
                        time.sleep(fake.delay)
                    if not self.path.endswith("/chat/completions"):
                        return self._send(404, {"error": {"message": "not found"}})
                    problem = shape_problem(body) if fake.strict else None
                    if problem:
                        with fake._lock:
                            fake.refused.append(problem)
                        return self._send(400, {"error": {"message": problem, "type": "invalid_request_error",
                                                          "param": None, "code": None}})
                    if fail:
                        return self._send(fake.fail_status, {"error": {"message": "try again", "type": "server_error"}},
                                          {"retry-after-ms": "1"})
                    text = fake.responder(body)
                    n_prompt = sum(len(str(m.get("content", "")).split()) for m in body["messages"])
                    return self._send(200, {
                        "id": f"cmpl-{number}", "object": "chat.completion", "created": 0,
                        "model": body["model"],
                        "choices": [{"index": 0, "finish_reason": "stop",
                                     "message": {"role": "assistant", "content": text}}],
                        "usage": {"prompt_tokens": n_prompt, "completion_tokens": len(text.split()),
                                  "total_tokens": n_prompt + len(text.split())}})
                finally:
                    with fake._lock:
                        fake.in_flight -= 1

            def _send(self, status, payload, headers=None):
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
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
