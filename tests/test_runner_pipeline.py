"""The runner's pipeline: batches prepared ahead in background threads give the serial path's
predictions (tiny random VLM, greedy, real COCO images), the queue stays bounded, errors reach
the caller, length sorting keeps ids and resumes without duplicates, stages are timed."""
from __future__ import annotations

import json
import threading
import time

import pytest

from mmlbdata.runner.core import Generation, PipelineOptions, Request, run
from mmlbdata.runner.pipeline import BatchProfile, Batch, batches, make_batch, prefetched
from tests.smoke import write_built


def _row(i: int, pics: list[bytes], metric: str = "binary_acc") -> dict:
    n = 1 + i % 3
    return {"id": f"r{i}", "dataset": "visual_haystack", "length": 8192, "num_tokens": 100 * (1 + (i * 7) % 5),
            "prompt": "Haystack: " + "<image>" * n + f"\nQuestion {i}: is there a dog?" + " Look." * (i % 4),
            "images": [{"bytes": pics[(i + j) % len(pics)], "path": None} for j in range(n)],
            "question": "is there a dog?", "answers": ["yes"], "metric": metric,
            "meta": json.dumps({"category": "NIAH"})}


@pytest.fixture(scope="module")
def built(tmp_path_factory, coco_mini):
    pics = [p.read_bytes() for p in sorted((coco_mini / "val2017").glob("*.jpg"))[:4]]
    rows = [_row(i, pics) for i in range(9)]
    mixed = [_row(i, pics, metric="binary_acc" if i % 2 else "rouge_l") for i in range(5)]  # two budgets
    return write_built(tmp_path_factory.mktemp("built"), {"vh_single_8k": rows, "summ_8k": mixed})


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    pytest.importorskip("transformers")
    from tests.tiny import build_tiny_vlm

    return build_tiny_vlm(tmp_path_factory.mktemp("tiny"))


def lines(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_pipeline_gives_the_serial_predictions_in_the_same_order(built, tiny_model, tmp_path):
    from mmlbdata.runner.hf import HFBackend

    backend = HFBackend(str(tiny_model), device="cpu")
    outs = {}
    for workers in (0, 2):
        out = tmp_path / f"w{workers}.jsonl"
        stats = run(backend, built, ["vh_single_8k", "summ_8k"], out, batch_size=2, max_new_tokens=5,
                    pipeline=PipelineOptions(workers=workers, depth=2, profile=tmp_path / f"w{workers}.prof"))
        assert (stats.examples, stats.errors) == (14, 0)
        outs[workers] = lines(out)
        assert stats.stages["decode"] > 0 and stats.stages["preprocess"] > 0 and stats.stages["generate"] > 0
        assert "stages: read " in stats.line() and "GPU peak memory n/a" in stats.line()
    assert outs[0] == outs[2]
    assert [r["id"] for r in outs[0][:9]] == [f"r{i}" for i in range(9)]
    # summ_8k mixes two budgets: one backend call per budget, its batches still of two
    profile = lines(tmp_path / "w2.prof")
    assert [p["size"] for p in profile] == [2, 2, 2, 2, 1] + [2, 2, 1]
    assert sorted(i for p in profile for i in p["ids"]) == sorted(r["id"] for r in outs[2])
    assert all(p["generate"] > 0 and p["decode"] > 0 and p["gpu_peak_bytes"] is None for p in profile)


class Recorder:
    """A backend whose answer is the request id; records each call's ids and can stop the run
    (an exception the runner does not catch, as Ctrl-C) at a given call."""

    def __init__(self, stop_at: int | None = None):
        self.calls: list[list[str]] = []
        self.stop_at = stop_at

    def generate(self, requests):
        if self.stop_at is not None and len(self.calls) == self.stop_at:
            raise KeyboardInterrupt
        self.calls.append([r.id for r in requests])
        return [Generation(r.id, r.length, 1) for r in requests]


def test_sorted_windows_pad_less_keep_ids_and_resume_without_duplicates(built, tmp_path):
    # num_tokens of r0..r8: 100, 300, 500, 200, 400, 100, 300, 500, 200
    padding = {}
    for window in (0, 4):
        prof = tmp_path / f"prof{window}.jsonl"
        run(Recorder(), built, ["vh_single_8k"], tmp_path / f"all{window}.jsonl", batch_size=2,
            pipeline=PipelineOptions(sort_window=window, profile=prof))
        padding[window] = sum(p["padding"] for p in lines(prof))
    # as read: [100,300] [500,200] [400,100] [300,500] [200] -> 200+300+300+200; sorted in the
    # window of 8: [100,100] [200,300] [300,400] [500,500] [200] -> 0+100+100+0
    assert padding == {0: 1000, 4: 200}

    out = tmp_path / "p.jsonl"
    opts = PipelineOptions(workers=1, sort_window=4)
    first = Recorder(stop_at=2)
    threads = threading.active_count()
    with pytest.raises(KeyboardInterrupt):
        run(first, built, ["vh_single_8k"], out, batch_size=2, pipeline=opts)
    assert threading.active_count() <= threads, "the reading threads outlived the interrupted run"
    assert first.calls == [["r0", "r5"], ["r3", "r1"]] and len(lines(out)) == 4
    stats = run(Recorder(), built, ["vh_single_8k"], out, batch_size=2, pipeline=opts)
    assert stats.skipped == 4 and stats.examples == 5
    ids = [r["id"] for r in lines(out)]
    assert sorted(ids) == sorted(f"r{i}" for i in range(9)) and len(ids) == len(set(ids))


def _requests(n: int, config: str = "c") -> list[tuple[Request, float]]:
    return [(Request(id=str(i), config=config, metric="m", content=[], images=[], length=i), 0.01) for i in range(n)]


def test_batches_group_by_budget_and_sort_only_within_a_window():
    items = _requests(6)
    items[1][0].max_new_tokens = 384
    plain = [[r.id for r in b.requests] for b in batches(items, 2)]
    assert plain == [["0", "2"], ["3", "4"], ["1"], ["5"]]
    for i, (req, _) in enumerate(items):
        req.length = 10 - i
    window = [[r.id for r in b.requests] for b in batches(items, 2, sort_window=2)]
    assert window == [["4", "3"], ["2", "0"], ["1"], ["5"]]
    assert all(b.profile.seconds["read"] == pytest.approx(0.01 * len(b.requests)) for b in batches(items, 2))


def test_the_queue_stays_bounded_and_order_is_kept():
    read = []

    def source():
        for i in range(40):
            read.append(i)
            yield Batch("c", [], BatchProfile("c", [str(i)], [1]))

    def prepare(batch):
        time.sleep(0.001 * (int(batch.profile.ids[0]) % 3))  # finishing out of order
        return batch

    got = []
    for batch in prefetched(source(), prepare, workers=3, depth=2):
        got.append(int(batch.profile.ids[0]))
        if len(got) == 5:
            time.sleep(0.2)  # a slow generation: the feeder must wait, not read on
            # queued (2) + the one the feeder holds while the queue is full (1)
            assert len(read) <= len(got) + 2 + 1
    assert got == list(range(40))


def test_a_reading_error_reaches_the_caller_after_the_batches_before_it():
    def source():
        yield Batch("c", [], BatchProfile("c", ["0"], [1]))
        raise OSError("data/c/test-00000.parquet: truncated file")

    got = []
    with pytest.raises(OSError, match="truncated"):
        for batch in prefetched(source(), lambda b: b, workers=2, depth=2):
            got.append(batch.profile.ids)
    assert got == [["0"]]


def test_stopping_early_ends_the_threads():
    before = threading.active_count()
    endless = (Batch("c", [], BatchProfile("c", [str(i)], [1])) for i in iter(int, 1))
    gen = prefetched(endless, lambda b: b, workers=2, depth=2)
    assert next(gen).profile.ids == ["0"]
    gen.close()
    assert threading.active_count() <= before


class BadImage(Recorder):
    def prepare(self, requests, profile=None):
        if any(r.id == "r2" for r in requests):
            raise OSError("cannot identify image file")
        return requests


def test_a_batch_that_fails_to_prepare_is_reported_and_the_run_goes_on(built, tmp_path, capsys):
    out = tmp_path / "p.jsonl"
    stats = run(BadImage(), built, ["vh_single_8k"], out, batch_size=2, pipeline=PipelineOptions(workers=2))
    assert (stats.examples, stats.errors) == (7, 2)
    assert "cannot identify image file" in capsys.readouterr().err
    assert sorted(r["id"] for r in lines(out)) == sorted(f"r{i}" for i in range(9) if i not in (2, 3))


def test_cli_options_reach_the_pipeline_and_the_profile_is_written(built, tiny_model, tmp_path, capsys):
    import argparse

    from mmlbdata.cli import run as run_cmd

    parser = argparse.ArgumentParser(prog="mmlb")
    run_cmd.register(parser.add_subparsers())
    preds, prof = tmp_path / "p.jsonl", tmp_path / "prof.jsonl"
    args = parser.parse_args(["run", "--backend", "hf", "--model", str(tiny_model), "--device", "cpu", "--data",
                              str(built), "--config", "vh_single_8k", "--out", str(preds), "--max-new-tokens", "3",
                              "--batch-size", "4", "--workers", "1", "--prefetch", "1", "--sort-window", "2",
                              "--profile", str(prof), "--limit", "6"])
    assert args.func(args) == 0
    printed = capsys.readouterr().out
    assert "6 examples" in printed and "preprocess" in printed and "GPU peak memory n/a" in printed
    records = lines(prof)
    # six rows in one window of two batches of four, sorted by num_tokens: 100 100 200 300 | 400 500
    assert [r["size"] for r in records] == [4, 2] and records[0]["ids"] == ["r0", "r5", "r3", "r1"]
    assert sorted(r["id"] for r in lines(preds)) == [f"r{i}" for i in range(6)]


def test_a_config_named_twice_is_run_once(built, tmp_path):
    """``--config X --config X``: the done ids are read once before the run, so the second pass
    would write every prediction again."""
    out = tmp_path / "twice.jsonl"
    stats = run(Recorder(), built, ["vh_single_8k", "vh_single_8k"], out, batch_size=2)
    ids = [r["id"] for r in lines(out)]
    assert len(ids) == len(set(ids)) == 9 and stats.examples == 9



def test_an_image_that_cannot_be_read_ahead_fails_its_batch_not_the_run(tmp_path, coco_mini, tokenizer_path):
    """Files layout: images are read ahead of the rows (prefetch.with_image_bytes); one missing file
    (or a Hub error) used to end the whole run from the reading thread, no prediction written."""
    import pyarrow.parquet as pq

    from mmlbdata.dataset.build import build_configs
    from mmlbdata.runner.chat import to_pil

    class Decoding(Recorder):
        def prepare(self, requests, profile=None):
            for r in requests:
                for image in r.images:
                    to_pil(image)
            return requests

    [result] = build_configs(["vh_single_8k"], {"coco": coco_mini}, tmp_path / "out", tokenizer=tokenizer_path,
                             store_root=tmp_path / "store", progress=False, limit=2)
    assert result.ok, result.error
    rows = pq.read_table(tmp_path / "out" / "vh_single_8k.metadata.parquet",
                         columns=["id", "images_file_names"]).to_pylist()
    uses = {}
    for r in rows:
        for name in r["images_file_names"]:
            uses[name] = uses.get(name, 0) + 1
    gone = min(uses, key=uses.get)  # an image few rows share
    (tmp_path / "out" / gone).unlink()
    hit = [r["id"] for r in rows if gone in r["images_file_names"]]
    out = tmp_path / "p.jsonl"
    stats = run(Decoding(), tmp_path / "out", ["vh_single_8k"], out, pipeline=PipelineOptions(workers=2))
    assert sorted(r["id"] for r in lines(out)) == sorted(r["id"] for r in rows if r["id"] not in hit)
    assert stats.errors == len(hit) < len(rows)


# --- thread sizing (issue 36: the reader ran 16 + 2 + 1 threads on 2 cores, most of them waiting) --------

def _threads_named(prefix: str) -> int:
    import threading

    return sum(t.name.startswith(prefix) for t in threading.enumerate())


def test_local_and_embedded_images_are_read_without_a_pool_remote_ones_with_one(tmp_path, monkeypatch):
    """A local file is read where the row is used (a pool only costs CPU there); an embedded image
    is passed on; only remote paths (round trips) get DEFAULT_THREADS readers."""
    from mmlbdata.runner import prefetch

    files = []
    for i in range(3):
        files.append(tmp_path / f"{i}.jpg")
        files[-1].write_bytes(bytes([i]) * (i + 1))
    rows = [{"id": "e", "images": [{"bytes": b"x", "path": None}]},
            {"id": "f", "images": [{"bytes": None, "path": str(p)} for p in files] + [{"bytes": b"y", "path": None}]},
            {"id": "m", "images": [{"bytes": None, "path": str(tmp_path / "missing.jpg")}]}]
    seen = []
    for row in prefetch.with_image_bytes(iter(rows)):
        seen.append([image["bytes"] for image in row["images"]])
        assert _threads_named("mmlb-images") == 0
    assert seen == [[b"x"], [b"\x00", b"\x01\x01", b"\x02\x02\x02", b"y"], [None]]  # a missing file: left unread
    assert prefetch.reader_threads(str(files[0])) == 0
    assert prefetch.reader_threads("hf://datasets/o/r@main/images/a.jpg") == prefetch.DEFAULT_THREADS

    monkeypatch.setattr(prefetch, "reader_threads", lambda path: 2)  # as for remote paths: a pool, same rows
    pooled = [[image["bytes"] for image in row["images"]] for row in prefetch.with_image_bytes(iter(rows), ahead=1)]
    assert pooled == seen and _threads_named("mmlb-images") == 0  # the pool is shut down with the generator


def test_rows_with_nothing_to_read_are_passed_on_at_once(tmp_path, monkeypatch):
    """An embedded-layout config (every image's bytes in the row) or a text-only one: each row comes
    out before the next is pulled from the stream, not after the whole config was read (that held
    every row of a 128K config, gigabytes, before the model got its first). Behind a reading pool,
    at most ``ahead`` rows wait, with or without images."""
    from mmlbdata.runner import prefetch

    pulled = []

    def stream(rows):
        for row in rows:
            pulled.append(row["id"])
            yield row

    embedded = [{"id": f"e{i}", "images": [{"bytes": b"x", "path": None}]} for i in range(5)]
    for row in prefetch.with_image_bytes(stream(embedded)):
        assert pulled[-1] == row["id"]
    local = tmp_path / "a.jpg"
    local.write_bytes(b"a")
    monkeypatch.setattr(prefetch, "reader_threads", lambda path: 2)  # a pool, as for remote paths
    pulled.clear()
    mixed = [{"id": "r0", "images": [{"bytes": None, "path": str(local)}]}] + [{"id": f"t{i}"} for i in range(20)]
    for row in prefetch.with_image_bytes(stream(mixed), ahead=4):
        assert len(pulled) - pulled.index(row["id"]) <= 5, (row["id"], pulled)


def test_prepare_threads_follow_the_backend_and_the_cores(monkeypatch):
    """No ``prepare``: the feeder hands batches on itself (no pool); otherwise ``--workers`` capped at
    the usable cores; 0 stays the serial path."""
    from mmlbdata.runner import prefetch
    from mmlbdata.runner.pipeline import prepare_threads

    class Preparing(Recorder):
        def prepare(self, requests, profile=None):
            return requests

    monkeypatch.setattr(prefetch, "usable_cores", lambda: 2)
    assert prepare_threads(Recorder(), 2) == 0
    assert prepare_threads(Preparing(), 8) == 2 and prepare_threads(Preparing(), 1) == 1
    assert prepare_threads(Preparing(), 0) == 0


def test_prefetched_without_a_pool_gives_the_same_batches_in_order():
    """threads=0 with workers > 0: the feeder thread prepares; order and content as with a pool."""
    def source():
        for i in range(7):
            yield make_batch([Request(id=f"r{i}", config="c", metric="m", content=[], images=[], length=i)], 0.0)

    def prepare(batch):
        batch.prepared = [r.id.upper() for r in batch.requests]
        return batch

    pooled = [b.prepared for b in prefetched(source(), prepare, workers=2, depth=2)]
    fed = [b.prepared for b in prefetched(source(), prepare, workers=2, depth=2, threads=0)]
    assert fed == pooled == [[f"R{i}"] for i in range(7)]
    assert _threads_named("mmlb-prepare") == 0
