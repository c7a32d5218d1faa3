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
import os
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
    #: why an API request gave no answer after its tries (the text is then empty): the line is
    #: written with it, as eval_api.py keeps an empty output, and the next run tries it again
    error: Optional[str] = None


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
    per_config: dict = field(default_factory=dict)  # config -> examples written
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
        failed = f"{self.errors} failed" + (": run again to try them again" if self.errors else "")
        timing = f"; {self.stage_line()}" if any(self.stages.values()) else ""
        return (f"{self.examples} examples in {self.seconds:.1f}s: {self.examples / s:.3f} ex/s, "
                f"{self.generated_tokens / s:.1f} generated tok/s, {self.prompt_tokens / s:.1f} prompt tok/s "
                f"({self.skipped} already done, {failed}){timing}")

    def stage_line(self) -> str:
        """Where the time went: seconds per stage, generation's wait for input, GPU peak memory
        (batched backends; an API run's requests overlap, so it has no stages)."""
        stages = ", ".join(f"{name} {self.stages.get(name, 0.0):.1f}s" for name in STAGES)
        gpu = f"{self.gpu_peak / 2**30:.2f} GiB" if self.gpu_peak is not None else "n/a"
        return f"stages: {stages}, waiting for input {self.waited:.1f}s; GPU peak memory {gpu}"


def done_ids(path: Path, config: str) -> set[str]:
    """Ids already predicted for ``config`` in an existing output file (bad lines ignored; an id
    whose last line records a failed request is not done)."""
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
                if row.get("error"):  # a request that failed: tried again (a later line replaces it)
                    ids.discard(str(row.get("id")))
                else:
                    ids.add(str(row.get("id")))
    return ids


def iter_examples(data_dir: str | Path, config: str, read_images: bool = True) -> Iterator[dict]:
    """Rows of the config's test split with images as undecoded {"bytes", "path"} values, streamed
    by ``datasets`` from the parquet files (no Arrow cache copy, which could also be stale).
    ``read_images=False``: a files-layout image keeps its path only (image URL mode sends the path,
    never the bytes)."""
    import datasets

    from mmlbdata.dataset.card import streamed_data_files
    from mmlbdata.runner.prefetch import with_image_bytes  # files layout: each image a file (a request on the Hub)

    files = streamed_data_files(data_dir, config)  # a local files-layout config: without its image partitions
    ds = datasets.load_dataset(str(data_dir), config, split="test", streaming=True,
                               **({"data_files": {"test": files}} if files else {}))
    if "images" in (ds.column_names or list(ds.features or [])):
        # decode(False), not cast_column: streaming from the Hub, load_dataset adds a threaded
        # decoding step that a cast does not undo (the rows would hold PIL images)
        ds = ds.decode(False)
    yield from with_image_bytes(ds) if read_images else ds


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
        settings: str = "official", progress: bool = True, read_images: bool = True) -> RunStats:
    """Generate predictions for every example of every config not yet in ``out``
    (``as_text``: ReadBench's text baseline, see :func:`chat.text_context`), preparing the next
    batches while one generates (``pipeline``). ``settings``: ``official`` (MMLongBench's
    per-dataset budgets, :func:`config_budgets`) or ``generic`` (per-metric budgets). An API
    backend (one with ``stream``) sends its requests ``concurrency`` at a time instead of in
    batches, each written as it finishes. ``progress``: a bar with the total, the rate, the ETA
    and tokens/s on stderr. ``read_images=False``: images go by path (image URL mode)."""
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
        count, rows = 0, iter_examples(data_dir, config, read_images)
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

    bar = progress_bar(pending_total(data_dir, configs, seen, limit), progress)
    profile = Path(opts.profile).open("a", encoding="utf-8") if opts.profile else None
    try:
        with out.open("a", encoding="utf-8") as sink, bar, _logs_above(bar):
            if callable(getattr(backend, "stream", None)):
                _stream(backend, (r for config in configs for r, _ in requests(config)), sink, stats, bar, start)
            else:
                source = (batch for config in configs
                          for batch in batches(requests(config), batch_size, opts.sort_window))
                _batched(backend, source, opts, sink, profile, stats, bar, start)
    finally:
        if profile is not None:
            profile.close()
    stats.skipped += read["skipped"]
    stats.errors += read["errors"]
    stats.seconds = time.perf_counter() - start
    _note_gpu_peak(stats)
    if len(configs) > 1:  # the summary line is the whole run's; with several configs, each one's too
        for config in configs:
            log.info("%s: %d examples", config, stats.per_config.get(config, 0))
    return stats


def _batched(backend: Backend, source: Iterator[Batch], opts: PipelineOptions, sink, profile, stats: RunStats,
             bar, start: float) -> None:
    """Batches prepared ahead (:func:`pipeline.prefetched`) and generated one after the other."""
    # closing: an exception here (Ctrl-C, a crash) stops the reading threads at once
    with closing(prefetched(source, lambda b: prepare_batch(backend, b), opts.workers, opts.depth,
                            prepare_threads(backend, opts.workers))) as ready:
        for batch in ready:
            _flush(backend, batch, sink, stats)
            _advance(bar, stats, start, len(batch.requests), batch.config)
            if profile is not None:  # else read once at the end: the peak only grows
                peak = _note_gpu_peak(stats)
                profile.write(json.dumps({**batch.profile.record(), "gpu_peak_bytes": peak}) + "\n")
                profile.flush()


#: an API run stops when this many requests failed before any was answered (a wrong URL or key)
FAILED_BEFORE_ANY_ANSWER = 10


def _stream(backend, requests: Iterator[Request], sink, stats: RunStats, bar, start: float) -> None:
    """An API backend's requests, ``concurrency`` in flight, each line written as it finishes."""
    answered = 0
    stream = backend.stream(requests)
    with closing(stream):
        for request, generation in stream:
            write_prediction(sink, prediction_row(request, generation), stats)
            sink.flush()
            _advance(bar, stats, start, 1, request.config)
            answered += not generation.error
            if not answered and stats.errors >= FAILED_BEFORE_ANY_ANSWER:
                log.error("stopped: the first %d requests all failed (last: %s); check --base-url and the API key, "
                          "then run again (failed requests are tried again)", stats.errors, generation.error)
                return


def _advance(bar, stats: RunStats, start: float, done: int, config: str) -> None:
    """Count ``done`` examples of ``config`` and show tokens/s where the backend reports tokens."""
    stats.per_config[config] = stats.per_config.get(config, 0) + done
    bar.update(done)
    elapsed = max(time.perf_counter() - start, 1e-9)
    if stats.generated_tokens:
        bar.set_postfix_str(f"{stats.generated_tokens / elapsed:.1f} gen tok/s, "
                            f"{stats.prompt_tokens / elapsed:.0f} prompt tok/s, {stats.errors} failed", refresh=False)


def pending_total(data_dir, configs: Sequence[str], seen: dict[str, set], limit: int | None) -> Optional[int]:
    """Examples the run will send: each config's rows (its README's ``num_examples``, else the
    footers of the parquet files its entry names; None when neither says, e.g. a Hub dataset), up
    to ``limit``, less those already in the output."""
    from mmlbdata.dataset.card import folder_front_matter

    meta = folder_front_matter(str(data_dir))
    if not meta:
        return None
    infos = {i.get("config_name"): i for i in meta.get("dataset_info") or [] if isinstance(i, dict)}
    entries = {e.get("config_name"): e for e in meta.get("configs") or [] if isinstance(e, dict)}
    total = 0
    for config in configs:
        splits = (infos.get(config) or {}).get("splits") or []
        rows = next((s.get("num_examples") for s in splits if isinstance(s, dict) and s.get("name") == "test"), None)
        rows = rows if isinstance(rows, int) else _parquet_rows(Path(str(data_dir)), entries.get(config))
        if rows is None:
            return None
        total += max(min(rows, limit or rows) - len(seen.get(config, ())), 0)
    return total


def _parquet_rows(folder: Path, entry: Optional[dict]) -> Optional[int]:
    """Rows of the test split's parquet files a README entry names (their footers), else None."""
    import pyarrow.parquet as pq

    files = [f for f in (entry or {}).get("data_files") or [] if isinstance(f, dict) and f.get("split") == "test"]
    patterns = [p for f in files for p in ([f["path"]] if isinstance(f.get("path"), str) else f.get("path") or [])]
    if not patterns or not all(isinstance(p, str) and p.endswith(".parquet") for p in patterns):
        return None
    paths = sorted({path for pattern in patterns for path in folder.glob(pattern)})
    return sum(pq.read_metadata(path).num_rows for path in paths) if paths else None


def progress_bar(total: Optional[int], enabled: bool = True):
    """``mmlb run``'s bar on stderr: examples done of ``total``, rate and ETA (tqdm); ``enabled``
    False (``--no-progress``) shows nothing. Off a terminal it redraws once a minute."""
    from tqdm.auto import tqdm

    terminal = sys.stderr.isatty()
    try:  # a terminal that reports no size (a bare pty): tqdm would draw nothing; a fixed size then
        sized = terminal and min(os.get_terminal_size(sys.stderr.fileno())) > 0
    except (OSError, ValueError):
        sized = False
    fixed = {} if sized or not terminal else {"ncols": 100, "nrows": 20}
    return tqdm(total=total, desc="mmlb run", unit="ex", disable=not enabled, file=sys.stderr,
                dynamic_ncols=sized, mininterval=0.2 if terminal else 60.0, smoothing=0.1, **fixed)


def _logs_above(bar):
    """Log lines printed above the bar, not through it."""
    from contextlib import nullcontext

    from tqdm.contrib.logging import logging_redirect_tqdm

    return nullcontext() if bar.disable else logging_redirect_tqdm()


def _note_gpu_peak(stats: RunStats) -> Optional[int]:
    """The GPU peak so far (None: no CUDA), kept in ``stats``."""
    peak = gpu_peak_memory()
    stats.gpu_peak = peak if peak is not None else stats.gpu_peak
    return peak


def prediction_row(request: Request, generation: Generation) -> dict:
    """One prediction line: the reply after the answer prefix (``answer_prefix``: what was
    prepended, so ``mmlb eval --parity official`` reads the reply as the official runner does);
    a request that failed after its tries keeps its ``error`` and an empty reply."""
    text = request.prefix + generation.text if request.prefix else generation.text
    row = {"id": request.id, "config": request.config, "prediction": text, "prompt_tokens": generation.prompt_tokens,
           "generated_tokens": generation.generated_tokens, "answer_prefix": request.prefix}
    if generation.error:
        row["error"] = generation.error
    if generation.seed is not None:
        row["seed"] = generation.seed
    return row


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
        return [], [r.id for r in reqs]
    return [prediction_row(req, gen) for req, gen in zip(reqs, gens)], []


def write_prediction(sink, row: dict, stats: RunStats) -> None:
    """Append one prediction line (the format every runner writes and ``mmlb eval`` reads) and
    count it in ``stats``; ``sink=None`` only counts. A line with an ``error`` counts as failed;
    ``seed`` and ``error`` are written when set."""
    if sink is not None:
        line = {k: row[k] for k in PREDICTION_FIELDS if k in row}
        for optional in ("seed", "error"):
            if row.get(optional) is not None:
                line[optional] = row[optional]
        sink.write(json.dumps(line, ensure_ascii=False) + "\n")
    stats.examples += 1
    stats.errors += 1 if row.get("error") else 0
    stats.prompt_tokens += row["prompt_tokens"]
    stats.generated_tokens += row["generated_tokens"]


PREDICTION_FIELDS = ("id", "config", "prediction", "prompt_tokens", "generated_tokens", "answer_prefix")


def _flush(backend: Backend, batch: Batch, sink, stats: RunStats) -> None:
    rows, failed = generate_batch(backend, batch)
    for row in rows:
        write_prediction(sink, row, stats)
    stats.errors += len(failed)
    stats.add_profile(batch.profile)
    sink.flush()
