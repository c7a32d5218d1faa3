"""The Ray path reads what a MemLens row needs to be sent as its conversation: without the
``sessions``, ``question`` and ``question_date`` columns a replica sent the flattened prompt as one
user turn, and ``--label-images`` was lost (the single-process runner sends the multi-turn chat)."""
from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq

from mmlbdata.runner.core import make_request
from mmlbdata.runner.ray_run import ROW_COLUMNS, _keep_rows, row_columns

SESSIONS = [{"date": "2024/01/02 (Tue) 10:00",
             "turns": [{"role": "user", "content": "Look <image> at this", "images": [0]},
                       {"role": "assistant", "content": "A cat.", "images": []}]}]


def _metadata(path):
    row = {"id": "q0", "prompt": "flattened context and question", "images_file_names": ["images/m/x/ab/ab.png"],
           "metric": "memlens_judge", "meta": json.dumps({"category": "ie"}), "num_tokens": 12,
           "question": "What animal?", "question_date": "2024/01/03 (Wed) 09:00", "sessions": SESSIONS,
           "question_type": "ie"}
    pq.write_table(pa.Table.from_pylist([row]), path)
    return row


def test_a_conversation_config_reads_its_conversation_columns(tmp_path):
    path = tmp_path / "memlens_32k.metadata.parquet"
    full = _metadata(path)
    columns = row_columns(pq.read_schema(path).names, files_layout=True)
    assert {"sessions", "question", "question_date"} <= set(columns)
    table = _keep_rows(pq.read_table(path, columns=columns), "memlens_32k", ["q0"], root=str(tmp_path))
    row = table.to_pylist()[0]
    on_ray = make_request(row, "memlens_32k", None, 128, True, label_images=True)
    alone = make_request({**full, "images": row["images"]}, "memlens_32k", None, 128, True, label_images=True)
    assert on_ray.messages is not None and on_ray.messages == alone.messages
    assert {"type": "text", "text": "[Image 1]"} in on_ray.content


def test_other_configs_read_the_plain_columns(tmp_path):
    names = ["id", "prompt", "images_file_names", "metric", "meta", "num_tokens", "question", "answers"]
    assert row_columns(names, files_layout=True) == ["images_file_names" if c == "images" else c for c in ROW_COLUMNS]
    assert row_columns(["images", *names], files_layout=False) == ROW_COLUMNS


def test_ray_run_sends_memlens_rows_as_the_single_process_runner(tmp_path, real_data, tokenizer_path, monkeypatch):
    """End to end: the tiny VLM through the chat template, 2 rows of a built MemLens config, with
    ``--label-images``; each row's prompt tokens (and output) on Ray equal the single-process run's."""
    import argparse
    import sys
    from pathlib import Path

    import pytest

    pytest.importorskip("ray")
    pytest.importorskip("transformers")
    import ray

    sys.path.insert(0, str(Path(__file__).parent))
    import memlens_fixture as fixture

    from mmlbdata.cli import run as run_cmd
    from mmlbdata.dataset.build import build_configs
    from tests.tiny import build_tiny_vlm

    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf"))
    root = fixture.write_release(tmp_path / "release", real_data, num_images=4)
    built = tmp_path / "built"
    assert all(r.ok for r in build_configs(["memlens_32k"], {"memlens": root}, built, progress=False,
                                           tokenizer=tokenizer_path))
    model = build_tiny_vlm(tmp_path / "tiny")

    def cli(*argv) -> int:
        parser = argparse.ArgumentParser(prog="mmlb")
        run_cmd.register(parser.add_subparsers())
        args = parser.parse_args([str(a) for a in argv])
        return args.func(args)

    common = ["--backend", "hf", "--model", model, "--device", "cpu", "--data", built, "--config", "memlens_32k",
              "--limit", "2", "--max-new-tokens", "3", "--label-images"]
    assert cli("run", *common, "--out", tmp_path / "single.jsonl") == 0
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        assert cli("run", "--ray", *common, "--out", tmp_path / "ray.jsonl") == 0
    finally:
        ray.shutdown()

    def by_id(path):
        return {r["id"]: (r["prediction"], r["prompt_tokens"]) for r in map(json.loads, path.read_text().splitlines())}

    single = by_id(tmp_path / "single.jsonl")
    assert len(single) == 2 and by_id(tmp_path / "ray.jsonl") == single
