"""A Hugging Face Hub endpoint on 127.0.0.1 for fetch tests (``HF_ENDPOINT`` / ``endpoint=``).

Implements the routes ``huggingface_hub`` (2.x) calls for ``snapshot_download`` with a local dir
and ``hf_hub_download``, read from its ``_snapshot_download.py`` / ``file_download.py``:

- ``GET  /api/datasets/<repo>/revision/<rev>``       repo_info: ``{"id", "sha", "siblings"}``
- ``GET  /api/datasets/<repo>/tree/<rev>[/<path>]``  list_repo_tree (``recursive``): file and
  folder entries below ``path``
- ``POST /api/datasets/<repo>/paths-info/<rev>``      entries of the ``paths`` asked (HfFileSystem)
- ``HEAD|GET /datasets/<repo>/resolve/<rev>/<path>`` file metadata (``X-Repo-Commit``, ``ETag``,
  ``Content-Length``) and body, or the ``Range`` asked (206): enough for ``datasets.load_dataset``,
  in memory and streaming

Repos are ``{repo_id: {path: bytes}}`` (the ``main`` branch); every branch has one commit.
``branches`` adds other branches of a repo (``{repo_id: {branch: {path: bytes}}}``) and ``tags``
names a branch's commit (``{repo_id: {tag: branch}}``): a revision in a URL is then ``main``, a
branch, a tag or one of their commit shas (``commit_of(repo, branch)``), and any other answers
404 ``RevisionNotFound``; a repo without branches or tags answers every revision with ``main``.
A repo listed in ``gated`` answers 403 with ``X-Error-Code: GatedRepo`` (how the Hub says
"accept the terms first") unless the request carries ``Authorization: Bearer <token>``.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit


def commit_of(repo: str, branch: str = "main") -> str:
    """The one commit of ``repo``'s ``branch`` (main's is the sha the tests have always seen)."""
    return hashlib.sha1((repo if branch == "main" else f"{repo}@{branch}").encode()).hexdigest()


@dataclass
class LoopbackHub:
    repos: dict[str, dict[str, bytes]] = field(default_factory=dict)
    gated: set[str] = field(default_factory=set)
    token: str = "hf_test_token"  # a gated repo answers requests that carry this bearer token
    requests: list[tuple[str, str]] = field(default_factory=list)
    branches: dict[str, dict[str, dict[str, bytes]]] = field(default_factory=dict)  # repo -> branch -> files
    tags: dict[str, dict[str, str]] = field(default_factory=dict)  # repo -> tag -> the branch it points at

    def __enter__(self) -> "LoopbackHub":
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                hub._handle(self, body=True)

            def do_HEAD(self):
                hub._handle(self, body=False)

            def do_POST(self):  # paths-info (what `datasets` asks through HfFileSystem.info)
                hub._handle(self, body=True)

        class Server(ThreadingHTTPServer):
            request_queue_size = 128  # socketserver's 5 drops the SYNs of parallel readers (1 s retries)

        self._httpd = Server(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def run_client(self, code: str, *args: str, hf_home, extra_env: dict | None = None, timeout: int = 300) -> str:
        """Run ``python -c code *args`` in a fresh process that reads this Hub (online, every cache
        inside ``hf_home`` whatever the caller exported, the project importable); its stdout, after it
        exited 0."""
        caches = {"HF_HUB_CACHE": f"{hf_home}/hub", "HF_DATASETS_CACHE": f"{hf_home}/datasets",
                  "HF_XET_CACHE": f"{hf_home}/xet", "HF_ASSETS_CACHE": f"{hf_home}/assets"}  # over what the caller exported
        env = {**os.environ, "HF_ENDPOINT": self.endpoint, "HF_HUB_OFFLINE": "0", "HF_DATASETS_OFFLINE": "0",
               "HF_HOME": str(hf_home), **caches, "PYTHONPATH": str(Path(__file__).resolve().parents[1]),
               **(extra_env or {})}
        done = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True,
                              timeout=timeout)
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout

    def _find_repo(self, rest: str) -> tuple[str, str]:
        """Split ``<owner>/<name>/<tail>`` on a known repo id."""
        for repo in self.repos:
            if rest.startswith(repo + "/"):
                return repo, rest[len(repo) + 1:]
        return "", rest

    def _handle(self, h: BaseHTTPRequestHandler, body: bool) -> None:
        path = unquote(urlsplit(h.path).path)
        self.requests.append((h.command, path))
        for prefix, route in (("/api/datasets/", self._api), ("/datasets/", self._resolve)):
            if path.startswith(prefix):
                repo, tail = self._find_repo(path[len(prefix):])
                if not repo:
                    return self._send(h, 404, b"", {"X-Error-Code": "RepoNotFound"}, body)
                if repo in self.gated and h.headers.get("Authorization") != f"Bearer {self.token}":
                    return self._send(h, 403, b"gated", {"X-Error-Code": "GatedRepo",
                                                         "X-Error-Message": "Access to this repo is restricted"}, body)
                return route(h, repo, tail, body)
        self._send(h, 404, b"", {}, body)

    def _revisions(self, repo: str) -> dict[str, str]:
        """Every name a revision of ``repo`` may be given by (branch, tag, commit sha) -> its branch."""
        names = {"main": "main", commit_of(repo): "main"}
        for branch in self.branches.get(repo, {}):
            names[branch] = names[commit_of(repo, branch)] = branch
        for tag, branch in self.tags.get(repo, {}).items():
            names[tag] = branch
        return names

    def _at_revision(self, repo: str, rest: str) -> tuple[str | None, str]:
        """Split ``<revision>[/<path>]`` into (the branch it names, path); the branch is None for an
        unknown revision of a repo with branches. A revision may hold '/' (``refs%2Fpr%2F1``)."""
        names = self._revisions(repo)
        for name in sorted(names, key=len, reverse=True):
            if rest == name or rest.startswith(name + "/"):
                return names[name], rest[len(name) + 1:]
        path = rest.partition("/")[2]
        return (None if len(names) > 2 else "main"), path

    def _files(self, repo: str, branch: str) -> dict[str, bytes]:
        return self.repos[repo] if branch == "main" else self.branches[repo][branch]

    def _api(self, h, repo: str, tail: str, body: bool) -> None:
        route, _, rest = tail.partition("/")
        branch, under = self._at_revision(repo, rest)
        if branch is None:
            return self._send(h, 404, b"", {"X-Error-Code": "RevisionNotFound"}, body)
        files = self._files(repo, branch)
        if route == "revision":
            data = {"id": repo, "sha": commit_of(repo, branch), "private": False,
                    "siblings": [{"rfilename": name} for name in sorted(files)]}
        elif route == "tree":
            recursive = "recursive=true" in (urlsplit(h.path).query or "").lower() or not under
            data = _tree(files, under.strip("/"), recursive)
        elif route == "paths-info":
            length = int(h.headers.get("Content-Length") or 0)
            asked = parse_qs(h.rfile.read(length).decode()).get("paths", [])
            data = [entry for entry in _tree(files, "", True) if entry["path"] in asked]
        else:
            return self._send(h, 404, b"", {}, body)
        self._send(h, 200, json.dumps(data).encode(), {"Content-Type": "application/json"}, body)

    def _resolve(self, h, repo: str, tail: str, body: bool) -> None:
        if not tail.startswith("resolve/"):
            return self._send(h, 404, b"", {}, body)
        branch, name = self._at_revision(repo, tail[len("resolve/"):])
        if branch is None:
            return self._send(h, 404, b"", {"X-Error-Code": "RevisionNotFound"}, body)
        content = self._files(repo, branch).get(name)
        if content is None:
            return self._send(h, 404, b"", {"X-Error-Code": "EntryNotFound"}, body)
        etag = hashlib.sha256(content).hexdigest()
        commit = commit_of(repo, branch)
        ranged = re.fullmatch(r"bytes=(\d+)-(\d*)", h.headers.get("Range") or "")
        if ranged:  # HfFileSystem reads files in byte ranges (streaming `datasets`)
            start, end = int(ranged[1]), int(ranged[2] or len(content) - 1)
            return self._send(h, 206, content[start:end + 1], {
                "X-Repo-Commit": commit, "ETag": f'"{etag}"', "Accept-Ranges": "bytes",
                "Content-Range": f"bytes {start}-{min(end, len(content) - 1)}/{len(content)}"}, body)
        self._send(h, 200, content, {"X-Repo-Commit": commit, "ETag": f'"{etag}"', "Accept-Ranges": "bytes"}, body)

    @staticmethod
    def _send(h, status: int, content: bytes, headers: dict, body: bool) -> None:
        h.send_response(status)
        for key, value in headers.items():
            h.send_header(key, value)
        h.send_header("Content-Length", str(len(content)))
        h.end_headers()
        if body:
            h.wfile.write(content)


def _tree(files: dict[str, bytes], under: str, recursive: bool) -> list[dict]:
    """``list_repo_tree`` entries below ``under``: files and the folders that hold them."""
    prefix = f"{under}/" if under else ""
    entries: dict[str, dict] = {}
    for name, content in sorted(files.items()):
        if not name.startswith(prefix):
            continue
        parts = name[len(prefix):].split("/")
        for depth in range(1, len(parts)):
            folder = prefix + "/".join(parts[:depth])
            if recursive or depth == 1:
                entries.setdefault(folder, {"type": "directory", "path": folder,
                                            "oid": hashlib.sha1(folder.encode()).hexdigest()})
        if recursive or len(parts) == 1:
            entries[name] = {"type": "file", "path": name, "size": len(content),
                             "oid": hashlib.sha1(content).hexdigest()}
    return [entries[key] for key in sorted(entries)]
