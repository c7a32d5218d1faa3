"""API model profiles: the request MMLongBench's API wrappers build (``vlm_model/openai_model.py``,
``gemini.py``, ``vllm_models.py`` @22b9f27), built from a row of a built config.

Picked from the model name as ``vlm_model/__init__.py``'s ``load_LLM`` picks a wrapper, and first,
as it tests them first: "gpt" or "claude" anywhere in the model path (as written, case kept) ->
``openai_model.py`` (Claude through Anthropic's OpenAI-compatible endpoint, the one wrapper with
another ``base_url``); then "gemini" -> ``gemini.py`` (google-genai); then ``--use_vllm`` ->
``vllm_models.py`` (a vLLM OpenAI server); only then the model families of runner/profiles.py.

What each profile sends (the wrapper lines in docs/runner.md):

- ``openai`` / ``claude``: one user message; the prompt split by ``re.split('(<image>)')``, every
  piece kept (empty ones too); each image opened, converted to RGB, scaled by ``image_resize``
  and re-encoded as PNG (``data:image/png;base64``), or its URL in URL mode, always with
  ``detail``; ``max_tokens``, ``temperature`` (0.0 unless ``do_sample``) and ``top_p``; nothing else.
- ``gemini``: the same pieces as a list of strings and uploaded PNG files (RGB, at most
  ``max_image_size`` a side), ``GenerateContentConfig(temperature, top_p, candidate_count=1)`` plus
  ``max_output_tokens`` except for the thinking series (the wrapper's rule, google-genai issue 626).
- ``vllm_server``: the pieces as above, images as ``file://`` URLs of local files (else a data URI of
  the stored bytes with their own format), and the answer prefix as a closed assistant message:
  the server's chat template then opens a new assistant turn after it (no ``continue_final_message``).

Every profile stores the loader's system_template + the reply, as ``eval_api.py`` does.
"""
from __future__ import annotations

import base64
import io
import os
import re
from dataclasses import dataclass
from typing import Optional
from urllib.parse import quote

from mmlbdata.runner.chat import IMAGE_PLACEHOLDER, image_bytes

API_PROFILES = ("openai", "claude", "gemini", "vllm_server")
#: the wrappers they reproduce (vlm_model/ @22b9f27)
API_WRAPPERS = {"openai": "openai_model.py", "claude": "openai_model.py", "gemini": "gemini.py",
                "vllm_server": "vllm_models.py"}
#: openai_model.py: Claude's client points here (Anthropic's OpenAI-compatible endpoint)
ANTHROPIC_BASE_URL = "https://api.anthropic.com/v1/"
#: vllm_models.py: the server it calls
VLLM_BASE_URL = "http://localhost:8000/v1"
#: gemini.py: the series sent without max_output_tokens (google-genai issue 626)
GEMINI_NO_MAX_TOKENS = ("gemini-2.0-flash-thinking", "gemini-2.5-pro", "gemini-2.5-flash")
#: the environment variable each wrapper reads its key from (Claude's too is OPENAI_API_KEY there)
API_KEY_ENV = {"openai": "OPENAI_API_KEY", "claude": "OPENAI_API_KEY", "gemini": "GEMINI_API_KEY",
               "vllm_server": "OPENAI_API_KEY", "generic": "OPENAI_API_KEY"}


def api_profile_for(model: str) -> Optional[str]:
    """``load_LLM``'s first tests (vlm_model/__init__.py @22b9f27 L7-12), before ``--use_vllm`` and
    before any family: "gpt" or "claude" in the path -> openai_model.py ("claude" in the name
    switches its endpoint), "gemini" -> gemini.py; None otherwise. Case-sensitive, on the whole
    path, as there (the family tests lower-case the last path part)."""
    if "gpt" in model or "claude" in model:
        return "claude" if "claude" in model else "openai"
    if "gemini" in model:
        return "gemini"
    return None


@dataclass(frozen=True)
class APIOptions:
    """What ``mmlb run`` passes the API profiles (picklable: Ray replicas build their backend from it).

    ``image_detail``/``max_image_size``: None takes scripts/run_api.sh's value for the config
    (``settings="official"``), else the wrapper's default (``auto``, no limit). ``image_urls``: URL
    mode (see :class:`ImageURLs`). ``tries``/``pause``: ``call_api``'s 5 tries, 5 s apart."""
    image_detail: Optional[str] = None
    max_image_size: Optional[int] = None
    image_urls: Optional["ImageURLs"] = None
    settings: str = "official"
    tries: int = 5
    pause: float = 5.0


@dataclass(frozen=True)
class RequestSettings:
    """One config's image settings: what run_api.sh passed for it, or the options given."""
    image_detail: str = "auto"
    max_image_num: Optional[int] = None
    max_image_size: Optional[int] = None
    note: str = ""


def request_settings(model: str, config: str, options: APIOptions) -> RequestSettings:
    """The options given win; the rest from the run_api.sh block that ran ``config`` for this
    model's series (``settings="official"``), else the wrappers' defaults."""
    from mmlbdata.official.mmlb_api_settings import api_run_for

    run, note = api_run_for(model, config) if options.settings == "official" else (None, "")
    detail = options.image_detail or (run.image_detail if run else "auto")
    size = options.max_image_size if options.max_image_size is not None else (run.max_image_size if run else None)
    return RequestSettings(detail, run.max_image_num if run else None, size, note)


# -- the prompt as the wrappers split it -------------------------------------------------------------
def keep_last_images(content: list[dict], keep: Optional[int]) -> list[dict]:
    """model_utils.truncate_images on our content: the first images beyond the last ``keep`` dropped
    with their placeholder, the text around them kept."""
    indices = [item["index"] for item in content if item["type"] == "image"]
    if keep is None or len(indices) <= keep:
        return content
    dropped = set(indices[:len(indices) - keep])
    return [item for item in content if item["type"] == "text" or item["index"] not in dropped]


def official_pieces(content: list[dict]) -> tuple[list[str], list[int]]:
    """(``re.split(r'(<image>)', text)`` of the prompt the content stands for, the image indices
    in order): every wrapper's ``format_chat`` walks these pieces, empty ones included (a prompt
    ending with an image ends with an empty text piece)."""
    text = "".join(item["text"] if item["type"] == "text" else IMAGE_PLACEHOLDER for item in content)
    return re.split(r"(<image>)", text), [item["index"] for item in content if item["type"] == "image"]


def sampling(options) -> dict:
    """openai_model.py / vllm_models.py generate: temperature only when sampling, top_p always."""
    return {"temperature": options.temperature if options.do_sample else 0.0, "top_p": options.top_p}


def chat_content(pieces: list[str], urls: list[str], detail: Optional[str]) -> list[dict]:
    """format_chat's user content: text pieces and ``image_url`` items (``detail``: openai_model.py
    sends it with every image; vllm_models.py never)."""
    images = iter(urls)
    content = []
    for piece in pieces:
        if piece == IMAGE_PLACEHOLDER:
            image_url = {"url": next(images)}
            if detail is not None:
                image_url["detail"] = detail
            content.append({"type": "image_url", "image_url": image_url})
        else:
            content.append({"type": "text", "text": piece})
    return content


# -- images --------------------------------------------------------------------------------------------
def rgb(image):
    """``Image.open(image).convert('RGB')``, from the stored bytes."""
    from PIL import Image

    with Image.open(io.BytesIO(image_bytes(image))) as opened:
        return opened.convert("RGB")


def scaled(img, factor: float):
    """model_utils.resize_image: both sides times ``factor`` (int), LANCZOS."""
    from PIL import Image

    return img.resize((int(img.width * factor), int(img.height * factor)), Image.Resampling.LANCZOS)


def within(img, max_size: int):
    """model_utils.resize_image_max_size: the longer side to ``max_size`` (the other in proportion,
    int), LANCZOS; an image that fits unchanged."""
    from PIL import Image

    width, height = img.size
    if width <= max_size and height <= max_size:
        return img
    if width > height:
        size = (max_size, min(int(max_size / width * height), max_size))
    else:
        size = (min(int(max_size / height * width), max_size), max_size)
    return img.resize(size, Image.Resampling.LANCZOS)


def png(img) -> bytes:
    """encode_image_base64 / image_to_io: ``save(format="PNG")`` with PIL's defaults."""
    buffer = io.BytesIO()
    img.save(buffer, format="PNG")
    return buffer.getvalue()


class Encoded:
    """Each distinct image re-encoded once per run, not once per use: a Visual Haystack config
    uses each of its photos in many rows (the official wrappers encode every use; the bytes are the
    same). Kept by recency up to ``budget`` bytes; keyed by the image's file (files layout: named by
    its content) or the SHA-1 of its bytes, and the encoding's settings. Requests in flight that
    need an image being encoded wait for it rather than encode it again."""

    def __init__(self, budget: int = 256 << 20):
        import threading
        from collections import OrderedDict

        self.budget, self.size = budget, 0
        self._items: OrderedDict = OrderedDict()
        self._pending: dict = {}  # key -> the Future of the thread encoding it
        self._lock = threading.Lock()

    @staticmethod
    def key(image, *settings) -> tuple:
        path = image.get("path") if isinstance(image, dict) else None
        if not (path and (os.path.isabs(path) or path.startswith("hf://"))):
            import hashlib

            path = hashlib.sha1(image_bytes(image)).hexdigest()
        return (path, *settings)

    def get(self, image, make, *settings):
        from concurrent.futures import Future

        key = self.key(image, *settings)
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
            pending = self._pending.get(key)
            if pending is None:
                mine = self._pending[key] = Future()
        if pending is not None:
            return pending.result()
        try:
            value = make(image, *settings)
        except BaseException as exc:
            with self._lock:
                del self._pending[key]
            mine.set_exception(exc)
            raise
        with self._lock:
            del self._pending[key]
            self._items[key] = value
            self.size += len(value)
            while self.size > self.budget and len(self._items) > 1:
                self.size -= len(self._items.popitem(last=False)[1])
        mine.set_result(value)
        return value


def png_data_uri(image, image_resize: Optional[float] = None) -> str:
    """openai_model.py prepare_inputs, a local image: RGB, scaled by ``image_resize``, PNG, base64."""
    img = rgb(image)
    if image_resize is not None:
        img = scaled(img, image_resize)
    return "data:image/png;base64," + base64.b64encode(png(img)).decode("ascii")


def gemini_png(image, max_size: Optional[int] = None) -> bytes:
    """gemini.py prepare_inputs: RGB, at most ``max_size`` a side, PNG."""
    img = rgb(image)
    return png(within(img, max_size) if max_size is not None else img)


def vllm_image_url(image) -> str:
    """vllm_models.py format_chat: a local image as ``file://<path>`` (the server reads it, started
    with --allowed-local-media-path), bytes as ``data:image/<PIL format>;base64`` of those bytes."""
    path = image.get("path") if isinstance(image, dict) else image if isinstance(image, str) else None
    if path and "://" not in path and os.path.isfile(path):
        return f"file://{path}"
    from PIL import Image

    data = image_bytes(image)
    with Image.open(io.BytesIO(data)) as opened:
        kind = opened.format.lower()
    return f"data:image/{kind};base64,{base64.b64encode(data).decode('ascii')}"


# -- URL mode ----------------------------------------------------------------------------------------
_HUB_FILE = re.compile(r"hf://datasets/(?P<repo>[^@]+)@(?P<revision>[^/]+)/(?P<path>.+)")


def repo_path(image, folder: Optional[str]) -> str:
    """An image's path inside its dataset repository, as the row records it (``mmlb push`` uploads a
    built folder's files under the same paths, ``images/<family>/<partition>/<ab>/<sha256>.<ext>``):
    the part after the revision of an ``hf://`` path, else the local file's path relative to the
    built ``folder``. ValueError for an embedded image (no file of its own to point at)."""
    path = image.get("path") if isinstance(image, dict) else None
    hub = _HUB_FILE.fullmatch(path or "")
    if hub:
        return hub["path"]
    if not path or not os.path.isabs(path) or folder is None:
        raise ValueError("image URL mode needs images stored as files (mmlb build's files layout, a local "
                         "folder or its Hub repository); this config's images are embedded in its rows")
    relative = os.path.relpath(path, folder)
    if relative.startswith(".."):
        raise ValueError(f"image URL mode: {path} is not inside the built folder {folder}")
    return relative.replace(os.sep, "/")


@dataclass(frozen=True)
class ImageURLs:
    """URL mode: each image sent as its URL in the repository its folder was published to, as the
    paper's GPT-4o and Claude runs sent the release's URLs (``--image_file_root https://...``).

    ``root``: the repository's file URL root (``https://huggingface.co/datasets/<repo>/resolve/<rev>``),
    or ``"hub"`` for rows streamed from the Hub: each image's own ``hf://`` revision then gives it."""
    root: str
    folder: Optional[str] = None

    def url(self, image) -> str:
        path = repo_path(image, self.folder)
        if self.root == "hub":
            hub = _HUB_FILE.fullmatch(image.get("path") or "")
            if hub is None:
                raise ValueError("--image-urls hub needs rows streamed from the Hub (--data <repo id>)")
            from huggingface_hub import hf_hub_url

            return hf_hub_url(hub["repo"], path, repo_type="dataset", revision=hub["revision"])
        return f"{self.root.rstrip('/')}/{quote(path)}"


def describe(profile: str, model: str, options: APIOptions) -> str:
    """What the run's first line says of an API profile: the wrapper, and what is not reproduced."""
    wrapper = f"vlm_model/{API_WRAPPERS[profile]} @22b9f27"
    images = ("images as URLs of " + options.image_urls.root if options.image_urls
              else "images re-encoded as PNG" + (" files uploaded" if profile == "gemini" else " base64"))
    if profile == "vllm_server":
        return (f"{profile} ({wrapper}: one user message, local images as file:// URLs, the answer prefix as a "
                f"closed assistant message the server's template answers in a new turn; the default profile "
                f"continues the prefix instead)")
    settings = ("detail, max_image_num and max_image_size per config as scripts/run_api.sh passed them"
                if options.settings == "official" else "the wrapper's defaults")
    not_reproduced = "api_sleep pacing (requests run --concurrency at a time)"
    if profile == "gemini":
        not_reproduced += ("; a model outside gemini.py's list is sent max_output_tokens where the wrapper "
                           "raises; a failed request is recorded empty where the wrapper aborts the dataset")
    if profile in ("openai", "claude") and not options.image_urls:
        not_reproduced += "; the paper's GPT-4o runs (Claude's from 32K) sent the release's image URLs (--image-urls)"
    return f"{profile} ({wrapper}: {images}, {settings}; not reproduced: {not_reproduced})"
