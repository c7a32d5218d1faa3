"""The unified token counter: Llama-2 text tokens plus image tokens.

Every length in mmlbdata (8K ... 128K, K = 1024) is measured by this one counter, so numbers are
comparable across benchmark families:

* **Image tokens** follow Qwen2.5-VL: 14x14 patches merged 2x2, i.e. one token per 28x28 pixels,
  after ``smart_resize`` rounds the image to multiples of 28 within pixel bounds.
  Sizes come from the file header; pixels are never decoded to count.
* **Text tokens** are the exact ids of the Llama-2 SentencePiece model (through ``sentencepiece``,
  not transformers, whose 5.x Llama tokenizers build wrong vocabularies silently), plus one BOS per
  prompt as HELMET counts it, no EOS. ``<image>`` placeholders are removed before counting.
"""
from __future__ import annotations

import io
import math
import os
import re
import struct
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Sequence, Union

IMAGE_PLACEHOLDER = "<image>"

PATCH_SIZE = 14
MERGE_SIZE = 2
MIN_PIXELS = 4 * 28 * 28
MAX_PIXELS = 16384 * 28 * 28

TOKENIZER_REPO = "hf-internal-testing/llama-tokenizer"
TOKENIZER_FILE = "tokenizer.model"
TOKENIZER_ENV = "MMLB_TOKENIZER"


# --------------------------------------------------------------------------------------------
# Image tokens
# --------------------------------------------------------------------------------------------

def smart_resize(
    height: int,
    width: int,
    *,
    factor: int = PATCH_SIZE * MERGE_SIZE,
    min_pixels: int = MIN_PIXELS,
    max_pixels: int = MAX_PIXELS,
) -> tuple[int, int]:
    """Qwen2.5-VL's resize rule: sides rounded to multiples of ``factor`` within pixel bounds."""
    if height <= 0 or width <= 0:
        raise ValueError(f"image size must be positive, got {width}x{height}")
    h_bar = max(factor, round(height / factor) * factor)
    w_bar = max(factor, round(width / factor) * factor)
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


@dataclass(frozen=True)
class ImageTokenRule:
    """Parameters of the image token rule (defaults: Qwen2.5-VL)."""

    patch_size: int = PATCH_SIZE
    merge_size: int = MERGE_SIZE
    min_pixels: int = MIN_PIXELS
    max_pixels: int = MAX_PIXELS

    @property
    def factor(self) -> int:
        return self.patch_size * self.merge_size

    def tokens(self, width: int, height: int) -> int:
        h, w = smart_resize(height, width, factor=self.factor,
                            min_pixels=self.min_pixels, max_pixels=self.max_pixels)
        return (h // self.factor) * (w // self.factor)


DEFAULT_IMAGE_RULE = ImageTokenRule()


@lru_cache(maxsize=65536)
def image_tokens(width: int, height: int, rule: ImageTokenRule = DEFAULT_IMAGE_RULE) -> int:
    """Tokens of one ``width`` x ``height`` image: 640x480 -> 391, 1224x1584 -> 2508."""
    return rule.tokens(width, height)


# --------------------------------------------------------------------------------------------
# Header-only image sizes
# --------------------------------------------------------------------------------------------

class ImageHeaderError(ValueError):
    """The bytes do not start like an image whose size we can read."""


_JPEG_SOF = {0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF}


def _jpeg_size(stream: io.BufferedIOBase) -> tuple[int, int]:
    """Walk JPEG markers up to the first SOFn segment; never touches entropy-coded data."""
    stream.seek(2)
    while True:
        byte = stream.read(1)
        while byte and byte != b"\xff":
            byte = stream.read(1)
        while byte == b"\xff":
            byte = stream.read(1)
        if not byte:
            raise ImageHeaderError("JPEG ends before its frame header")
        marker = byte[0]
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
            continue
        raw = stream.read(2)
        if len(raw) != 2:
            raise ImageHeaderError("JPEG segment header truncated")
        (seg_len,) = struct.unpack(">H", raw)
        if marker in _JPEG_SOF:
            data = stream.read(5)
            if len(data) != 5:
                raise ImageHeaderError("JPEG frame header truncated")
            height, width = struct.unpack(">HH", data[1:5])
            if width == 0 or height == 0:
                raise ImageHeaderError("JPEG frame header has a zero size")
            return width, height
        stream.seek(seg_len - 2, io.SEEK_CUR)


def _read_size(stream: io.BufferedIOBase) -> tuple[int, int]:
    head = stream.read(32)
    if head[:3] == b"\xff\xd8\xff":
        return _jpeg_size(stream)
    if head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR":
        return struct.unpack(">II", head[16:24])
    # Other formats (GIF, WebP, BMP, TIFF ...): PIL parses only the header on open.
    from PIL import Image, UnidentifiedImageError

    stream.seek(0)
    try:
        with Image.open(stream) as img:
            return img.size
    except (UnidentifiedImageError, OSError, SyntaxError) as err:
        raise ImageHeaderError(f"not a readable image ({err})") from err


def image_size(source: Union[str, os.PathLike, bytes]) -> tuple[int, int]:
    """``(width, height)`` read from the file header, without decoding pixels."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return _read_size(io.BytesIO(bytes(source)))
    with open(source, "rb") as stream:
        try:
            return _read_size(stream)
        except ImageHeaderError as err:
            raise ImageHeaderError(f"{source}: {err}") from err


# --------------------------------------------------------------------------------------------
# Text tokens
# --------------------------------------------------------------------------------------------

#: the command ``tokenizer_help`` shows when the caller names none
EXAMPLE_COMMAND = "mmlb demo --out demo_mmlb"


class TokenizerNotFoundError(RuntimeError):
    """No usable Llama-2 ``tokenizer.model`` could be located. ``reason`` says why; the message
    adds the ways to provide one (:func:`tokenizer_help`), with the command the user ran when the
    CLI passes it to :meth:`explain`."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason

    def explain(self, command: Union[str, None] = None) -> str:
        return f"{self.reason}\n{tokenizer_help(command)}"

    def __str__(self) -> str:
        return self.explain()


def find_tokenizer_model(path: Union[str, os.PathLike, None] = None) -> Path:
    """Locate the Llama-2 SentencePiece model.

    Order: explicit ``path`` (a file, or a folder holding ``tokenizer.model``); the
    ``MMLB_TOKENIZER`` environment variable; the Hugging Face cache; one download of
    ``hf-internal-testing/llama-tokenizer/tokenizer.model``. A given file that SentencePiece cannot
    load is refused at once, saying what it is. The download is tried only when the Hub answers a
    quick connection probe, and its outcome is remembered for the process: an offline first run
    fails within seconds with one message, not once per config after minutes of retries.
    """
    for candidate, origin in ((path, "--tokenizer"), (os.environ.get(TOKENIZER_ENV), f"${TOKENIZER_ENV}")):
        if candidate:
            return _given_tokenizer(Path(candidate).expanduser().absolute(), origin)
    return _cached_or_downloaded_tokenizer()


def _given_tokenizer(candidate: Path, origin: str) -> Path:
    """``candidate`` (or ``candidate/tokenizer.model``) once SentencePiece loads it."""
    if candidate.is_dir():
        inner = candidate / TOKENIZER_FILE
        if not inner.is_file():
            raise TokenizerNotFoundError(f"the folder given by {origin} has no {TOKENIZER_FILE}: {candidate}")
        candidate = inner
    if not candidate.is_file():
        raise TokenizerNotFoundError(f"the tokenizer model given by {origin} does not exist: {candidate}")
    import sentencepiece as spm

    try:
        spm.SentencePieceProcessor(model_file=str(candidate))
    except (RuntimeError, OSError) as err:
        raise TokenizerNotFoundError(f"the file given by {origin} is not a SentencePiece tokenizer model: "
                                     f"{candidate} is {describe_file(candidate)}") from err
    return candidate


def describe_file(path: Path) -> str:
    """What a file that should have been a tokenizer model holds, in a few words."""
    size = path.stat().st_size
    with open(path, "rb") as f:
        head = f.read(200)
    kinds = ((b"version https://git-lfs", "a Git LFS pointer, not the file (run `git lfs pull` where it came from)"),
             (b"{", "a JSON file (tokenizer.json or a config? mmlb needs the SentencePiece tokenizer.model)"),
             (b"<", "an HTML/XML page (a download that returned a web page?)"),
             (b"PK\x03\x04", "a zip archive"), (b"\x1f\x8b", "a gzip archive"))
    if size == 0:
        return "an empty file"
    for magic, what in kinds:
        if head.lstrip().startswith(magic):
            return f"{what}, {size} bytes"
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        return f"a {size}-byte binary file that SentencePiece cannot parse"
    return f"a {size}-byte text file starting {text.splitlines()[0][:60]!r}"


def tokenizer_help(command: Union[str, None] = None) -> str:
    """Working commands that provide the tokenizer (shown whenever it cannot be found); ``command``:
    the one the user ran, shown with the --tokenizer to add."""
    return (
        "Provide Meta's Llama-2 tokenizer.model (500 kB) in one of these ways:\n"
        f"  * download it once on any online machine:  hf download {TOKENIZER_REPO} {TOKENIZER_FILE} "
        "--local-dir ./llama2\n"
        "    (or take tokenizer.model from Meta's Llama-2 release), copy it here, then\n"
        f"  * export {TOKENIZER_ENV}=/abs/path/to/llama2/tokenizer.model\n"
        f"  * or give it to the command:  {command or EXAMPLE_COMMAND} --tokenizer ./llama2/tokenizer.model\n"
        "    (--tokenizer goes after the subcommand; `mmlb --tokenizer PATH demo ...` works too)"
    )


_DEFAULT_LOOKUP: dict = {}  # the outcome of the default lookup (a Path or the error), once per process


def _cached_or_downloaded_tokenizer() -> Path:
    if "outcome" not in _DEFAULT_LOOKUP:
        try:
            _DEFAULT_LOOKUP["outcome"] = _look_up_default_tokenizer()
        except TokenizerNotFoundError as err:
            _DEFAULT_LOOKUP["outcome"] = err
    outcome = _DEFAULT_LOOKUP["outcome"]
    if isinstance(outcome, Exception):
        raise outcome
    return outcome


def _look_up_default_tokenizer() -> Path:
    from huggingface_hub import constants, try_to_load_from_cache

    cached = try_to_load_from_cache(TOKENIZER_REPO, TOKENIZER_FILE)
    if isinstance(cached, str) and Path(cached).is_file():
        return Path(cached)
    if constants.HF_HUB_OFFLINE:
        why = "HF_HUB_OFFLINE is set"
    else:
        why = hub_unreachable(constants.ENDPOINT)
    if why is None:
        try:
            from huggingface_hub import hf_hub_download

            return Path(hf_hub_download(TOKENIZER_REPO, TOKENIZER_FILE))
        except Exception as err:  # hub error after a successful probe: still one message
            why = f"the download failed: {type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"
    raise TokenizerNotFoundError(
        "mmlb needs the Llama-2 tokenizer model to count text tokens, and found none: no --tokenizer, "
        f"no ${TOKENIZER_ENV}, not in the Hugging Face cache, and it cannot be downloaded ({why}).")


def hub_unreachable(endpoint: str, timeout: float = 3.0) -> Union[str, None]:
    """Why the Hub cannot be reached (DNS, refused, timeout), or None when a TCP connection opens.

    A probe of a few seconds, so that an offline machine does not sit through the Hub client's
    retries (about 20 s per attempt) before the real error shows.
    """
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(endpoint)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname or "", port), timeout=timeout):
            return None
    except OSError as err:
        return f"{parts.hostname}:{port} is unreachable: {err.strerror or err}"


# A split point where SentencePiece's word pieces cannot straddle: one space between two
# non-space characters (Llama-2 merges *runs* of spaces into single pieces, so never split those).
_SAFE_SPLIT = re.compile(r"(?<=\S) (?=\S)")
CHUNK_CHARS = 16384


def split_for_counting(text: str, size: int = CHUNK_CHARS) -> list[str]:
    """``text`` cut into pieces of about ``size`` characters at safe split points (see above)."""
    pieces, start = [], 0
    while len(text) - start > size:
        match = _SAFE_SPLIT.search(text, start + size)
        if match is None:
            break
        pieces.append(text[start:match.start()])
        start = match.start()
    pieces.append(text[start:])
    return pieces


class TextTokenizer:
    """Exact Llama-2 token ids through ``sentencepiece``.

    Long texts are counted in pieces, in parallel: SentencePiece (``split_by_whitespace``) never
    merges across a single space between words, so the count of the whole equals the count of
    the first piece plus the counts of the others encoded *without* the dummy prefix (each of
    them starts with its own space). This is exact, and several times faster than one call on a
    long prompt (BPE on one huge string is slow); ``tests/test_tokens.py`` checks the equality
    on real and adversarial text.
    """

    def __init__(self, model_path: Union[str, os.PathLike, None] = None, *, num_threads: int = 0):
        import sentencepiece as spm

        self.model_path = find_tokenizer_model(model_path)
        self._sp = spm.SentencePieceProcessor(model_file=str(self.model_path))
        self._sp_continuation = self._without_dummy_prefix(self.model_path)
        self.num_threads = num_threads or min(8, os.cpu_count() or 1)
        self.bos_id = self._sp.bos_id()

    @staticmethod
    def _without_dummy_prefix(model_path: Path):
        import sentencepiece as spm

        try:
            from sentencepiece import sentencepiece_model_pb2
        except ImportError:  # protobuf missing: exact single-call counting still works
            return None
        proto = sentencepiece_model_pb2.ModelProto()
        proto.ParseFromString(Path(model_path).read_bytes())
        if not (proto.trainer_spec.split_by_whitespace and proto.normalizer_spec.add_dummy_prefix):
            return None  # chunking is exact only under these two settings: count in one call
        proto.normalizer_spec.add_dummy_prefix = False
        return spm.SentencePieceProcessor(model_proto=proto.SerializeToString())

    def encode(self, text: str) -> list[int]:
        return self._sp.encode(text)

    def count(self, text: str) -> int:
        """Tokens of ``text`` alone (no BOS); long texts in parallel pieces, exactly."""
        if not text:
            return 0
        if len(text) <= 2 * CHUNK_CHARS or self._sp_continuation is None:
            return len(self._sp.encode(text))
        first, *rest = split_for_counting(text)
        tail = self._sp_continuation.encode(rest, num_threads=self.num_threads) if rest else []
        return len(self._sp.encode(first)) + sum(len(ids) for ids in tail)

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        """Counts of many texts in one call (sentencepiece encodes them on several threads)."""
        if not texts:
            return []
        return [len(ids) for ids in self._sp.encode(list(texts), num_threads=self.num_threads)]

    def __getstate__(self):  # picklable for worker processes: reload from the file
        return {"model_path": str(self.model_path), "num_threads": self.num_threads}

    def __setstate__(self, state):
        self.__init__(state["model_path"], num_threads=state["num_threads"])


# --------------------------------------------------------------------------------------------
# The unified counter
# --------------------------------------------------------------------------------------------

SizeLike = Union[tuple[int, int], "object"]


class TokenCounter:
    """Text tokens of the whole prompt (placeholders removed, plus BOS) + tokens of every image."""

    def __init__(
        self,
        tokenizer: Union[TextTokenizer, str, os.PathLike, None] = None,
        *,
        add_bos: bool = True,
        image_rule: ImageTokenRule = DEFAULT_IMAGE_RULE,
    ):
        self.tokenizer = tokenizer if isinstance(tokenizer, TextTokenizer) else TextTokenizer(tokenizer)
        self.add_bos = add_bos
        self.image_rule = image_rule

    def text(self, prompt: str) -> int:
        """Text tokens the model receives for ``prompt``: ``<image>`` removed, BOS included."""
        return self.tokenizer.count(prompt.replace(IMAGE_PLACEHOLDER, "")) + int(self.add_bos)

    def image(self, width: int, height: int) -> int:
        return image_tokens(width, height, self.image_rule)

    def images(self, images: Iterable[SizeLike]) -> int:
        total = 0
        for img in images:
            width, height = (img.width, img.height) if hasattr(img, "width") else img
            total += image_tokens(width, height, self.image_rule)
        return total

    def example(self, prompt: str, images: Iterable[SizeLike] = ()) -> int:
        """Tokens of a whole example: the prompt's text tokens plus its images' tokens."""
        return self.text(prompt) + self.images(images)


_DEFAULT_COUNTER: TokenCounter | None = None


def default_counter() -> TokenCounter:
    """A process-wide counter with the default tokenizer (found as ``find_tokenizer_model`` says)."""
    global _DEFAULT_COUNTER
    if _DEFAULT_COUNTER is None:
        _DEFAULT_COUNTER = TokenCounter()
    return _DEFAULT_COUNTER
