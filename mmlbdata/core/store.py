"""The content-addressed image store.

Examples refer to images by :class:`ImageRef` (a file on disk plus its pixel size) while they are
built; bytes are read only when the writer embeds them. Two kinds of images meet here:

* **source images** (COCO photos, dataset pages) are referenced where they lie, after a cheap
  check (header size, end-of-image marker); nothing is copied;
* **generated images** (rendered PDF pages, text pages, stitched grids, video frames) are written
  once under ``objects/<sha256>.<ext>``; :meth:`ImageStore.cached` remembers which recipe
  (e.g. ``pdf:<sha>:p3:144dpi``) produced which object, so work is never done twice, across
  processes and across builds.

Writes are atomic (temp file + rename), so concurrent workers and killed builds never leave a
half-written object behind.

Every image enters a build here, so this is where hostile images are refused (a
:class:`BadImageError` the reader reports and skips), from the header alone, before any pixel is
decoded:

* **decompression bombs**: more than :data:`MAX_IMAGE_PIXELS` pixels (Pillow's own warning
  threshold, 89,478,485: above twice that, ``datasets`` cannot decode the built row at all);
* **extreme aspect ratios**: a long side more than :data:`MAX_ASPECT_RATIO` (200) times the short
  one, which Qwen2.5-VL's processor refuses;
* **paths from data that leave their source root** (:meth:`ImageStore.ref_inside`).

Both limits can be changed per store (``ImageStore(limits=ImageLimits(...))``) or for a whole run
with ``MMLB_MAX_IMAGE_PIXELS`` / ``MMLB_MAX_ASPECT_RATIO``.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Callable, Optional, Union

from mmlbdata.core.paths import UnsafePathError, resolve_inside
from mmlbdata.core.tokens import ImageHeaderError, image_size

PathLike = Union[str, os.PathLike]

MAX_IMAGE_PIXELS = 89_478_485  # PIL.Image.MAX_IMAGE_PIXELS: Pillow warns above it, refuses above 2x
MAX_ASPECT_RATIO = 200.0  # transformers' Qwen2-VL smart_resize raises above 200


class BadImageError(ValueError):
    """An image file that cannot be used; the message names the file and the problem."""

    def __init__(self, path: PathLike, reason: str):
        super().__init__(f"{path}: {reason}")
        self.path, self.reason = str(path), reason


@dataclass(frozen=True)
class ImageRef:
    """An encoded image on disk and its pixel size (read from the header)."""

    path: str
    width: int
    height: int
    #: the SHA-256 of the file's bytes when already known (a store object is named by it), so the
    #: writer need not read the file again to name its copy; None for a source image
    sha256: Optional[str] = field(default=None, compare=False)

    @property
    def name(self) -> str:
        return os.path.basename(self.path)

    def read_bytes(self) -> bytes:
        with open(self.path, "rb") as handle:
            return handle.read()


@dataclass(frozen=True)
class ImageLimits:
    """The largest image a build accepts (pixels, long side / short side)."""

    max_pixels: int = MAX_IMAGE_PIXELS
    max_aspect_ratio: float = MAX_ASPECT_RATIO

    @classmethod
    def from_env(cls) -> "ImageLimits":
        """Defaults, overridden by ``MMLB_MAX_IMAGE_PIXELS`` / ``MMLB_MAX_ASPECT_RATIO``."""
        return cls(int(_env_number("MMLB_MAX_IMAGE_PIXELS", MAX_IMAGE_PIXELS)),
                   float(_env_number("MMLB_MAX_ASPECT_RATIO", MAX_ASPECT_RATIO)))

    def check(self, path: PathLike, width: int, height: int) -> None:
        """Raise :class:`BadImageError` when a ``width`` x ``height`` image is over a limit."""
        if width * height > self.max_pixels:
            raise BadImageError(path, f"image declares {width}x{height} = {width * height:,} pixels, over the "
                                      f"{self.max_pixels:,} pixel limit (a decompression bomb?; "
                                      "raise MMLB_MAX_IMAGE_PIXELS to accept it)")
        ratio = max(width, height) / max(1, min(width, height))
        if ratio > self.max_aspect_ratio:
            raise BadImageError(path, f"image is {width}x{height}: aspect ratio {ratio:.0f} is over "
                                      f"{self.max_aspect_ratio:g}, which Qwen2.5-VL's processor refuses "
                                      "(MMLB_MAX_ASPECT_RATIO changes the limit)")


def _env_number(name: str, default: float) -> float:
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = float(text.replace("_", ""))
    except ValueError:
        raise ValueError(f"{name}={text!r} is not a number") from None
    if value <= 0:
        raise ValueError(f"{name}={text!r} must be positive")
    return value


def _check_complete(path: PathLike, head: bytes, tail: bytes) -> None:
    """Cheap truncation check without decoding: JPEG must end with EOI, PNG with IEND."""
    if head.startswith(b"\xff\xd8") and b"\xff\xd9" not in tail:
        raise BadImageError(path, "JPEG is truncated or corrupt (no end-of-image marker)")
    if head.startswith(b"\x89PNG") and b"IEND" not in tail:
        raise BadImageError(path, "PNG is truncated or corrupt (no IEND chunk)")


def image_extension(data: bytes, name: str = "") -> str:
    """File extension from the image's magic bytes (the stored name may lack one)."""
    if data[:3] == b"\xff\xd8\xff":
        return "jpg"
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        return "png"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "webp"
    if data[:4] in (b"GIF8",):
        return "gif"
    suffix = Path(name).suffix.lstrip(".").lower()
    return suffix or "bin"


def inspect_image(path: PathLike, limits: Optional[ImageLimits] = None) -> ImageRef:
    """Validate a source image cheaply and read its size from the header (no pixel decoded);
    images over ``limits`` (default: :meth:`ImageLimits.from_env`) are refused."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(16)
            size = os.fstat(handle.fileno()).st_size
            if size < 16:
                raise BadImageError(path, f"file too small to be an image ({size} bytes)")
            handle.seek(max(0, size - 4096))
            tail = handle.read()
    except FileNotFoundError:
        raise BadImageError(path, "image file is missing") from None
    except OSError as err:
        raise BadImageError(path, f"cannot read image file ({err.strerror})") from None
    _check_complete(path, head, tail)
    try:
        width, height = image_size(path)
    except ImageHeaderError as err:
        raise BadImageError(path, f"unreadable image header ({err.args[0].split(': ', 1)[-1]})") from None
    (limits or ImageLimits.from_env()).check(path, width, height)
    return ImageRef(str(path), width, height)


def checked_source_path(root: PathLike, name: PathLike, *, what: str = "image path") -> Path:
    """``root / name`` when ``name`` (taken from data) stays inside ``root``, else a
    :class:`BadImageError` naming it; the lexical path is returned so names stay as released."""
    try:
        resolve_inside(root, name, what=what)
    except UnsafePathError as err:
        raise BadImageError(name, f"refused: {err}") from None
    return Path(root) / name


def _atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def file_sha256(path: PathLike) -> str:
    """SHA-256 of a file's bytes (keys recipes on source content: a PDF, a video, a photo).

    Memoised per (path, size, mtime) within the process, since builders ask for the same
    source many times (every page of a PDF, every row reusing an image).
    """
    stat = os.stat(path)
    return _file_sha256(os.fspath(path), (stat.st_size, stat.st_mtime_ns))


@lru_cache(maxsize=4096)
def _file_sha256(path: str, version: tuple[int, int], chunk: int = 1 << 20) -> str:
    """``version`` (size, mtime) is only part of the memo's key: a changed file is hashed again."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


_DIGEST_NAME = re.compile(r"[0-9a-f]{64}")


def object_digest(path: PathLike) -> Optional[str]:
    """The SHA-256 a store object's name states (``objects/ab/<sha256>.<ext>``), else None."""
    stem = Path(path).name.split(".", 1)[0]
    return stem if _DIGEST_NAME.fullmatch(stem) and Path(path).parent.name == stem[:2] else None


def default_store_root() -> Path:
    """``$MMLB_CACHE/store``, else ``~/.cache/mmlbdata/store``."""
    base = os.environ.get("MMLB_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "mmlbdata")
    return Path(base) / "store"


class ImageStore:
    """One copy per distinct image; recipes remember how generated images were made."""

    def __init__(self, root: Optional[PathLike] = None, limits: Optional[ImageLimits] = None):
        self.root = Path(root) if root is not None else default_store_root()
        self.limits = limits or ImageLimits.from_env()
        self.objects = self.root / "objects"
        self.recipes = self.root / "recipes"
        self._refs: dict[str, ImageRef] = {}

    # -- source images -----------------------------------------------------------------------
    def ref(self, path: PathLike) -> ImageRef:
        """A validated reference to a source image (memoised per path; nothing is copied)."""
        key = os.fspath(path)
        ref = self._refs.get(key)
        if ref is None:
            ref = self._refs[key] = inspect_image(key, self.limits)
        return ref

    def ref_inside(self, root: PathLike, name: PathLike, *, what: str = "image path") -> ImageRef:
        """:meth:`ref` of ``root / name`` where ``name`` comes from data (an annotation's
        ``file_name``, an image list): refused unless it stays inside ``root`` (no ``..`` out, no
        absolute path, no symlink leading out); a refusal is a :class:`BadImageError`."""
        return self.ref(checked_source_path(root, name, what=what))

    # -- generated images --------------------------------------------------------------------
    def put_bytes(self, data: bytes, ext: str) -> ImageRef:
        """Store encoded image bytes under their SHA-256 (idempotent)."""
        ext = ext.lower().lstrip(".")
        digest = hashlib.sha256(data).hexdigest()
        path = self.objects / digest[:2] / f"{digest}.{ext}"
        width, height = image_size(data)
        self.limits.check(f"<{ext} image bytes {digest[:12]}>", width, height)
        if not path.exists():
            _atomic_write(path, data)
        return ImageRef(str(path), width, height, digest)

    def _recipe_entry(self, recipe_key: str) -> Path:
        digest = hashlib.sha256(recipe_key.encode("utf-8")).hexdigest()
        return self.recipes / digest[:2] / f"{digest}.json"

    def lookup(self, recipe_key: str) -> Optional[ImageRef]:
        """The image ``recipe_key`` made earlier, or None (lets callers batch what is missing)."""
        entry = self._recipe_entry(recipe_key)
        if not entry.exists():
            return None
        try:
            record = json.loads(entry.read_text())
            path = self.root / record["object"]
        except (ValueError, KeyError):
            return None  # a damaged entry is simply rebuilt
        # a store object's name is its content's SHA-256 (put_bytes)
        return ImageRef(str(path), record["width"], record["height"], object_digest(path)) if path.exists() else None

    def cached(self, recipe_key: str, produce: Callable[[], tuple[bytes, str]]) -> ImageRef:
        """The image made by ``recipe_key``, produced (``-> (bytes, ext)``) only the first time."""
        found = self.lookup(recipe_key)
        if found is not None:
            return found
        entry = self._recipe_entry(recipe_key)
        data, ext = produce()
        ref = self.put_bytes(data, ext)
        record = {"recipe": recipe_key, "object": os.path.relpath(ref.path, self.root),
                  "width": ref.width, "height": ref.height}
        _atomic_write(entry, json.dumps(record, sort_keys=True).encode())
        return ref
