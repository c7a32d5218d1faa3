"""API backends of ``mmlb run``: OpenAI-compatible chat completions (OpenAI, Anthropic's compatible
endpoint, a vLLM server) and Gemini through google-genai, each request built by its profile
(:mod:`.api_profiles`).

Requests run ``concurrency`` at a time, each in its own thread from preparing (images re-encoded,
uploaded) to the reply, and are written as they finish (:meth:`APIBackend.stream`): one slow or
failing request never holds up or fails its neighbours. A request is tried as MMLongBench's
``call_api`` tries it (model_utils.py @22b9f27: 5 tries, 5 s apart; the OpenAI client's own 2
retries inside each), and one that still fails gives an empty reply recorded with its error
(``eval_api.py``: an empty output, kept in its results); the next ``mmlb run`` tries it again.
"""
from __future__ import annotations

import io
import logging
import os
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, Optional, Sequence

from mmlbdata.core.extras import require
from mmlbdata.runner import api_profiles as ap
from mmlbdata.runner.chat import openai_messages
from mmlbdata.runner.core import Generation, Request
from mmlbdata.runner.profiles import ProfileOptions

log = logging.getLogger(__name__)

#: answers a provider gives every time for the same request: trying again cannot help
FINAL_STATUSES = frozenset({400, 401, 403, 404, 422})


@dataclass(frozen=True)
class Tries:
    """``call_api(func, limit, pause)``: up to ``limit`` calls, ``pause`` seconds apart; ``sleep``
    is the pause itself (tests pass one that does not wait)."""
    limit: int = 5
    pause: float = 5.0
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False)

    def call(self, func: Callable, what: str):
        for attempt in range(1, self.limit + 1):
            try:
                return func()
            except Exception as exc:  # noqa: BLE001 - call_api tries again on any error
                status = getattr(exc, "status_code", None) or getattr(exc, "code", None)
                if attempt == self.limit or status in FINAL_STATUSES:
                    raise
                log.info("%s: try %d of %d failed (%s); again in %.0f s", what, attempt, self.limit,
                         _first_line(exc), self.pause)
                self.sleep(self.pause)
        raise AssertionError("unreachable")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:300] if text else ''}"


class APIBackend:
    """Requests sent one per thread, ``concurrency`` at a time. Subclasses build and send one
    request (:meth:`send`); this class tries it, turns a final failure into an empty, recorded
    answer, and runs many (:meth:`stream` for ``mmlb run``, :meth:`generate` for a batch)."""

    profile = "generic"

    def __init__(self, model: str, concurrency: int = 8, options: Optional[ProfileOptions] = None,
                 api: Optional[ap.APIOptions] = None, sleep: Callable[[float], None] = time.sleep):
        self.model = model
        self.concurrency = max(1, concurrency)
        self.options = options or ProfileOptions()
        self.api = api or ap.APIOptions()
        self.tries = Tries(self.api.tries, self.api.pause, sleep)
        self.encoded = ap.Encoded()  # each distinct image re-encoded once (the same bytes as every time)
        self._settings: dict[str, ap.RequestSettings] = {}
        self._lock = threading.Lock()

    def settings(self, config: str) -> ap.RequestSettings:
        """The config's image settings (scripts/run_api.sh's, see :func:`api_profiles.request_settings`)."""
        with self._lock:
            if config not in self._settings:
                settings = self._settings[config] = ap.request_settings(self.model, config, self.api)
                if settings.note:  # another model of the series, a length the paper did not run
                    log.info("%s: %s (image detail %s, max images %s, max image size %s)", config, settings.note,
                             settings.image_detail, settings.max_image_num, settings.max_image_size)
            return self._settings[config]

    def send(self, request: Request) -> Generation:  # pragma: no cover - abstract
        raise NotImplementedError

    def complete(self, request: Request) -> Generation:
        """One request, tried; a final failure is an empty answer carrying its error (never raised)."""
        try:
            return self.send(request)
        except Exception as exc:  # noqa: BLE001 - one failed request never fails its neighbours
            error = _first_line(exc)
            log.warning("%s %s: no answer (recorded empty, tried again by the next run): %s", request.config,
                        request.id, error)
            return Generation("", error=error)

    def stream(self, requests: Iterable[Request]) -> Iterator[tuple[Request, Generation]]:
        """``(request, generation)`` as each finishes, ``concurrency`` in flight (and two read
        ahead, so a freed thread starts at once; memory: that many rows' images)."""
        pool = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="mmlb-api")
        pending: set = set()
        try:
            for request in requests:
                pending.add(pool.submit(lambda r=request: (r, self.complete(r))))
                if len(pending) >= self.concurrency + 2:
                    done, pending = wait(pending, return_when=FIRST_COMPLETED)
                    yield from (future.result() for future in done)
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                yield from (future.result() for future in done)
        finally:
            pool.shutdown(wait=False, cancel_futures=True)

    def generate(self, requests: Sequence[Request]) -> list[Generation]:
        """A batch in its order (``mmlb run --ray``'s replicas call this)."""
        with ThreadPoolExecutor(max_workers=min(self.concurrency, max(len(requests), 1))) as pool:
            return list(pool.map(self.complete, requests))


class ChatAPIBackend(APIBackend):
    """Chat completions through the ``openai`` client. ``profile``: ``openai`` / ``claude``
    (openai_model.py), ``vllm_server`` (vllm_models.py) or ``generic`` (a vLLM server continuing
    the prefilled answer prefix: ``continue_final_message``, images as their stored bytes)."""

    def __init__(self, model: str, profile: str = "generic", base_url: Optional[str] = None,
                 api_key: Optional[str] = None, timeout: Optional[float] = None, client=None, **kwargs):
        super().__init__(model, **kwargs)
        self.profile = profile
        if client is None:
            openai = require("openai", "eval", "the openai backend of `mmlb run`")
            client_kwargs = {"api_key": api_key or "EMPTY"}  # the client's own max_retries (2), as the wrappers'
            if base_url:
                client_kwargs["base_url"] = base_url
            if timeout is not None:
                client_kwargs["timeout"] = timeout
            client = openai.OpenAI(**client_kwargs)
        self.client = client

    def request_body(self, request: Request) -> dict:
        """The keyword arguments of ``chat.completions.create`` for ``request`` (the body but for
        what the client adds: nothing, for these)."""
        if self.profile == "generic":
            return self._generic_body(request)
        settings = self.settings(request.config)
        if request.messages is not None:  # a conversation (MemLens): its turns, no wrapper of MMLongBench's
            messages = openai_messages(request.content, request.images, "", request.messages)
        else:
            content = ap.keep_last_images(request.content, settings.max_image_num) \
                if self.profile != "vllm_server" else request.content  # vllm_models.py keeps every image
            pieces, indices = ap.official_pieces(content)
            images = [request.images[i] for i in indices]
            if self.profile == "vllm_server":
                urls, detail = [ap.vllm_image_url(image) for image in images], None
            elif self.api.image_urls is not None:
                urls, detail = [self.api.image_urls.url(image) for image in images], settings.image_detail
            else:
                resize = self.options.image_resize
                urls = [self.encoded.get(image, ap.png_data_uri, resize) for image in images]
                detail = settings.image_detail
            messages = [{"role": "user", "content": ap.chat_content(pieces, urls, detail)}]
            if self.profile == "vllm_server" and request.prefix:
                messages.append({"role": "assistant", "content": request.prefix})
        return {"model": self.model, "messages": messages, "max_tokens": request.max_new_tokens,
                **ap.sampling(self.options)}

    def _generic_body(self, request: Request) -> dict:
        """Today's server path: the prefix prefilled and continued (vLLM's chat-template options)."""
        body = {"model": self.model,
                "messages": openai_messages(request.content, request.images, request.prefix, request.messages),
                "max_tokens": request.max_new_tokens, **ap.sampling(self.options)}
        if request.prefix:
            body["extra_body"] = {"continue_final_message": True, "add_generation_prompt": False}
        return body

    def send(self, request: Request) -> Generation:
        body = self.request_body(request)
        reply = self.tries.call(lambda: self.client.chat.completions.create(**body), f"{request.config} {request.id}")
        usage = reply.usage
        return Generation(reply.choices[0].message.content or "", getattr(usage, "prompt_tokens", 0) or 0,
                          getattr(usage, "completion_tokens", 0) or 0)


class GeminiBackend(APIBackend):
    """gemini.py: every image uploaded as a PNG file (``files.upload``, 3 tries each, up to 32 at
    once), then ``models.generate_content`` with the pieces and the uploaded files. ``client``: a
    ``google.genai.Client`` (made from ``api_key`` when not given)."""

    profile = "gemini"

    def __init__(self, model: str, api_key: Optional[str] = None, client=None, **kwargs):
        super().__init__(model, **kwargs)
        genai = require("google.genai", "gemini", "the gemini backend of `mmlb run`")
        from google.genai import types

        self._types = types
        self.client = client if client is not None else genai.Client(api_key=api_key)

    def config(self, request: Request):
        """gemini.py generate's GenerateContentConfig: temperature and top_p as given (do_sample is
        not read there), one candidate, max_output_tokens except for the thinking series."""
        kwargs = {"temperature": self.options.temperature, "top_p": self.options.top_p, "candidate_count": 1}
        if not any(series in self.model for series in ap.GEMINI_NO_MAX_TOKENS):
            kwargs["max_output_tokens"] = request.max_new_tokens
        return self._types.GenerateContentConfig(**kwargs)

    def contents(self, request: Request) -> list:
        """The pieces, each image uploaded (gemini.py prepare_inputs + upload_content)."""
        settings = self.settings(request.config)
        pieces, indices = ap.official_pieces(ap.keep_last_images(request.content, settings.max_image_num))
        images = [self.encoded.get(request.images[i], ap.gemini_png, settings.max_image_size) for i in indices]
        files = []
        if images:
            upload = Tries(3, self.tries.pause, self.tries.sleep)
            with ThreadPoolExecutor(max_workers=min(32, len(images))) as pool:
                files = list(pool.map(lambda data: upload.call(
                    lambda: self.client.files.upload(file=io.BytesIO(data), config={"mime_type": "image/png"}),
                    f"{request.config} {request.id} upload"), images))
        uploaded = iter(files)
        return [next(uploaded) if piece == "<image>" else piece for piece in pieces]

    def send(self, request: Request) -> Generation:
        contents = self.contents(request)
        config = self.config(request)
        reply = self.tries.call(lambda: self.client.models.generate_content(model=self.model, contents=contents,
                                                                             config=config),
                                f"{request.config} {request.id}")
        usage = getattr(reply, "usage_metadata", None)
        return Generation(getattr(reply, "text", None) or "", getattr(usage, "prompt_token_count", None) or 0,
                          getattr(usage, "candidates_token_count", None) or 0)


def api_key(env: Optional[str], profile: str) -> Optional[str]:
    """The key from ``env`` (else the variable the profile's wrapper reads)."""
    return os.environ.get(env or ap.API_KEY_ENV.get(profile, "OPENAI_API_KEY"))
