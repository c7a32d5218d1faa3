"""The backend-independent part of ``mmlb run``: read examples, batch, write, resume, time.

Examples are streamed from the built dataset with images left undecoded; each backend gets
requests (chat content + the kept images + prefix + token budget) and returns texts. A backend
may split its work into ``prepare(requests, profile)`` (CPU: decode, processor) and
``generate(prepared)`` (the model): :mod:`.pipeline` then prepares the next batches in
background threads while this one generates. Predictions are appended to the JSONL as they
come, so an interrupted run resumes by skipping ids already written for the config.
"""
from __future__ import annotations

import json
import logging
import sys
import time
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Optional, Protocol, Sequence

from mmlbdata.official.mmlb_run_settings import settings_for
from mmlbdata.runner.chat import answer_prefix_for, max_new_tokens_for, text_context, to_content
from mmlbdata.runner.conversation import chat_messages, content_of
from mmlbdata.runner.pipeline import (
    STAGES,
    Batch,
    BatchProfile,
    batches,
    gpu_peak_memory,
    prefetched,
    prepare_batch,
    prepare_threads,
    stage,
)

log = logging.getLogger(__name__)


@dataclass
class Request:
    id: str
    config: str
    metric: str
    content: list[dict]
    images: list  # undecoded image values, indexed by content items' "index"
    prefix: str = ""
    max_new_tokens: int = 128
    length: int = 0  # the row's num_tokens (else its prompt's characters): what --sort-window sorts by
    #: a multi-turn chat (rows with a ``sessions`` column: runner/conversation.py), sent instead of one
    #: user turn; ``content`` then holds all its items in order
    messages: Optional[list[dict]] = None


@dataclass
class Generation:
    text: str
    prompt_tokens: int = 0
    generated_tokens: int = 0
    seed: Optional[int] = None  # the seed the backend set before the config (None: not seeded)


class Backend(Protocol):
    """``generate`` takes what ``prepare`` returned, or the requests themselves when the backend
    has no ``prepare`` (optional: ``prepare(requests, profile)`` runs in a background thread)."""

    def generate(self, requests: Sequence[Request]) -> list[Generation]: ...


@dataclass
class RunStats:
    examples: int = 0
    skipped: int = 0
    errors: int = 0
    prompt_tokens: int = 0
    generated_tokens: int = 0
    seconds: float = 0.0
    per_config: dict = field(default_factory=dict)
    #: seconds spent per stage, summed over batches (stages overlap: they may add up past ``seconds``)
    stages: dict = field(default_factory=lambda: dict.fromkeys(STAGES, 0.0))
    waited: float = 0.0  # generation idle, waiting for a prepared batch
    gpu_peak: Optional[int] = None  # torch.cuda.max_memory_allocated, bytes; None: no CUDA

    def add_profile(self, profile: BatchProfile) -> None:
        for name, seconds in profile.seconds.items():
            self.stages[name] = self.stages.get(name, 0.0) + seconds
        self.waited += profile.waited

    def line(self) -> str:
        s = max(self.seconds, 1e-9)
        return (f"{self.examples} examples in {self.seconds:.1f}s: {self.examples / s:.3f} ex/s, "
                f"{self.generated_tokens / s:.1f} generated tok/s, {self.prompt_tokens / s:.1f} prompt tok/s "
                f"({self.skipped} already done, {self.errors} failed); {self.stage_line()}")

    def stage_line(self) -> str:
        """Where the time went: seconds per stage, generation's wait for input, GPU peak memory."""
        stages = ", ".join(f"{name} {self.stages.get(name, 0.0):.1f}s" for name in STAGES)
        gpu = f"{self.gpu_peak / 2**30:.2f} GiB" if self.gpu_peak is not None else "n/a"
        return f"stages: {stages}, waiting for input {self.waited:.1f}s; GPU peak memory {gpu}"


def done_ids(path: Path, config: str) -> set[str]:
    """Ids already predicted for ``config`` in an existing output file (bad lines ignored)."""
    ids: set[str] = set()
    if not path.is_file():
        return ids
    with path.open(encoding="utf-8") as f:
        for line in f:
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(row, dict) and row.get("config") == config and isinstance(row.get("prediction"), str):
                ids.add(str(row.get("id")))
    return ids


def iter_examples(data_dir: str | Path, config: str) -> Iterator[dict]:
    """Rows of the config's test split with images as undecoded {"bytes", "path"} values, streamed
    by ``datasets`` from the parquet files (no Arrow cache copy, which could also be stale)."""
    import datasets

    from mmlbdata.runner.prefetch import with_image_bytes  # files layout: each image a file (a request on the Hub)

    ds = datasets.load_dataset(str(data_dir), config, split="test", streaming=True)
    if "images" in (ds.column_names or list(ds.features or [])):
        # decode(False), not cast_column: streaming from the Hub, load_dataset adds a threaded
        # decoding step that a cast does not undo (the rows would hold PIL images)
        ds = ds.decode(False)
    yield from with_image_bytes(ds)


def make_request(row: dict, config: str, max_images: int | None, max_new_tokens: int | None,
                 prefill: bool, as_text: bool = False, label_images: bool = False) -> Request:
    """One row's request: its prompt as one user turn, or for a row with a conversation (``sessions``,
    MemLens) the multi-turn chat the official code sends (``label_images``: ``[Image k]`` labels;
    ``max_images`` does not apply to it)."""
    meta = row.get("meta") or {}
    if isinstance(meta, str):
        meta = json.loads(meta) if meta.strip() else {}
    prompt, images = row["prompt"], list(row.get("images") or [])
    messages = None
    if row.get("sessions") is not None:
        messages = chat_messages(row, label_images=label_images)
        content = content_of(messages)
    else:
        if as_text:
            prompt, images = text_context(prompt, images, meta)
        content, _kept = to_content(prompt, len(images), max_images)
    metric = row.get("metric") or ""
    return Request(id=str(row["id"]), config=config, metric=metric, content=content, images=images,
                   prefix=answer_prefix_for(metric, meta) if prefill else "",
                   max_new_tokens=max_new_tokens_for(metric, max_new_tokens),
                   length=int(row.get("num_tokens") or 0) or len(prompt), messages=messages)


@dataclass
class PipelineOptions:
    """How batches are formed and prepared ahead (see :mod:`.pipeline`).

    ``workers=0`` is the serial path; any ``workers`` gives the same batches, so the same
    predictions. ``sort_window`` (0: off) sorts each window of that many batches by length to
    save padding: same ids, other batches, so greedy outputs may differ in the last digits of
    the logits; off by default for that reason.
    """
    workers: int = 2
    depth: int = 4
    sort_window: int = 0
    profile: Optional[str | Path] = None  # a JSONL file: one line per batch (stages, ids, padding)


def config_budgets(config: str, max_images: int | None, max_new_tokens: int | None,
                   settings: str = "official") -> tuple[int | None, int | None]:
    """(max images, max new tokens) for ``config``: the options when given, else with
    ``settings="official"`` MMLongBench's per-dataset values (configs/*.yaml: generation_max_length;
    max_image_num, None there) for its configs, else the per-metric budgets (None here)."""
    official = settings_for(config) if settings == "official" else None
    if official is None:
        return max_images, max_new_tokens
    return (max_images if max_images is not None else official.max_image_num,
            max_new_tokens or official.generation_max_length)


def run(backend: Backend, data_dir: str | Path, configs: Sequence[str], out: str | Path,
        batch_size: int = 1, max_images: int | None = None, max_new_tokens: int | None = None,
        prefill: bool = True, limit: int | None = None, as_text: bool = False,
        pipeline: PipelineOptions | None = None, label_images: bool = False,
        settings: str = "official") -> RunStats:
    """Generate predictions for every example of every config not yet in ``out``
    (``as_text``: ReadBench's text baseline, see :func:`chat.text_context`), preparing the next
    batches while one generates (``pipeline``). ``settings``: ``official`` (MMLongBench's
    per-dataset budgets, :func:`config_budgets`) or ``generic`` (per-metric budgets)."""
    opts = pipeline or PipelineOptions()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    stats = RunStats()
    start = time.perf_counter()
    configs = list(dict.fromkeys(configs))  # a config named twice runs once (its ids are read once, up front)
    seen = {config: done_ids(out, config) for config in configs}
    read = {"skipped": 0, "errors": 0}  # counted by the reading thread, added to stats at the end

    def requests(config: str) -> Iterator[tuple[Request, float]]:
        """The config's pending requests, each with the seconds spent reading it."""
        count, rows = 0, iter_examples(data_dir, config)
        images, new_tokens = config_budgets(config, max_images, max_new_tokens, settings)
        official = settings_for(config) if settings == "official" else None
        if official is not None:
            log.info("%s: MMLongBench's configs/%s: generation_max_length %d (running with %d), input_max_length "
                     "%d (the official wrappers do not truncate to it)", config, official.config_file,
                     official.generation_max_length, new_tokens, official.input_max_length)
        while limit is None or count < limit:
            started = time.perf_counter()
            row = next(rows, None)
            if row is None:
                return
            count += 1
            if str(row["id"]) in seen[config]:
                read["skipped"] += 1
                continue
            try:
                request = make_request(row, config, images, new_tokens, prefill, as_text, label_images)
            except ValueError as exc:
                log.error("config %s example %s skipped: %s", config, row.get("id"), exc)
                read["errors"] += 1
                continue
            yield request, time.perf_counter() - started

    source = (batch for config in configs for batch in batches(requests(config), batch_size, opts.sort_window))
    profile = Path(opts.profile).open("a", encoding="utf-8") if opts.profile else None
    current = None
    try:
        # closing: an exception here (Ctrl-C, a crash) stops the reading threads at once
        with out.open("a", encoding="utf-8") as sink, \
                closing(prefetched(source, lambda b: prepare_batch(backend, b), opts.workers, opts.depth,
                                   prepare_threads(backend, opts.workers))) as ready:
            for batch in ready:
                if current is not None and batch.config != current:
                    _log_config(current, stats, start)
                current = batch.config
                _flush(backend, batch, sink, stats)
                if profile is not None:  # else read once per config (_log_config): the peak only grows
                    peak = _note_gpu_peak(stats)
                    profile.write(json.dumps({**batch.profile.record(), "gpu_peak_bytes": peak}) + "\n")
                    profile.flush()
    finally:
        if profile is not None:
            profile.close()
    stats.skipped += read["skipped"]
    stats.errors += read["errors"]
    if current is not None:
        _log_config(current, stats, start)
    stats.seconds = time.perf_counter() - start
    _note_gpu_peak(stats)
    return stats


def _note_gpu_peak(stats: RunStats) -> Optional[int]:
    """The GPU peak so far (None: no CUDA), kept in ``stats``."""
    peak = gpu_peak_memory()
    stats.gpu_peak = peak if peak is not None else stats.gpu_peak
    return peak


def _log_config(config: str, stats: RunStats, start: float) -> None:
    stats.seconds = time.perf_counter() - start
    _note_gpu_peak(stats)
    log.info("%s: %s", config, stats.line())


def generate_batch(backend: Backend, batch: Batch) -> tuple[list[dict], list[str]]:
    """Prediction rows (the JSONL's fields) for one prepared batch and the ids that failed.

    A failing batch (OOM, corrupt image) is logged and reported, never ends a long run.
    """
    reqs = batch.requests
    gens = None
    if batch.error is None:
        try:
            with stage(batch.profile, "generate"):
                gens = backend.generate(batch.prepared)
        except Exception as exc:  # noqa: BLE001 - see the docstring
            batch.error = exc
    if batch.error is not None:
        log.error("batch %s failed: %s", [r.id for r in reqs], batch.error)
        print(f"mmlb run: batch {[r.id for r in reqs]} failed: {batch.error}", file=sys.stderr)
        return [], [r.id for r in reqs]
    rows = []
    for req, gen in zip(reqs, gens):
        text = req.prefix + gen.text if req.prefix else gen.text
        rows.append({"id": req.id, "config": req.config, "prediction": text,
                     "prompt_tokens": gen.prompt_tokens, "generated_tokens": gen.generated_tokens,
                     **({"seed": gen.seed} if gen.seed is not None else {})})
    return rows, []


def write_prediction(sink, row: dict, stats: RunStats) -> None:
    """Append one prediction line (the format every runner writes and ``mmlb eval`` reads) and
    count it in ``stats``; ``sink=None`` only counts."""
    if sink is not None:  # the seed too, when the backend seeded (hf profiles)
        fields = PREDICTION_FIELDS + (("seed",) if row.get("seed") is not None else ())
        sink.write(json.dumps({k: row[k] for k in fields}, ensure_ascii=False) + "\n")
    stats.examples += 1
    stats.prompt_tokens += row["prompt_tokens"]
    stats.generated_tokens += row["generated_tokens"]


PREDICTION_FIELDS = ("id", "config", "prediction", "prompt_tokens", "generated_tokens")


def _flush(backend: Backend, batch: Batch, sink, stats: RunStats) -> None:
    rows, failed = generate_batch(backend, batch)
    for row in rows:
        write_prediction(sink, row, stats)
    stats.errors += len(failed)
    stats.add_profile(batch.profile)
    sink.flush()
