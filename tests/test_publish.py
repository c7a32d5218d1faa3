"""Publishing: cards, Hub upload (no network), harness exports, resumable full builds.

Acceptance of issue 7: (1) the card's YAML loads every config and its statistics equal those
recomputed from the parquet; (2) the lmms-eval task loads with ``datasets`` and gives the images in
prompt order, the VLMEvalKit TSV decodes to the same images and question; (3) a full build killed
midway and rerun equals an uninterrupted build, byte for byte.
"""
from __future__ import annotations

import ast
import base64
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import datasets
import pytest
import yaml
from PIL import Image

from mmlbdata.dataset.build import build_all, build_configs, completed_stats, build_parameters
from mmlbdata.dataset.card import (config_data_entry, config_image_dirs, format_stats, render_card, select_template,
                                   split_front_matter, with_image_folder_hint)
from mmlbdata.dataset.writer import IMAGE_FOLDER_HINT
from mmlbdata.cli import main
from mmlbdata.exports import iter_rows
from mmlbdata.dataset.hub import IMAGE_COMMIT_FILES, FolderUploader, HubUploader, push_folder
from mmlbdata.dataset.registry import resolve
from mmlbdata.dataset.stats import config_distribution
from mmlbdata.dataset.writer import read_manifest

CONFIGS = ["vh_multi_8k", "vh_single_16k", "vh_single_8k"]


@pytest.fixture(scope="module")
def built(tmp_path_factory, coco_mini, tokenizer_path) -> Path:
    """Three real VH configs from coco_mini (one question each), with a rendered card."""
    out = tmp_path_factory.mktemp("built")
    results = build_configs(CONFIGS, {"coco": coco_mini}, out, limit=1, store_root=out.parent / "store",
                            tokenizer=tokenizer_path, progress=False)
    assert all(r.ok for r in results), [r.error for r in results]
    render_card(out, repo_id="org/mmlb")
    return out


def _decoded(data: bytes) -> bytes:
    return Image.open(io.BytesIO(data)).convert("RGB").tobytes()


# -- 1. cards -------------------------------------------------------------------------------------
def _card_table(body: str) -> dict[str, list[str]]:
    rows = {}
    for line in body.splitlines():
        match = re.match(r"\| `([a-z0-9_]+)` \|(.*)\|$", line)
        if match:
            rows[match.group(1)] = [c.strip() for c in match.group(2).split("|")]
    return rows


def test_card_yaml_loads_every_config_and_stats_match_parquet(built):
    meta, body = split_front_matter((built / "README.md").read_text())
    assert meta["pretty_name"].startswith("MMLongBench") and meta["size_categories"] == ["n<1K"]
    assert "cc-by-4.0" in meta["license"] and meta["task_categories"]
    assert [c["config_name"] for c in meta["configs"]] == CONFIGS
    table = _card_table(body)
    for config in CONFIGS:
        ds = datasets.load_dataset(str(built), config, split="test")
        images = [len(r) for r in ds["images"]]
        tokens = ds["num_tokens"]
        # independent recount through datasets, then the card's rendering of the config's summary
        expected = {"rows": len(ds), "images": sum(images), "tokens_min": min(tokens), "tokens_max": max(tokens),
                    "tokens_mean": sum(tokens) / len(ds), "images_per_row": sum(images) / len(ds),
                    "fill_ratio": sum(t / n for t, n in zip(tokens, ds["length"])) / len(ds), "bytes": 0}
        stats = config_distribution(built, config).summary()
        assert {k: stats[k] for k in expected if k != "bytes"} == pytest.approx(
            {k: v for k, v in expected.items() if k != "bytes"})
        shown = format_stats(stats)
        dataset, length, metric, *numbers = table[config]
        assert (dataset, length, metric) == (config.rsplit("_", 1)[0], str(ds[0]["length"]), "`binary_acc`")
        assert numbers[:7] == [shown[k] for k in ("rows", "images", "images_per_row", "tokens_min",
                                                  "tokens_mean", "tokens_max", "fill_ratio")]
    info = {e["config_name"]: e for e in meta["dataset_info"]}
    assert info["vh_single_8k"]["splits"][0]["num_examples"] == 6
    assert (built / "stats.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and "](stats.png)" in body
    assert "## Known differences from the original release" in body and "Visual Haystacks" in body


def test_card_command_and_stats_plot(built, tmp_path, capsys):
    folder = tmp_path / "copy"
    shutil.copytree(built, folder)
    assert main(["card", str(folder), "--no-plot"]) == 0
    assert main(["stats", str(folder), "--plot", str(tmp_path / "p.png")]) == 0
    assert (tmp_path / "p.png").stat().st_size > 1000
    assert main(["card", str(folder), "--benchmark", "readbench"]) == 0  # forced template
    assert split_front_matter((folder / "README.md").read_text())[0]["pretty_name"].startswith("ReadBench")
    (tmp_path / "empty").mkdir()  # (a folder that does not exist is named as such: test_cli.py)
    assert main(["card", str(tmp_path / "empty")]) == 1
    assert "no built config" in capsys.readouterr().err


def test_a_new_benchmark_only_needs_a_template_file(built, tmp_path):
    cards = tmp_path / "cards"
    cards.mkdir()
    shutil.copy(Path(__file__).resolve().parents[1] / "mmlbdata" / "dataset" / "cards" / "_base.md.jinja", cards)
    (cards / "toy.md.jinja").write_text(
        "---\nbenchmark: Toy\npretty_name: Toy bench\nfamilies: [vh]\nlicenses: {coco: cc-by-4.0}\n"
        "citations: []\n---\n{% extends \"_base.md.jinja\" %}\n{% block measures %}Toy things.{% endblock %}\n")
    folder = tmp_path / "copy"
    shutil.copytree(built, folder)
    render_card(folder, templates_dir=cards, plot=False)
    meta, body = split_front_matter((folder / "README.md").read_text())
    assert meta["pretty_name"] == "Toy bench" and "Toy things." in body and "`vh_single_16k`" in body
    with pytest.raises(LookupError, match="no template covers"):
        select_template({"vh", "unknown_family"})


# -- 2. upload ------------------------------------------------------------------------------------
def _datasets_card_update(remote_dir: Path, config: str, folder: Path) -> dict:
    """What ``Dataset.push_to_hub`` itself would write into the README for ``config``."""
    from datasets.arrow_dataset import _get_updated_dataset_card
    from datasets.splits import SplitInfo
    from fsspec.implementations.dirfs import DirFileSystem
    from fsspec.implementations.local import LocalFileSystem

    from mmlbdata.dataset.card import config_features

    stats = config_distribution(folder, config).summary()
    card, _ = _get_updated_dataset_card(
        DirFileSystem(str(remote_dir), LocalFileSystem()), config,
        [SplitInfo(name="test", num_bytes=stats["bytes"], num_examples=stats["rows"])],
        config_features(folder, config), f"data/{config}", None, [stats["bytes"]], [0], False)
    return card.data.to_dict()


def _entries(meta: dict, key: str) -> dict:
    value = meta[key]
    return {e["config_name"]: e for e in (value if isinstance(value, list) else [value])}


def test_push_sends_shards_manifests_then_card_and_resumes(built, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_SENTINELtoken")
    hub = FolderUploader(tmp_path / "hub")
    remote = hub.repo_dir("org/mmlb", "v1")
    # the Hub already holds a config built elsewhere: it must stay listed
    remote.mkdir(parents=True)
    shutil.copy(built / "vh_single_8k.metadata.parquet", remote / "other_8k.metadata.parquet")
    other = {"config_name": "other_8k", "data_files": [{"split": "test", "path": ["other_8k.metadata.parquet",
                                                                                  "images/vh/**"]}],
             "metadata_filenames": ["other_8k.metadata.parquet"]}
    (remote / "README.md").write_text(f"---\nconfigs:\n- {json.dumps(other)}\n---\n\nold body\n")
    before = tmp_path / "before"
    shutil.copytree(remote, before)
    plan = push_folder(built, "org/mmlb", revision="v1", uploader=hub)
    assert plan.configs == CONFIGS and plan.skipped == []
    config_commits = [c for c in hub.commits if c["message"].startswith("Upload config")]
    assert [c["message"].split(" (")[0] for c in config_commits] == [f"Upload config {c}" for c in CONFIGS]
    assert hub.commits[-1]["message"] == "Update dataset card"
    assert config_commits[0]["add"] == ["manifests/vh_multi_8k.json", "vh_multi_8k.metadata.parquet"]
    # each image once for the whole repo (configs share them), each config's images before its metadata
    images = [p for c in hub.commits for p in c["add"] if p.startswith("images/")]
    assert sorted(images) == sorted(p.relative_to(built).as_posix() for p in (built / "images").rglob("*.jpg"))
    assert len(images) == len(set(images)) and all(len(c["add"]) <= IMAGE_COMMIT_FILES for c in hub.commits)
    assert hub.commits[0]["add"] == list(IMAGE_FOLDER_HINT)  # what every config's data files name, first
    assert hub.commits.index(config_commits[0]) > 1 and hub.commits[1]["message"].startswith("Upload images of vh_multi_8k")
    assert hub.commits[-1]["add"] == ["README.md", "stats.png"] and all(c["revision"] == "v1" for c in hub.commits)
    sent = split_front_matter(plan.readme)[0]
    assert set(_entries(sent, "configs")) == {"other_8k", *CONFIGS}
    assert with_image_folder_hint(other) in sent["configs"]  # a config pushed from elsewhere names the hint too
    for config in CONFIGS:  # dataset_info identical to datasets' own card update logic
        expected = _datasets_card_update(before, config, built)
        assert _entries(sent, "dataset_info")[config] == _entries(expected, "dataset_info")[config]
        partitions = config_image_dirs(built, config)  # the image partitions its rows use
        assert partitions and all(p.startswith("images/vh/") for p in partitions)
        assert _entries(sent, "configs")[config] == config_data_entry(config, partitions)
    assert "MMLongBench" in plan.readme and "old body" not in plan.readme
    for config in CONFIGS:
        local = datasets.load_dataset(str(built), config, split="test").remove_columns("images")
        pushed = datasets.load_dataset(str(remote), config, split="test").remove_columns("images")
        assert pushed.to_list() == local.to_list()
    for path in remote.rglob("*"):
        assert not path.is_file() or b"SENTINEL" not in path.read_bytes()
    # rerun: everything already there with the same fingerprint -> nothing sent
    hub.commits.clear()
    again = push_folder(built, "org/mmlb", revision="v1", uploader=hub)
    assert again.skipped == CONFIGS and again.configs == [] and hub.commits == []


def test_push_resends_a_rebuilt_config_and_deletes_its_old_shards(built, tmp_path, coco_mini, tokenizer_path):
    folder = tmp_path / "copy"
    shutil.copytree(built, folder)
    hub = FolderUploader(tmp_path / "hub")
    push_folder(folder, "org/mmlb", uploader=hub)
    hub.commits.clear()
    # an earlier build on the Hub was in the embedded layout; this one is rebuilt differently
    stale = hub.repo_dir("org/mmlb") / "data" / "vh_single_8k" / "test-00001-of-00002.parquet"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"old")
    before = {c: read_manifest(folder, c)["stats"]["fingerprint"] for c in CONFIGS}
    build_configs(["vh_single_8k"], {"coco": coco_mini}, folder, limit=2, store_root=tmp_path / "store",
                  tokenizer=tokenizer_path, progress=False)
    plan = push_folder(folder, "org/mmlb", uploader=hub)
    # the configs sharing images with the rebuilt one have them in new partitions: they go too
    changed = [c for c in CONFIGS if read_manifest(folder, c)["stats"]["fingerprint"] != before[c]]
    assert "vh_single_8k" in changed and plan.configs == changed
    assert plan.skipped == [c for c in CONFIGS if c not in changed]
    config_commit = next(c for c in hub.commits if c["message"].startswith("Upload config vh_single_8k"))
    assert config_commit["delete"] == ["data/vh_single_8k/test-00001-of-00002.parquet"] and not stale.exists()
    assert config_commit["add"] == ["manifests/vh_single_8k.json", "vh_single_8k.metadata.parquet"]
    ds = datasets.load_dataset(str(hub.repo_dir("org/mmlb")), "vh_single_8k", split="test")
    assert ds.num_rows == 12
    with pytest.raises(ValueError, match="shard-size"):
        push_folder(folder, "org/mmlb", uploader=hub, max_shard_size="500MB")


def test_push_of_some_configs_lists_only_what_the_repo_holds(built, tmp_path):
    hub = FolderUploader(tmp_path / "hub")
    plan = push_folder(built, "org/mmlb", configs=["vh_single_8k"], uploader=hub)
    assert [c["config_name"] for c in split_front_matter(plan.readme)[0]["configs"]] == ["vh_single_8k"]
    plan = push_folder(built, "org/mmlb", configs=["vh_multi_8k"], uploader=hub)
    assert [c["config_name"] for c in split_front_matter(plan.readme)[0]["configs"]] == \
        ["vh_multi_8k", "vh_single_8k"]
    assert datasets.load_dataset(str(hub.repo_dir("org/mmlb")), "vh_multi_8k", split="test").num_rows == 3


def test_hub_uploader_builds_the_commit_without_a_token(tmp_path):
    calls = []

    class FakeApi:
        def create_commit(self, repo_id, **kwargs):
            calls.append((repo_id, kwargs))

    uploader = HubUploader.__new__(HubUploader)
    uploader.api = FakeApi()
    (tmp_path / "a.parquet").write_bytes(b"x")
    uploader.commit("org/mmlb", add={"data/c/a.parquet": tmp_path / "a.parquet", "README.md": b"---\n"},
                    delete=["data/c/old.parquet"], message="m", revision="v1", num_threads=3)
    repo, kwargs = calls[0]
    ops = kwargs["operations"]
    assert repo == "org/mmlb" and kwargs["repo_type"] == "dataset" and kwargs["revision"] == "v1"
    assert [type(o).__name__ for o in ops] == ["CommitOperationAdd", "CommitOperationAdd", "CommitOperationDelete"]
    assert [o.path_in_repo for o in ops] == ["README.md", "data/c/a.parquet", "data/c/old.parquet"]
    assert "token" not in kwargs


# -- 3. exports -----------------------------------------------------------------------------------
def test_lmms_eval_task_loads_and_gives_images_in_prompt_order(built, tmp_path, monkeypatch):
    from mmlbdata.exports import lmms_eval_hooks
    from tests.lmms_eval_tasks import load_task_yaml

    assert main(["export", str(built), "--format", "lmms-eval", "--out", str(tmp_path)]) == 0
    task_dir = tmp_path / "mmlb_vh"
    group = yaml.safe_load((task_dir / "mmlb_vh.yaml").read_text())
    assert group["task"] == [f"mmlb_{c}" for c in CONFIGS]
    task = load_task_yaml(task_dir / "mmlb_vh_multi_8k.yaml")
    assert task["task"] == "mmlb_vh_multi_8k" and task["output_type"] == "generate_until"
    ds = datasets.load_dataset(task["dataset_path"], task["dataset_name"], split=task["test_split"])
    raw = next(iter_rows(built, "vh_multi_8k"))
    doc = ds[0]
    visuals = task["doc_to_visual"](doc)
    assert [v.tobytes() for v in visuals] == [_decoded(i["bytes"]) for i in raw["images"]]
    assert task["doc_to_text"](doc) == raw["prompt"]
    kwargs = {"image_token": "<|image|>", "pre_prompt": "P:", "post_prompt": ""}
    assert task["doc_to_text"](doc, kwargs) == "P:" + raw["prompt"].replace("<image>", "<|image|>")
    content = lmms_eval_hooks.doc_to_messages(doc)[0]["content"]
    assert [c["type"] for c in content].count("image") == len(visuals)
    rebuilt = "".join(c["text"] if c["type"] == "text" else "<image>" for c in content)
    assert rebuilt == raw["prompt"]
    assert [c["url"].tobytes() for c in content if c["type"] == "image"] == [v.tobytes() for v in visuals]

    # process_results goes through the evaluator's registry by the row's metric name: the real one
    right = task["process_results"](doc, [f"Answer: {doc['answers'][0]}"])["mmlb_score"]
    wrong_answer = "No" if doc["answers"][0] == "Yes" else "Yes"
    wrong = task["process_results"](doc, [f"Answer: {wrong_answer}"])["mmlb_score"]
    assert (right["score"], wrong["score"], right["metric"]) == (1.0, 0.0, "binary_acc")
    assert task["metric_list"][0]["aggregation"]([right, wrong, right, right]) == 0.75
    # ... and a stand-in, to check it is looked up by name
    import mmlbdata.evaluation.metrics as registry

    class Exact:
        def score(self, prediction, example):
            return type("R", (), {"score": float(prediction.strip() == example["answers"][0]), "parsed": prediction,
                                  "extra": {}})()

        def aggregate(self, results, examples):
            return {"score": sum(r.score for r in results) / len(results)}

    monkeypatch.setattr(registry, "get_metric", lambda name, **options: Exact() if name == "binary_acc" else None)
    good = task["process_results"](doc, [doc["answers"][0]])
    bad = task["process_results"](doc, ["Maybe"])
    assert good["mmlb_score"]["score"] == 1.0 and bad["mmlb_score"]["score"] == 0.0
    assert "images" not in good["mmlb_score"]["example"]
    assert task["metric_list"][0]["aggregation"]([good["mmlb_score"], bad["mmlb_score"]]) == 0.5
    monkeypatch.undo()
    with pytest.raises(lmms_eval_hooks.MetricUnavailableError, match="not in mmlbdata's registry"):
        task["process_results"]({**doc, "metric": "no_such_metric"}, ["Yes"])


def test_vlmevalkit_launcher_says_what_is_wrong(tmp_path, capsys):
    from mmlbdata.exports.vlmevalkit_dataset import main as launch

    assert launch([]) == 2
    assert capsys.readouterr().err.startswith("usage: python -m mmlbdata.exports.vlmevalkit_dataset")
    missing = str(tmp_path / "VLMEvalKit" / "run.py")
    assert launch([missing, "--data", "vh_single_8k"]) == 2
    assert capsys.readouterr().err.startswith(f"error: {missing}: no such file")


def test_vlmevalkit_tsv_decodes_to_the_same_images_and_question(built, tmp_path):
    import pandas as pd

    assert main(["export", str(built), "--format", "vlmevalkit", "--out", str(tmp_path / "b64"),
                 "--config", "vh_single_8k", "--images", "base64"]) == 0
    assert main(["export", str(built), "--format", "vlmevalkit", "--out", str(tmp_path / "paths"),
                 "--config", "vh_single_8k", "--images", "path"]) == 0
    raw = list(iter_rows(built, "vh_single_8k"))
    table = pd.read_csv(tmp_path / "b64" / "vh_single_8k.tsv", sep="\t")
    paths = pd.read_csv(tmp_path / "paths" / "vh_single_8k.tsv", sep="\t")
    assert list(table.columns[:6]) == ["index", "image", "image_path", "question", "answer", "category"]
    assert list(paths.columns[:5]) == ["index", "image_path", "question", "answer", "category"]
    assert list(table["index"]) == list(range(len(raw)))
    for (_, line), (_, pline), row in zip(table.iterrows(), paths.iterrows(), raw):
        cells = ast.literal_eval(line["image"]) if line["image"].startswith("[") else [line["image"]]
        assert [base64.b64decode(c) for c in cells] == [i["bytes"] for i in row["images"]]
        names = ast.literal_eval(line["image_path"])
        assert len(set(names)) == len({i["bytes"] for i in row["images"]}) and "/" not in "".join(names)
        files = ast.literal_eval(pline["image_path"])
        assert [(tmp_path / "paths" / f).read_bytes() for f in files] == [i["bytes"] for i in row["images"]]
        assert line["question"] == row["prompt"] and line["question"].count("<image>") == len(cells)
        assert (line["answer"], line["category"], json.loads(line["answers"])) == \
            (row["answers"][0], "vh_single", row["answers"])


def test_mmlongbench_release_layout(built, tmp_path):
    assert main(["export", str(built), "--format", "mmlongbench", "--out", str(tmp_path)]) == 0
    path = tmp_path / "mmlb_data" / "NIAH" / "vh_single_test_1000_K16_dep6.jsonl"  # generate_configs.py's name
    records = [json.loads(line) for line in path.read_text().splitlines()]
    raw = list(iter_rows(built, "vh_single_16k"))
    assert len(records) == len(raw)
    for record, row in zip(records, raw):
        assert record["id"] == row["id"] and record["answer"] == row["answers"][0]
        assert [(tmp_path / "mmlb_image" / p).read_bytes() for p in record["ctxs"]] == [i["bytes"] for i in row["images"]]
        assert record["question"] == row["question"] and json.loads(record["meta"]) == json.loads(row["meta"])


# -- 4. full builds -------------------------------------------------------------------------------
ALL_PATTERNS = ["vh_*_8k", "vh_single_16k", "vh_multi_16k"]


def _tree(folder: Path) -> dict[str, bytes]:
    """Every file of a built folder, byte for byte (manifests hold no wall-clock time)."""
    return {path.relative_to(folder).as_posix(): path.read_bytes()
            for path in sorted(folder.rglob("*")) if path.is_file() and not path.name.endswith(".lock")}


def _build_command(sources: Path, out: Path, tokenizer: Path) -> list[str]:
    return [sys.executable, "-m", "mmlbdata.cli", "build", "--all", "--benchmark", "mmlongbench",
            "--sources-dir", str(sources), "--out", str(out), "--limit", "2", "--no-progress",
            "--tokenizer", str(tokenizer), "--cache-dir", str(out.parent / f"{out.name}-cache"), *ALL_PATTERNS]


def test_full_build_killed_midway_then_rerun_equals_uninterrupted(tmp_path, coco_mini, tokenizer_path):
    sources = tmp_path / "sources"
    sources.mkdir()
    (sources / "coco").symlink_to(coco_mini)
    whole, resumed = tmp_path / "whole", tmp_path / "resumed"
    run = subprocess.run(_build_command(sources, whole, tokenizer_path), capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert re.search(r"total: 4/4 configs\s+36\s", run.stdout)

    child = subprocess.Popen(_build_command(sources, resumed, tokenizer_path), stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 60
    while not list((resumed / "manifests").glob("*.json")) and time.monotonic() < deadline:
        time.sleep(0.02)
    os.killpg(child.pid, signal.SIGKILL)
    child.wait()
    done = len(list((resumed / "manifests").glob("*.json")))
    assert 1 <= done < 4, "the kill should land between the first and the last config"
    rerun = subprocess.run(_build_command(sources, resumed, tokenizer_path), capture_output=True, text=True)
    assert rerun.returncode == 0, rerun.stderr
    assert rerun.stdout.count(" kept ") >= done
    assert _tree(resumed) == _tree(whole)


def test_resume_rebuilds_partial_stale_or_damaged_configs(tmp_path, coco_mini, tokenizer_path):
    kwargs = dict(limit=1, store_root=tmp_path / "store", tokenizer=tokenizer_path, progress=False)
    sources = {"coco": coco_mini}
    names = ["vh_single_8k", "vh_multi_8k"]
    first = build_all(names, sources, tmp_path / "o", **kwargs)
    assert [r.status for r in first] == ["built", "built"]
    assert [r.status for r in build_all(names, sources, tmp_path / "o", **kwargs)] == ["kept", "kept"]
    # different parameters, a missing shard, a leftover staging folder: rebuilt
    entry = resolve("vh_single_8k")
    assert completed_stats(tmp_path / "o", "vh_single_8k",
                           build_parameters(entry, sources, limit=2)) is None
    (tmp_path / "o" / "vh_multi_8k.metadata.parquet").unlink()
    (tmp_path / "o" / ".vh_multi_8k.partial").mkdir()
    (tmp_path / "o" / ".vh_multi_8k.partial" / "vh_multi_8k.metadata.parquet").write_bytes(b"half")
    again = build_all(names + ["vh_single_16k"], {**sources}, tmp_path / "o", **{**kwargs, "limit": 1})
    assert [r.status for r in again] == ["kept", "built", "built"]
    assert not (tmp_path / "o" / ".vh_multi_8k.partial").exists()
    missing = build_all(["vh_single_8k"], {}, tmp_path / "o", **kwargs)
    assert missing[0].status == "missing sources" and "coco" in missing[0].error


@pytest.mark.parametrize("command", [["card"], ["export"], ["build", "--all"], ["push"]])
def test_help(command, capsys):
    with pytest.raises(SystemExit) as info:
        main([*command, "--help"])
    assert info.value.code == 0 and "usage: mmlb" in capsys.readouterr().out


def test_build_without_configs_or_all_is_a_usage_error(tmp_path, capsys):
    from mmlbdata.cli.build import parse_size

    assert main(["build", "--out", str(tmp_path)]) == 2
    assert "--all" in capsys.readouterr().err
    assert main(["build", "--all", "--benchmark", "nope", "--out", str(tmp_path)]) == 2
    assert "unknown benchmark 'nope'" in capsys.readouterr().err
    assert (parse_size("500MB"), parse_size("1.5GB"), parse_size("2048")) == (500 * 10**6, 15 * 10**8, 2048)


def test_mmlongbench_layout_of_document_pages(tmp_path):
    """Document-QA rows: page_list files named <doc_id>/page<N>, as the release's loader parses;
    the bare question (the loader adds "Based on Document ..."), the release's answer_format names."""
    from mmlbdata.core.schema import make_example
    from mmlbdata.official.mmlongbench_prompts import DOC_QUESTION, TEMPLATES
    from mmlbdata.core.store import ImageStore
    from mmlbdata.dataset.build import store_config

    store = ImageStore(tmp_path / "store")
    refs = []
    for shade in (10, 200):
        buffer = io.BytesIO()
        Image.new("RGB", (56, 28), (shade, shade, shade)).save(buffer, format="PNG")
        refs.append(store.put_bytes(buffer.getvalue(), "png"))
    meta = {"pages": [["report.pdf", 3], ["report.pdf", 4]], "doc_id": "report.pdf", "answer_format": "Str",
            "raw": {"question": "What is it?"}}
    question = DOC_QUESTION.format(doc_id="report.pdf") + "What is it?"
    context = "Document report.pdf (page 3): <image>\n\nDocument report.pdf (page 4): <image>"
    row = make_example(id="q1", dataset="mmlongdoc", length=8192, num_tokens=100,
                       prompt=TEMPLATES["docqa"].format(context=context, question=question),
                       images=refs, question=question, answers=["grey"], metric="docqa", meta=meta)
    store_config(tmp_path / "built", "mmlongdoc_8k", [row], manifest={"family": "docvqa", "dataset": "mmlongdoc",
                                                                      "length": 8192})
    assert main(["export", str(tmp_path / "built"), "--format", "mmlongbench", "--out", str(tmp_path / "rel")]) == 0
    record = json.loads((tmp_path / "rel" / "mmlb_data" / "documentQA" / "mmlongdoc_K8.jsonl").read_text())
    assert (record["question"], record["doc_name"], record["answer_format"]) == ("What is it?", "report.pdf", "String")
    parsed = [(p.split("/")[-2], p.split("page")[-1].split(".")[0]) for p in record["page_list"]]
    assert parsed == [("report.pdf", "3"), ("report.pdf", "4")]
    assert [(tmp_path / "rel" / "mmlb_image" / p).read_bytes() for p in record["page_list"]] == \
        [r.read_bytes() for r in refs]


def test_every_registered_family_has_exactly_one_card_template():
    from mmlbdata.dataset.card import benchmark_families
    from mmlbdata.dataset.registry import families

    covering = {}
    for benchmark, names in benchmark_families().items():
        for family in names:
            covering.setdefault(family, []).append(benchmark)
    assert {f: covering.get(f, []) for f in families() if len(covering.get(f, [])) != 1} == {}
    assert set(benchmark_families()) == {"mmlongbench", "mmneedle", "mmlongbench_doc", "readbench", "longvideobench",
                                         "memlens"}


def test_build_all_script_builds_then_writes_the_card(tmp_path, coco_mini, tokenizer_path):
    mmlb = Path(sys.executable).with_name("mmlb")
    if not mmlb.exists():
        pytest.skip("the mmlb console script is not installed beside this interpreter")
    (tmp_path / "sources").mkdir()
    (tmp_path / "sources" / "coco").symlink_to(coco_mini)
    script = Path(__file__).resolve().parents[1] / "scripts" / "build_all.sh"
    run = subprocess.run([str(script), "mmlongbench", str(tmp_path / "sources"), str(tmp_path / "out"),
                          "--limit", "1", "--tokenizer", str(tokenizer_path), "--cache-dir", str(tmp_path / "c"),
                          "vh_single_8k"], capture_output=True, text=True, env={**os.environ, "MMLB": str(mmlb)})
    assert run.returncode == 0, run.stderr
    assert "total: 1/1 configs" in run.stdout and (tmp_path / "out" / "stats.png").is_file()
    assert "## Known differences" in (tmp_path / "out" / "README.md").read_text()
