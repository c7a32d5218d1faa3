"""The embedded writer names a store object's bytes by the digest the store already gives it
(``ImageRef.sha256``), as the files writer does (#35): #31's content-keyed row-group dictionary
hashed every image again, row group after row group."""
from __future__ import annotations

import hashlib
import io

from PIL import Image

import mmlbdata.dataset.writer as writer
from mmlbdata.core.schema import make_example
from mmlbdata.core.store import ImageStore
from mmlbdata.dataset.build import store_config


class _CountingHashlib:
    """``hashlib`` as the writer sees it, counting the images hashed in one go (``sha256(blob)``)."""

    def __init__(self):
        self.blobs = 0

    def sha256(self, data=b""):
        self.blobs += bool(data)
        return hashlib.sha256(data)


def test_store_images_are_not_hashed_again(tmp_path, monkeypatch):
    store = ImageStore(tmp_path / "store")
    refs = []
    for colour in ((200, 0, 0), (0, 200, 0)):
        buffer = io.BytesIO()
        Image.new("RGB", (32, 32), colour).save(buffer, format="PNG")
        refs.append(store.put_bytes(buffer.getvalue(), "png"))
    assert all(ref.sha256 for ref in refs)
    rows = [make_example(id=f"r{i}", dataset="toy", length=8192, num_tokens=10, prompt="<image> <image>",
                         images=refs, question="q?", answers=["a"], metric="binary_acc", meta={}) for i in range(3)]
    counting = _CountingHashlib()
    monkeypatch.setattr(writer, "hashlib", counting)
    stats = store_config(tmp_path / "mmlb", "toy_8k", rows, manifest={"family": "toy"}, layout="embedded")
    assert counting.blobs == 0
    assert (stats.num_unique_images, stats.num_images) == (2, 6)
