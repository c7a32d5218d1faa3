"""``mmlb run --ray`` on a local Ray (2 CPUs) with the tiny random VLM on CPU: the same greedy
predictions as the single-process runner, and a run whose replica is killed completes or resumes
without duplicates. Real COCO images from the shared samples."""
from __future__ import annotations

import argparse
import functools
import json
import os
import sys
from pathlib import Path

import pytest

pytest.importorskip("ray")
pytest.importorskip("transformers")

from mmlbdata.cli import run as run_cmd  # noqa: E402
from mmlbdata.runner.backends import BackendOptions  # noqa: E402
from tests.smoke import write_built  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

CONFIGS = ["vh_single_8k", "vh_multi_8k"]


def _row(i: int, config: str, pics: list[bytes]) -> dict:
    n = 1 + i % 3
    return {"id": f"{config}-{i}", "dataset": "visual_haystack", "length": 8192, "num_tokens": 100,
            "prompt": "Haystack: " + "<image>" * n + f"\nQuestion {i}: is there a dog? Answer yes or no.",
            "images": [{"bytes": pics[(i + j) % len(pics)], "path": None} for j in range(n)],
            "question": "is there a dog?", "answers": ["yes"], "metric": "binary_acc",
            "meta": json.dumps({"category": "NIAH"})}


@pytest.fixture(scope="module")
def built(tmp_path_factory, coco_mini):
    pics = [p.read_bytes() for p in sorted((coco_mini / "val2017").glob("*.jpg"))[:4]]
    return write_built(tmp_path_factory.mktemp("built"),
                       {c: [_row(i, c, pics) for i in range(5)] for c in CONFIGS})


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    from tests.tiny import build_tiny_vlm

    return build_tiny_vlm(tmp_path_factory.mktemp("tiny"))


@pytest.fixture(scope="module")
def local_ray():
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    # the crashing backend below lives in this test module, which Ray workers cannot import
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def single_process(built, tiny_model, tmp_path_factory) -> dict:
    """Predictions of the single-process runner (batch 1, greedy) keyed by (config, id)."""
    from mmlbdata.runner.core import run
    from mmlbdata.runner.hf import HFBackend

    out = tmp_path_factory.mktemp("single") / "preds.jsonl"
    run(HFBackend(str(tiny_model), device="cpu"), built, CONFIGS, out, max_new_tokens=6)
    return by_key(out)


def by_key(path: Path) -> dict:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    keys = [(r["config"], r["id"]) for r in rows]
    assert len(keys) == len(set(keys)), "duplicate predictions"
    return {(r["config"], r["id"]): (r["prediction"], r["prompt_tokens"], r["generated_tokens"]) for r in rows}


def cli(*argv) -> int:
    parser = argparse.ArgumentParser(prog="mmlb")
    run_cmd.register(parser.add_subparsers())
    args = parser.parse_args([str(a) for a in argv])
    return args.func(args)


def test_ray_run_equals_single_process_and_resumes(built, tiny_model, single_process, local_ray, tmp_path, capsys):
    assert len(single_process) == 10
    preds = tmp_path / "ray.jsonl"
    # as if an earlier run had stopped after two examples: they must be kept, not redone
    first = [{"id": i, "config": c, "prediction": p, "prompt_tokens": a, "generated_tokens": b}
             for (c, i), (p, a, b) in sorted(single_process.items())[:2]]
    preds.write_text("".join(json.dumps(r) + "\n" for r in first))
    assert cli("run", "--ray", "--replicas", "2", "--cpus-per-replica", "0.5", "--backend", "hf", "--model", tiny_model, "--device", "cpu",
               "--data", built, "--config", CONFIGS[0], "--config", CONFIGS[1], "--out", preds,
               "--max-new-tokens", "6", "--profile", tmp_path / "prof.jsonl") == 0
    printed = capsys.readouterr().out
    assert "8 examples" in printed and "(2 already done" in printed and "replica " in printed
    assert "stages: read" in printed and "GPU peak memory n/a" in printed
    assert by_key(preds) == single_process
    # the replicas' stage times, one line per block received
    profile = [json.loads(line) for line in (tmp_path / "prof.jsonl").read_text().splitlines()]
    assert sorted(i for p in profile for i in p["ids"]) == sorted(i for _, i in list(sorted(single_process))[2:])
    assert all(p["generate"] > 0 and p["preprocess"] > 0 and p["gpu_peak_bytes"] is None for p in profile)
    # nothing left: a second run adds no line
    assert cli("run", "--ray", "--backend", "hf", "--model", tiny_model, "--device", "cpu", "--data", built,
               "--config", CONFIGS[0], "--config", CONFIGS[1], "--out", preds) == 0
    assert len(preds.read_text().splitlines()) == 10


def test_ray_run_limit_takes_the_first_rows(built, tiny_model, single_process, local_ray, tmp_path):
    preds = tmp_path / "p.jsonl"
    assert cli("run", "--ray", "--backend", "hf", "--model", tiny_model, "--device", "cpu", "--data", built,
               "--config", CONFIGS[1], "--out", preds, "--max-new-tokens", "6", "--limit", "3") == 0
    assert by_key(preds) == {k: v for k, v in single_process.items()
                             if k[0] == CONFIGS[1] and k[1] in {f"{CONFIGS[1]}-{i}" for i in range(3)}}


class CrashingBackend:
    """The HF backend, except that the process dies (as a killed replica or a lost node does) on
    its second batch while ``marker`` is absent; with ``once`` the marker is written first, so a
    restarted replica carries on."""

    def __init__(self, model: str, marker: str, once: bool):
        from mmlbdata.runner.hf import HFBackend

        self.inner, self.marker, self.once, self.calls = HFBackend(model, device="cpu"), marker, once, 0

    def generate(self, requests):
        self.calls += 1
        if self.calls == 2 and not os.path.exists(self.marker):
            if self.once:
                Path(self.marker).touch()
            os._exit(1)
        return self.inner.generate(requests)


def test_killed_replica_is_restarted_without_duplicates(built, tiny_model, single_process, local_ray, tmp_path):
    from mmlbdata.runner.ray_run import RequestOptions, run_on_ray

    marker = tmp_path / "crashed"
    preds = tmp_path / "p.jsonl"
    factory = functools.partial(CrashingBackend, str(tiny_model), str(marker), True)
    stats = run_on_ray(factory, built, CONFIGS, preds, replicas=1, requests=RequestOptions(max_new_tokens=6), cpus_per_replica=0.5,
                       progress=False)
    assert marker.exists(), "the replica was never killed"
    assert stats.examples == 10 and stats.errors == 0
    assert by_key(preds) == single_process


def test_run_stopped_by_a_dead_replica_resumes(built, tiny_model, single_process, local_ray, tmp_path):
    from mmlbdata.runner.ray_run import RequestOptions, run_on_ray

    preds = tmp_path / "p.jsonl"
    factory = functools.partial(CrashingBackend, str(tiny_model), str(tmp_path / "never"), False)
    with pytest.raises(Exception):
        run_on_ray(factory, built, CONFIGS, preds, replicas=1, requests=RequestOptions(max_new_tokens=6), cpus_per_replica=0.5,
                   progress=False, max_replica_restarts=0)
    partial = by_key(preds) if preds.exists() else {}
    assert len(partial) < 10 and all(single_process[k] == v for k, v in partial.items())
    stats = run_on_ray(BackendOptions("hf", str(tiny_model), device="cpu"), built, CONFIGS, preds,
                       requests=RequestOptions(max_new_tokens=6), cpus_per_replica=0.5, progress=False)
    assert stats.skipped == len(partial) and stats.examples == 10 - len(partial)
    assert by_key(preds) == single_process


def test_without_ray_the_cli_names_the_extra(built, tmp_path, monkeypatch, capsys):
    """``sys.modules["ray"] = None`` makes the import fail as if Ray were absent. The model "m"
    does not exist: the driver must not try to load it (the replicas do)."""
    from mmlbdata.cli import main

    monkeypatch.setitem(sys.modules, "ray", None)
    code = main(["run", "--ray", "--backend", "hf", "--model", "m", "--data", str(built),
                 "--config", CONFIGS[0], "--out", str(tmp_path / "p.jsonl")])
    assert code == 2
    assert "pip install 'mmlbdata[ray]'" in capsys.readouterr().err


def test_a_model_no_replica_can_load_is_one_clear_line(built, local_ray, tmp_path, capsys):
    code = cli("run", "--ray", "--cpus-per-replica", "0.5", "--backend", "hf", "--model", tmp_path / "no-model",
               "--device", "cpu", "--data", built, "--config", CONFIGS[0], "--out", tmp_path / "p.jsonl")
    err = capsys.readouterr().err
    assert code == 1 and "mmlb run --ray: stopped" in err and "run again to resume" in err


def test_reads_a_hub_dataset_repo(built, tiny_model, single_process, local_ray, tmp_path, monkeypatch):
    """``--data org/name`` (no such folder) reads the repo's shards through HfFileSystem; here a
    local folder laid out as the Hub's ``datasets/org/name`` stands in for it (no network)."""
    import huggingface_hub
    from fsspec.implementations.dirfs import DirFileSystem
    from fsspec.implementations.local import LocalFileSystem

    hub = tmp_path / "hub"
    (hub / "datasets" / "org").mkdir(parents=True)
    (hub / "datasets" / "org" / "mmlb").symlink_to(built, target_is_directory=True)
    monkeypatch.setattr(huggingface_hub, "HfFileSystem", lambda: DirFileSystem(str(hub), fs=LocalFileSystem()))
    monkeypatch.setattr("mmlbdata.cli._common.hub_offline_reason", lambda: None)  # the stand-in Hub answers
    preds = tmp_path / "p.jsonl"
    assert cli("run", "--ray", "--cpus-per-replica", "0.5", "--backend", "hf", "--model", tiny_model, "--device",
               "cpu", "--data", "org/mmlb", "--config", CONFIGS[0], "--out", preds, "--max-new-tokens", "6",
               "--limit", "2") == 0
    assert by_key(preds) == {k: v for k, v in single_process.items()
                             if k in {(CONFIGS[0], f"{CONFIGS[0]}-0"), (CONFIGS[0], f"{CONFIGS[0]}-1")}}


def test_openai_backend_on_ray_bounds_requests_in_flight(built, local_ray, tmp_path, monkeypatch):
    """Each replica runs the OpenAI client with --concurrency requests in flight: 2 replicas x 2
    never exceed 4 at the server (a slow loopback server, so requests overlap)."""
    from fake_openai import FakeOpenAI

    monkeypatch.setenv("OPENAI_API_KEY", "test")
    preds = tmp_path / "p.jsonl"
    with FakeOpenAI(lambda body: f" {body['messages'][0]['content'][-1]['text'][-10:]}", delay=0.2) as server:
        assert cli("run", "--ray", "--replicas", "2", "--cpus-per-replica", "0.5", "--backend", "openai",
                   "--model", "served", "--base-url", server.base_url, "--concurrency", "2", "--data", built,
                   "--config", CONFIGS[0], "--config", CONFIGS[1], "--out", preds) == 0
        assert len(server.requests) == 10 and 2 <= server.max_in_flight <= 4
    rows = by_key(preds)
    assert len(rows) == 10 and all(p == "Answer: yes or no." for p, _, _ in rows.values())
