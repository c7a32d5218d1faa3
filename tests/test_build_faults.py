"""Builds under faults: concurrent builds of one config, a full disk, damaged shards, bad images,
too many workers. Real VH builds from coco_mini (one question: 6 rows)."""
from __future__ import annotations

import errno
import json
import logging
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq

from mmlbdata.dataset import build as build_module
from mmlbdata.core import locks
from mmlbdata.dataset.build import build_configs, cap_num_proc, config_lock_path
from mmlbdata.dataset.card import human_bytes, render_card
from mmlbdata.cli import main
from mmlbdata.core.report import source_label
from mmlbdata.dataset.writer import read_manifest

CONFIG = "vh_single_8k"


def _build(out, coco, tokenizer, **kwargs):
    return build_configs([CONFIG], {"coco": coco}, out, limit=1, tokenizer=tokenizer, progress=False,
                         store_root=Path(out).parent / "store", **kwargs)[0]


def _leftovers(out: Path) -> list[str]:
    """Lock files, staging folders and empty folders anywhere under ``out``."""
    found = []
    for root, dirs, files in os.walk(out):
        found += [os.path.join(root, f) for f in files if f.endswith(".lock")]
        found += [os.path.join(root, d) for d in dirs if d.endswith((".partial", ".old"))]
        if not dirs and not files:
            found.append(root)
    return found


def _files(out: Path) -> dict[str, bytes]:
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def test_success_leaves_no_lock_file_and_manifest_records_the_real_report(tmp_path, coco_mini, tokenizer_path):
    coco = tmp_path / "coco"
    shutil.copytree(coco_mini, coco)
    first = json.loads((coco / "annotations" / "instances_val2017.json").read_text())["images"][0]["file_name"]
    bad = coco / "val2017" / first
    bad.write_bytes(bad.read_bytes()[:2000])  # truncated: no end-of-image marker
    out = tmp_path / "out"
    result = _build(out, coco, tokenizer_path)
    assert result.ok, result.error
    report = read_manifest(out, CONFIG)["report"]
    assert report["num_skipped"] >= 1 and any(s["file"] == source_label(bad, {"coco": coco}) for s in report["skipped"])
    assert _leftovers(out) == []
    render_card(out, plot=False)
    body = (out / "README.md").read_text()
    assert f"`{CONFIG}`: {report['num_skipped']}." in body and "No source record was skipped" not in body
    stats = read_manifest(out, CONFIG)["stats"]  # on disk and decoded, side by side
    assert stats["image_bytes_decoded"] > stats["num_bytes"] > 0
    assert f"| {human_bytes(stats['num_bytes'])} | {human_bytes(stats['image_bytes_decoded'])} |" in body
    assert _leftovers(out) == []


def test_disk_full_removes_the_partial_config_and_says_which_and_why(tmp_path, coco_mini, tokenizer_path,
                                                                      monkeypatch, capsys):
    out = tmp_path / "out"
    good = _build(out, coco_mini, tokenizer_path)
    assert good.ok
    before = _files(out)

    def disk_full(self, *args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(pq.ParquetWriter, "write_table", disk_full)
    failed = _build(out, coco_mini, tokenizer_path)
    assert not failed.ok and CONFIG in failed.error and "no space left on device" in failed.error
    assert _files(out) == before  # previous build kept, and no staged image or metadata left
    assert _leftovers(out) == []
    # a first build that fails leaves nothing at all, and mmlb build exits non-zero
    fresh = tmp_path / "fresh"
    code = main(["build", CONFIG, "--source", f"coco={coco_mini}", "--out", str(fresh), "--limit", "1",
                 "--tokenizer", str(tokenizer_path), "--cache-dir", str(tmp_path / "cache"), "--no-progress"])
    captured = capsys.readouterr()
    assert code == 1 and f"FAILED: no space left on device while writing {CONFIG}" in captured.out
    assert "1 of 1 config(s) failed" in captured.err
    assert not fresh.exists()


def test_build_exits_non_zero_when_one_of_several_configs_fails(tmp_path, coco_mini, tokenizer_path,
                                                                  monkeypatch, capsys):
    real = build_module.build_config

    def failing_multi(name, *args, **kwargs):
        if name == "vh_multi_8k":
            return build_module.ConfigResult(name, False, error="RuntimeError: broken", status="failed")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(build_module, "build_config", failing_multi)
    code = main(["build", CONFIG, "vh_multi_8k", "--source", f"coco={coco_mini}", "--out", str(tmp_path / "o"),
                 "--limit", "1", "--tokenizer", str(tokenizer_path), "--no-progress"])
    assert code == 1 and "1 of 2 config(s) failed: vh_multi_8k" in capsys.readouterr().err
    assert (tmp_path / "o" / f"{CONFIG}.metadata.parquet").is_file()


def test_stats_and_card_name_a_damaged_shard_without_a_traceback(tmp_path, coco_mini, tokenizer_path, capsys):
    out = tmp_path / "out"
    assert _build(out, coco_mini, tokenizer_path).ok
    shard = out / f"{CONFIG}.metadata.parquet"
    shard.write_bytes(shard.read_bytes()[: shard.stat().st_size // 2])
    for command in (["stats", str(out)], ["card", str(out), "--no-plot"]):
        assert main(command) == 1
        err = capsys.readouterr().err
        assert str(shard) in err and "damaged parquet shard" in err and "Traceback" not in err


def _mmlb(out: Path, coco: Path, tokenizer: Path, seed: int, logs: Path) -> subprocess.Popen:
    command = [sys.executable, "-m", "mmlbdata.cli", "build", CONFIG, "--source", f"coco={coco}", "--out", str(out),
               "--limit", "5", "--seed", str(seed), "--shard-size", "1", "--layout", "embedded",
               "--tokenizer", str(tokenizer),
               "--cache-dir", str(logs / f"cache{seed}"), "--no-progress"]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    with open(logs / f"out{seed}", "w") as stdout, open(logs / f"err{seed}", "w") as stderr:
        return subprocess.Popen(command, stdout=stdout, stderr=stderr, text=True, env=env)


def _wait_for(condition, seconds: float = 180, every: float = 0.2) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(every)


def test_two_concurrent_builds_of_one_config_never_mix_shards(tmp_path, coco_mini, tokenizer_path):
    """Two real `mmlb build` processes (different seeds, one shard per row group) into one folder
    (embedded layout: several shards per config to mix; the files layout has one metadata file)."""
    references = {}
    for seed in (0, 1):
        # 5 questions: 30 rows, over 100 MB decoded, so two row groups and (shard size 1) two shards
        ref = build_configs([CONFIG], {"coco": coco_mini}, tmp_path / f"ref{seed}", limit=5, seed=seed,
                            tokenizer=tokenizer_path, progress=False, shard_bytes=1,
                            store_root=tmp_path / "store", layout="embedded")[0]
        assert ref.ok and ref.stats.num_shards > 1
        references[seed] = ref.stats.fingerprint
    assert references[0] != references[1]
    out = tmp_path / "out"
    out.mkdir()
    errors = [tmp_path / f"err{seed}" for seed in (0, 1)]
    with locks.hold(config_lock_path(out, CONFIG)):  # both start while the config is busy
        runs = [_mmlb(out, coco_mini, tokenizer_path, seed, tmp_path) for seed in (0, 1)]
        _wait_for(lambda: all("waiting: another build" in e.read_text() for e in errors)
                  or any(run.poll() is not None for run in runs))
    for run in runs:
        run.wait(timeout=300)
    outputs = [e.read_text() for e in errors]
    assert [run.returncode for run in runs] == [0, 0], outputs
    assert all("waiting: another build of vh_single_8k" in err for err in outputs)
    manifest = read_manifest(out, CONFIG)
    assert manifest["stats"]["fingerprint"] == references[manifest["seed"]]  # one build's shards, whole
    files = sorted((out / "data" / CONFIG).glob("*.parquet"))
    assert len(files) == manifest["stats"]["num_shards"]
    assert _leftovers(out) == []


def test_num_proc_is_capped_at_the_available_cpus(monkeypatch, caplog, tmp_path, coco_mini):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    seen = []
    monkeypatch.setattr(build_module, "build_config",
                        lambda name, *a, num_proc=1, **k: seen.append(num_proc) or
                        build_module.ConfigResult(name, True, status="built"))
    with caplog.at_level(logging.WARNING, logger="mmlbdata"):
        build_configs([CONFIG], {"coco": coco_mini}, tmp_path, num_proc=64)
    assert seen == [2] and cap_num_proc(1) == 1 and cap_num_proc(2) == 2
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == ["--num-proc 64 capped at 2: only 2 CPU(s) available to this process"]


def test_a_terminated_build_leaves_nothing_behind(tmp_path, coco_mini, tokenizer_path):
    """`kill` (or `timeout`) mid-write: the partial config, its lock and the new folder go."""
    import signal

    out = tmp_path / "out"
    slow = CONFIG  # its default size, 600 rows: the files layout's staging folder lives ~0.5 s
    run = subprocess.Popen([sys.executable, "-m", "mmlbdata.cli", "build", slow, "--source", f"coco={coco_mini}",
                            "--out", str(out), "--tokenizer", str(tokenizer_path), "--cache-dir",
                            str(tmp_path / "cache"), "--no-progress"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                           env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    # polled often: at every 0.2 s a loaded machine could miss the whole staging window
    _wait_for(lambda: (out / f".{slow}.partial").is_dir() or run.poll() is not None, every=0.005)
    run.send_signal(signal.SIGTERM)
    _, err = run.communicate(timeout=120)
    assert run.returncode == 128 + signal.SIGTERM and "Traceback" not in err, err
    assert not out.exists(), sorted(str(p.relative_to(out)) for p in out.rglob("*"))[:20]
