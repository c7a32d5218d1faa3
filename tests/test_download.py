"""The downloader against a real loopback HTTP server serving a real PDF."""
from __future__ import annotations

import hashlib

import pytest

from loopback_http import Behaviour, LoopbackServer
from mmlbdata.sources.download import (
    ChecksumError, FileSpec, download_all, download_file, hub_spec, verify_file,
)

NO_SLEEP = {"sleep": lambda s: None}


@pytest.fixture(scope="module")
def pdf_bytes(real_data) -> bytes:
    return (real_data / "mmlongbench_doc" / "documents" / "2312.09390v1.pdf").read_bytes()


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_plain_download_verifies_and_renames(tmp_path, pdf_bytes):
    with LoopbackServer({"/a.pdf": pdf_bytes}) as srv:
        spec = FileSpec(srv.url("/a.pdf"), tmp_path / "out" / "a.pdf", sha256=_sha(pdf_bytes),
                        md5=hashlib.md5(pdf_bytes).hexdigest(), size=len(pdf_bytes))
        result = download_file(spec, **NO_SLEEP)
    assert result.ok and result.attempts == 1 and not result.cached
    assert spec.dest.read_bytes() == pdf_bytes
    assert not (tmp_path / "out" / "a.pdf.part").exists()


def test_server_failing_twice_then_succeeding(tmp_path, pdf_bytes):
    waits = []
    with LoopbackServer({"/f.pdf": pdf_bytes}, {"/f.pdf": Behaviour(fail_first=2)}) as srv:
        spec = FileSpec(srv.url("/f.pdf"), tmp_path / "f.pdf", sha256=_sha(pdf_bytes))
        result = download_file(spec, retries=3, sleep=waits.append)
        assert srv.count("/f.pdf") == 3
    assert result.ok and result.attempts == 3
    assert waits == [0.0, 0.0]  # Retry-After: 0 from the server wins over the backoff
    assert spec.dest.read_bytes() == pdf_bytes


def test_persistent_503_gives_up(tmp_path, pdf_bytes):
    waits = []
    with LoopbackServer({"/x": pdf_bytes}, {"/x": Behaviour(fail_first=10)}) as srv:
        spec = FileSpec(srv.url("/x"), tmp_path / "x")
        result = download_file(spec, retries=2, sleep=waits.append)
    assert not result.ok and result.attempts == 3 and "503" in result.error
    assert not spec.dest.exists()


def test_exponential_backoff_without_retry_after(tmp_path, monkeypatch):
    import mmlbdata.sources.download as dl

    waits, calls = [], []

    def flaky(spec, timeout, on_bytes):
        calls.append(1)
        raise dl.DownloadError("connection failed: reset")

    monkeypatch.setattr(dl, "_transfer", flaky)
    result = dl.download_file(FileSpec("http://127.0.0.1:9/x", tmp_path / "x"), retries=4,
                              backoff=0.5, max_backoff=3.0, sleep=waits.append)
    assert not result.ok and len(calls) == 5
    assert waits == [0.5, 1.0, 2.0, 3.0]


def test_truncated_transfer_is_resumed_with_range(tmp_path, pdf_bytes):
    cut = len(pdf_bytes) // 3
    with LoopbackServer({"/t.pdf": pdf_bytes}, {"/t.pdf": Behaviour(truncate_first=cut)}) as srv:
        spec = FileSpec(srv.url("/t.pdf"), tmp_path / "t.pdf", sha256=_sha(pdf_bytes))
        result = download_file(spec, **NO_SLEEP)
        ranges = srv.ranges("/t.pdf")
    assert result.ok and result.attempts == 2
    assert ranges == [None, f"bytes={cut}-"]
    assert result.bytes_received == len(pdf_bytes)  # nothing fetched twice
    assert spec.dest.read_bytes() == pdf_bytes


def test_resume_from_existing_part_file(tmp_path, pdf_bytes):
    dest = tmp_path / "r.pdf"
    (tmp_path / "r.pdf.part").write_bytes(pdf_bytes[:1000])
    with LoopbackServer({"/r.pdf": pdf_bytes}) as srv:
        result = download_file(FileSpec(srv.url("/r.pdf"), dest, sha256=_sha(pdf_bytes)), **NO_SLEEP)
        assert srv.ranges("/r.pdf") == ["bytes=1000-"]
    assert result.ok and result.bytes_received == len(pdf_bytes) - 1000
    assert dest.read_bytes() == pdf_bytes


def test_server_ignoring_range_restarts_cleanly(tmp_path, pdf_bytes):
    dest = tmp_path / "n.pdf"
    (tmp_path / "n.pdf.part").write_bytes(b"garbage that must not stay in front")
    with LoopbackServer({"/n.pdf": pdf_bytes}, {"/n.pdf": Behaviour(ignore_range=True)}) as srv:
        result = download_file(FileSpec(srv.url("/n.pdf"), dest, sha256=_sha(pdf_bytes)), **NO_SLEEP)
    assert result.ok and dest.read_bytes() == pdf_bytes


def test_checksum_mismatch_fails_and_leaves_nothing(tmp_path, pdf_bytes):
    with LoopbackServer({"/c.pdf": pdf_bytes}) as srv:
        spec = FileSpec(srv.url("/c.pdf"), tmp_path / "c.pdf", sha256="0" * 64)
        result = download_file(spec, retries=1, **NO_SLEEP)
        assert srv.count("/c.pdf") == 2  # retried from scratch, not resumed
    assert not result.ok and "sha256 mismatch" in result.error
    assert not spec.dest.exists() and not (tmp_path / "c.pdf.part").exists()


def test_md5_mismatch_detected(tmp_path, pdf_bytes):
    with LoopbackServer({"/m.pdf": pdf_bytes}) as srv:
        spec = FileSpec(srv.url("/m.pdf"), tmp_path / "m.pdf", md5="f" * 32)
        result = download_file(spec, retries=0, **NO_SLEEP)
    assert not result.ok and "md5 mismatch" in result.error


def test_404_is_not_retried(tmp_path):
    with LoopbackServer({}) as srv:
        result = download_file(FileSpec(srv.url("/missing.pdf"), tmp_path / "m.pdf"), retries=5, **NO_SLEEP)
        assert srv.count("/missing.pdf") == 1
    assert not result.ok and "404" in result.error


def test_existing_good_file_is_not_fetched_bad_one_is_replaced(tmp_path, pdf_bytes):
    good = tmp_path / "g.pdf"
    good.write_bytes(pdf_bytes)
    bad = tmp_path / "b.pdf"
    bad.write_bytes(b"not the pdf")
    with LoopbackServer({"/g.pdf": pdf_bytes, "/b.pdf": pdf_bytes}) as srv:
        r1 = download_file(FileSpec(srv.url("/g.pdf"), good, sha256=_sha(pdf_bytes)), **NO_SLEEP)
        r2 = download_file(FileSpec(srv.url("/b.pdf"), bad, sha256=_sha(pdf_bytes)), **NO_SLEEP)
        assert srv.count("/g.pdf") == 0 and srv.count("/b.pdf") == 1
    assert r1.ok and r1.cached
    assert r2.ok and not r2.cached and bad.read_bytes() == pdf_bytes


def test_redirect_keeps_range_but_drops_auth(tmp_path, pdf_bytes):
    dest = tmp_path / "h.pdf"
    (tmp_path / "h.pdf.part").write_bytes(pdf_bytes[:500])
    with LoopbackServer({"/cdn/h.pdf": pdf_bytes}, {"/h.pdf": Behaviour(redirect_to="/cdn/h.pdf")}) as srv:
        spec = FileSpec(srv.url("/h.pdf"), dest, sha256=_sha(pdf_bytes),
                        auth_headers={"Authorization": "Bearer secret"})
        result = download_file(spec, **NO_SLEEP)
        (_, r1, h1), (_, r2, h2) = srv.requests
    assert result.ok and dest.read_bytes() == pdf_bytes
    assert h1.get("Authorization") == "Bearer secret" and "Authorization" not in h2
    assert r1 == r2 == "bytes=500-"


def test_download_all_reports_failures_in_order(tmp_path, pdf_bytes):
    small = b"%PDF-1.4 tiny"
    with LoopbackServer({"/1.pdf": pdf_bytes, "/2.pdf": small},
                        {"/2.pdf": Behaviour(fail_first=1)}) as srv:
        specs = [FileSpec(srv.url("/1.pdf"), tmp_path / "1.pdf", sha256=_sha(pdf_bytes)),
                 FileSpec(srv.url("/404.pdf"), tmp_path / "404.pdf"),
                 FileSpec(srv.url("/2.pdf"), tmp_path / "2.pdf", sha256="1" * 64)]
        report = download_all(specs, num_workers=3, progress=False, retries=1, sleep=lambda s: None)
    assert [r.ok for r in report.results] == [True, False, False]
    assert [r.spec.dest.name for r in report.failures] == ["404.pdf", "2.pdf"]
    assert "2 failed" in report.summary() and "sha256 mismatch" in report.summary()
    with pytest.raises(Exception, match="404"):
        report.raise_for_failures()


def test_download_all_rejects_duplicate_destinations(tmp_path):
    spec = FileSpec("http://127.0.0.1:9/a", tmp_path / "a")
    with pytest.raises(ValueError):
        download_all([spec, spec], progress=False)


def test_hub_spec_builds_resolve_url_through_huggingface_hub(tmp_path, pdf_bytes):
    path = "/datasets/org/repo/resolve/abc123/docs/a.pdf"
    with LoopbackServer({path: pdf_bytes}) as srv:
        endpoint = srv.url("")
        spec = hub_spec("org/repo", "docs/a.pdf", tmp_path / "a.pdf", revision="abc123",
                        endpoint=endpoint, sha256=_sha(pdf_bytes), token="tok")
        assert spec.url == srv.url(path)
        result = download_file(spec, **NO_SLEEP)
        assert srv.requests[0][2].get("Authorization") == "Bearer tok"
    assert result.ok and (tmp_path / "a.pdf").read_bytes() == pdf_bytes


def test_verify_file_checks_size(tmp_path):
    p = tmp_path / "s"
    p.write_bytes(b"abc")
    verify_file(p, FileSpec("http://x/", p, size=3, sha256=_sha(b"abc")))
    with pytest.raises(ChecksumError, match="size mismatch"):
        verify_file(p, FileSpec("http://x/", p, size=4))
