"""Image store: cheap validation of source images, content addressing, recipe cache."""
from __future__ import annotations

import io
import shutil

import pytest
from PIL import Image

from mmlbdata.core.store import BadImageError, ImageStore, inspect_image


def _jpeg_bytes(size=(64, 48), color="blue") -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, color).save(buffer, format="JPEG")
    return buffer.getvalue()


def test_real_source_image_is_referenced_in_place(coco_mini, tmp_path):
    path = sorted((coco_mini / "val2017").glob("*.jpg"))[0]
    ref = ImageStore(tmp_path).ref(path)
    assert ref.path == str(path) and (ref.width, ref.height) == Image.open(path).size
    assert not (tmp_path / "objects").exists()  # nothing copied


@pytest.mark.parametrize("damage,reason", [
    (lambda b: b[: len(b) // 2], "truncated"),
    (lambda b: b"GARBAGE" * 10, "unreadable image header"),
    (lambda b: b"\xff\xd8\xff" + b"\x00" * 40 + b"\xff\xd9", "unreadable image header"),
    (lambda b: b[:8], "too small"),
])
def test_corrupt_images_are_named(tmp_path, coco_mini, damage, reason):
    real = sorted((coco_mini / "val2017").glob("*.jpg"))[0].read_bytes()
    bad = tmp_path / "bad.jpg"
    bad.write_bytes(damage(real))
    with pytest.raises(BadImageError, match=reason) as info:
        inspect_image(bad)
    assert str(bad) in str(info.value)


def test_missing_image(tmp_path):
    with pytest.raises(BadImageError, match="missing"):
        ImageStore(tmp_path).ref(tmp_path / "nope.jpg")


def test_put_bytes_is_content_addressed(tmp_path):
    store = ImageStore(tmp_path)
    a = store.put_bytes(_jpeg_bytes(), "jpg")
    b = store.put_bytes(_jpeg_bytes(), ".JPG")
    c = store.put_bytes(_jpeg_bytes(color="red"), "jpg")
    assert a == b and a.path != c.path
    assert (a.width, a.height) == (64, 48)
    assert len(list((tmp_path / "objects").rglob("*.jpg"))) == 2


def test_cached_produces_once_and_survives_a_new_store(tmp_path):
    calls = []

    def produce():
        calls.append(1)
        return _jpeg_bytes((30, 20)), "jpg"

    assert ImageStore(tmp_path).lookup("page:abc:p3:144dpi") is None
    first = ImageStore(tmp_path).cached("page:abc:p3:144dpi", produce)
    assert ImageStore(tmp_path).lookup("page:abc:p3:144dpi") == first
    second = ImageStore(tmp_path).cached("page:abc:p3:144dpi", produce)
    assert first == second and len(calls) == 1 and (first.width, first.height) == (30, 20)
    shutil.rmtree(tmp_path / "objects")  # a lost object is rebuilt, not returned dangling
    third = ImageStore(tmp_path).cached("page:abc:p3:144dpi", produce)
    assert len(calls) == 2 and third.read_bytes() == _jpeg_bytes((30, 20))
