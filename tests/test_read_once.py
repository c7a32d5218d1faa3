"""Work done once (issue 35): a release file drawn by the paper's subset is read in one pass plus
the drawn lines, not twice; JSON-lines records keep text mode's line numbers."""
from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path

from mmlbdata.core.report import BuildReport
from mmlbdata.sources import mmlb_release as release
from mmlbdata.sources import records


def _text_mode(path: Path) -> list[tuple[int, str]]:
    """What a text-mode reader numbers: (line number, stripped line) of each non-blank line."""
    with open(path, encoding="utf-8", errors="surrogateescape") as handle:
        return [(n, line.strip()) for n, line in enumerate(handle, 1) if line.strip()]


def test_lines_and_numbers_are_text_modes(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_bytes(b'{"a": 1}\r\n{"a": 2}\r{"a": 3}\n\n{"a": "\xff"}\n{"a": 5}')
    read = list(records.read_jsonl_spans(path))
    assert [n for n, _, _ in read] == [n for n, _ in _text_mode(path)] == [1, 2, 3, 5, 6]
    assert [r["a"] for _, r, _ in read if isinstance(r, dict)] == [1, 2, 3, 5]
    assert isinstance(read[3][1], records.BadRecord) and "byte 0xff" in read[3][1].reason
    spans = [(n, span) for n, r, span in read if isinstance(r, dict)]
    assert [r for _, r in records.read_spans(path, spans)] == [{"a": 1}, {"a": 2}, {"a": 3}, {"a": 5}]


class _Counting(io.BufferedReader):
    """A binary file that counts the bytes handed out (iteration goes through ``readline``)."""

    read_total = 0

    def read(self, *args):
        data = super().read(*args)
        _Counting.read_total += len(data)
        return data

    def readline(self, *args):
        data = super().readline(*args)
        _Counting.read_total += len(data)
        return data


def test_a_paper_draw_reads_the_file_once_then_the_drawn_lines(tmp_path, monkeypatch):
    """1,000 VH records, paper draw of 100 (data.py @22b9f27 load_visual_haystack: ``random.sample``
    of the sorted ids): the bytes read are the file once plus the 100 drawn lines (was the file twice)."""
    path = tmp_path / "vh.jsonl"
    lines = [json.dumps({"id": i, "question": "q?", "answer": "Yes", "ctxs": [f"coco/{i}_{k}.jpg" for k in range(20)]})
             for i in range(1000)]
    path.write_text("\n".join(lines) + "\n")

    def counting_open(file, mode="r", *args, **kwargs):
        assert mode == "rb"
        return _Counting(io.FileIO(file, "rb"))

    monkeypatch.setattr(records, "open", counting_open, raising=False)
    rows = list(release.read_release_file(path, "vh", BuildReport(), paper=100))
    drawn = release.paper_ids(list(range(1000)), 100)
    assert sorted(row.official_id for _, row in rows) == sorted(drawn)
    size = path.stat().st_size
    drawn_bytes = sum(len(lines[i]) + 1 for i in drawn)
    assert _Counting.read_total == size + drawn_bytes < 1.2 * size


# -- the writer and the README: what the build already knows is not read back ---------------------
def _store_rows(tmp_path):
    from test_layout import A, _images, _rows

    from mmlbdata.core.store import ImageStore

    return _rows(_images(ImageStore(tmp_path / "store"), 4), A)


def _digests(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and not p.name.startswith(".")}


def test_store_images_are_not_hashed_again_by_the_writer(tmp_path, monkeypatch):
    """A store object is named by its SHA-256 (ImageStore.put_bytes): the writer names its copy
    from the reference, reading no image to hash it; the built folder is the same as when it did."""
    from mmlbdata.dataset import writer
    from mmlbdata.dataset.build import store_config

    store_config(tmp_path / "hashed", "toy_8k", _store_rows(tmp_path), manifest={"family": "toy"})
    hashed = []
    monkeypatch.setattr(writer, "file_sha256", lambda path: hashed.append(path) or "0" * 64)
    store_config(tmp_path / "named", "toy_8k", _store_rows(tmp_path), manifest={"family": "toy"})
    assert hashed == []
    assert _digests(tmp_path / "named") == _digests(tmp_path / "hashed")


def test_the_readme_entry_is_not_read_back_from_the_metadata_just_written(tmp_path, monkeypatch):
    """store_config passes the writer's image folder to update_readme; the README is the one the
    metadata file gives (``sync_readme`` reads it, as ``update_readme`` did)."""
    from mmlbdata.dataset import card
    from mmlbdata.dataset.build import store_config

    def no_read(*_args):
        raise AssertionError("the metadata was read back")

    with monkeypatch.context() as patched:
        patched.setattr(card, "config_image_dirs", no_read)
        store_config(tmp_path / "out", "toy_8k", _store_rows(tmp_path), manifest={"family": "toy"})
        store_config(tmp_path / "out", "toy_text", iter([]), manifest={"family": "toy"})
    written = (tmp_path / "out" / "README.md").read_text()
    card.sync_readme(tmp_path / "out")
    assert (tmp_path / "out" / "README.md").read_text() == written
    assert "images/toy/toy_8k-" in written  # its partition (named after its first user)
