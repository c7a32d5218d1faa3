"""The backend-independent part of ``mmlb run``: read examples, batch, write, resume, time.

Examples are streamed from the built dataset with images left undecoded; each backend gets
requests (chat content + the kept images + prefix + token budget) and returns texts.
Predictions are appended to the JSONL as they come, so an interrupted run resumes by
skipping ids already written for the config.
"""
from __future__ import annotations

import json
import logging
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Protocol, Sequence

from .chat import answer_prefix_for, max_new_tokens_for, text_context, to_content

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


@dataclass
class Generation:
    text: str
    prompt_tokens: int = 0
    generated_tokens: int = 0


class Backend(Protocol):
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

    def line(self) -> str:
        s = max(self.seconds, 1e-9)
        return (f"{self.examples} examples in {self.seconds:.1f}s: {self.examples / s:.3f} ex/s, "
                f"{self.generated_tokens / s:.1f} generated tok/s, {self.prompt_tokens / s:.1f} prompt tok/s "
                f"({self.skipped} already done, {self.errors} failed)")


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
    """Rows of the config's test split with images as undecoded {"bytes", "path"} values,
    streamed from the parquet files (no Arrow cache copy, which could also be stale)."""
    import datasets

    ds = datasets.load_dataset(str(data_dir), config, split="test", streaming=True)
    if "images" in (ds.column_names or list(ds.features or [])):
        # decode(False), not cast_column: streaming from the Hub, load_dataset adds a threaded
        # decoding step that a cast does not undo (the rows would hold PIL images)
        ds = ds.decode(False)
    from ..prefetch import with_image_bytes  # files layout: each image a file (a request on the Hub)

    yield from with_image_bytes(ds)


def make_request(row: dict, config: str, max_images: int | None, max_new_tokens: int | None,
                 prefill: bool, as_text: bool = False) -> Request:
    meta = row.get("meta") or {}
    if isinstance(meta, str):
        meta = json.loads(meta) if meta.strip() else {}
    prompt, images = row["prompt"], list(row.get("images") or [])
    if as_text:
        prompt, images = text_context(prompt, images, meta)
    content, _kept = to_content(prompt, len(images), max_images)
    metric = row.get("metric") or ""
    return Request(id=str(row["id"]), config=config, metric=metric, content=content, images=images,
                   prefix=answer_prefix_for(metric, meta) if prefill else "",
                   max_new_tokens=max_new_tokens_for(metric, max_new_tokens))


def run(backend: Backend, data_dir: str | Path, configs: Sequence[str], out: str | Path,
        batch_size: int = 1, max_images: int | None = None, max_new_tokens: int | None = None,
        prefill: bool = True, limit: int | None = None, as_text: bool = False) -> RunStats:
    """Generate predictions for every example of every config not yet in ``out``
    (``as_text``: ReadBench's text baseline, see :func:`chat.text_context`)."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    stats = RunStats()
    start = time.perf_counter()
    with out.open("a", encoding="utf-8") as sink:
        for config in configs:
            seen = done_ids(out, config)
            batch: list[Request] = []
            count = 0
            for row in iter_examples(data_dir, config):
                if limit is not None and count >= limit:
                    break
                count += 1
                if str(row["id"]) in seen:
                    stats.skipped += 1
                    continue
                try:
                    batch.append(make_request(row, config, max_images, max_new_tokens, prefill, as_text))
                except ValueError as exc:
                    log.error("config %s example %s skipped: %s", config, row.get("id"), exc)
                    stats.errors += 1
                    continue
                if len(batch) >= batch_size:
                    _flush(backend, batch, sink, stats)
                    batch = []
            if batch:
                _flush(backend, batch, sink, stats)
            stats.seconds = time.perf_counter() - start
            log.info("%s: %s", config, stats.line())
    stats.seconds = time.perf_counter() - start
    return stats


def generate_rows(backend: Backend, batch: list[Request]) -> tuple[list[dict], list[str]]:
    """Prediction rows (the JSONL's fields) for one batch and the ids whose generation failed.

    Requests are grouped by token budget and prefix so a backend call shares settings; one
    failing group (OOM, corrupt image) is logged and reported, never ends a long run.
    """
    groups: dict[tuple, list[Request]] = {}
    for req in batch:
        groups.setdefault((req.max_new_tokens, bool(req.prefix)), []).append(req)
    rows: list[dict] = []
    failed: list[str] = []
    for reqs in groups.values():
        try:
            gens = backend.generate(reqs)
        except Exception as exc:  # noqa: BLE001 - see the docstring
            log.error("batch %s failed: %s", [r.id for r in reqs], exc)
            print(f"mmlb run: batch {[r.id for r in reqs]} failed: {exc}", file=sys.stderr)
            failed.extend(r.id for r in reqs)
            continue
        for req, gen in zip(reqs, gens):
            text = req.prefix + gen.text if req.prefix else gen.text
            rows.append({"id": req.id, "config": req.config, "prediction": text,
                         "prompt_tokens": gen.prompt_tokens, "generated_tokens": gen.generated_tokens})
    return rows, failed


def write_prediction(sink, row: dict, stats: RunStats) -> None:
    """Append one prediction line (the format every runner writes and ``mmlb eval`` reads) and
    count it in ``stats``; ``sink=None`` only counts."""
    if sink is not None:
        sink.write(json.dumps({k: row[k] for k in PREDICTION_FIELDS}, ensure_ascii=False) + "\n")
    stats.examples += 1
    stats.prompt_tokens += row["prompt_tokens"]
    stats.generated_tokens += row["generated_tokens"]


PREDICTION_FIELDS = ("id", "config", "prediction", "prompt_tokens", "generated_tokens")


def _flush(backend: Backend, batch: list[Request], sink, stats: RunStats) -> None:
    rows, failed = generate_rows(backend, batch)
    for row in rows:
        write_prediction(sink, row, stats)
    stats.errors += len(failed)
    sink.flush()
