"""Every config of every folder loads with plain ``datasets``, whatever the folder holds.

``datasets`` reads a whole folder (or Hub repository) with one builder, picked from the data files
of the first config its README lists (load.py); a first config holding no image or one image made
it plain parquet and no config of the folder loaded. These build 0-, 1- and many-image configs in
every order into one folder, list them in every README order, and load each in a fresh process,
in memory and streaming, from the folder and from a loopback Hub; then ReadBench's configs built
from one-record sources (one page each); and ``mmlb build``'s last check, which asks ``datasets``
itself, so a ``datasets`` release that reads the folder otherwise fails the build, not its users.
"""
from __future__ import annotations

import csv
import itertools
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from test_layout import _images, _rows

from mmlbdata.core.store import ImageStore
from mmlbdata.dataset.build import store_config

ROOT = Path(__file__).resolve().parents[1]
# by name, the text-only config comes first and the one-image config second
MIX = {"a_text_8k": [[], []], "b_one_8k": [[0], []], "c_many_8k": [[1, 2], [3, 1, 4], [2]]}
EXPECTED = {config: [len(row) for row in rows] for config, rows in MIX.items()}

LOAD_ALL = """
import json, sys
import datasets
datasets.disable_progress_bars()
source, cache, configs = sys.argv[1], sys.argv[2], sys.argv[3:]
counts = {}
for config in configs:
    for streaming in (False, True):
        rows = datasets.load_dataset(source, config, split="test", streaming=streaming, cache_dir=f"{cache}/{config}")
        counts[f"{config} {'streaming' if streaming else 'in memory'}"] = [
            len([image.size for image in row["images"]]) for row in rows]  # decoded: every file is read
print(json.dumps(counts))
"""


def _loaded(source: str, configs: list[str], cache: Path, env: dict | None = None, hub=None, hf_home=None) -> dict:
    """Each config's image counts per row, in memory and streaming, from a fresh process."""
    if hub is not None:
        return json.loads(hub.run_client(LOAD_ALL, source, str(cache), *configs, hf_home=hf_home).splitlines()[-1])
    done = subprocess.run([sys.executable, "-c", LOAD_ALL, source, str(cache), *configs], capture_output=True,
                          text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def _expected(configs) -> dict:
    return {f"{c} {mode}": EXPECTED[c] for c in configs for mode in ("in memory", "streaming")}


def _reorder_readme(folder: Path, order: tuple[str, ...]) -> None:
    """The README's ``configs`` entries in ``order`` (a user's edit, another tool's rewrite)."""
    text = (folder / "README.md").read_text()
    _, front, body = text.split("---", 2)
    meta = yaml.safe_load(front)
    entries = {entry["config_name"]: entry for entry in meta["configs"]}
    meta["configs"] = [entries[name] for name in order]
    (folder / "README.md").write_text("---\n" + yaml.safe_dump(meta, sort_keys=False) + "---" + body)


def _repo_files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("order", list(itertools.permutations(MIX)), ids="-".join)
def test_zero_one_and_many_image_configs_load_in_any_build_and_readme_order(tmp_path, order):
    from loopback_hub import LoopbackHub

    from mmlbdata.dataset.hub import FolderUploader, push_folder

    refs = _images(ImageStore(tmp_path / "store"), 5)
    out = tmp_path / "mix"
    for config in order:  # built in this order, one at a time, as over days
        store_config(out, config, _rows(refs, MIX[config]), manifest={"family": "toy"})
    _reorder_readme(out, order)  # and listed in this order
    assert _loaded(str(out), list(MIX), tmp_path / "cache") == _expected(MIX)
    hub = FolderUploader(tmp_path / "hub")
    push_folder(out, "org/mix", uploader=hub, card=True)
    with LoopbackHub(repos={"org/mix": _repo_files(hub.repo_dir("org/mix"))}) as server:
        assert _loaded("org/mix", list(MIX), tmp_path / "hub-cache", hub=server, hf_home=tmp_path / "hf") \
            == _expected(MIX)


def _one_record_readbench_sources(root: Path, real_data: Path) -> dict[str, Path]:
    """ReadBench's release files (test_readbench's writers, in the Hub files' schemas), cut to
    one record each: every config built from them holds one row of one or a few pages."""
    import pyarrow.parquet as pq
    import test_readbench as trb

    raw = (real_data / "text" / "wikitext2_raw_wiki.test.raw").read_text(encoding="utf-8")
    wiki = [w for w in raw.split() if all(ord(c) < 256 for c in w)]
    trb.write_mmlu_pro(root / "mmlu_pro", wiki)
    trb.write_mmlu_redux(root / "mmlu_redux")
    trb.write_gpqa(root / "gpqa")
    trb.write_babilong(root / "babilong", wiki)
    trb.write_longbench(root / "longbench", wiki)
    for path in (root / "mmlu_pro" / "data" / "test-00000-of-00001.parquet",
                 root / "mmlu_redux" / "anatomy" / "test" / "0000.parquet"):
        pq.write_table(pq.read_table(path).slice(0, 1), path)
    task = root / "babilong" / "data" / "qa1"
    for path in task.glob("*.json"):
        text = path.read_text()
        path.write_text(json.dumps(json.loads(text)[:1]) if text.startswith("[") else text.splitlines()[0] + "\n")
    for length, words in (("1k", 700), ("2k", 1400)):
        row = {"input": trb.babilong_context(wiki, words, [50, 300, 600]), "question": "Where is Mary?",
               "target": "office"}
        (task / f"{length}.json").write_text(json.dumps([row]))
    longbench = root / "longbench" / "data" / "hotpotqa_e.jsonl"
    longbench.write_text(longbench.read_text().splitlines()[2] + "\n")  # 1,500 words: a LongBench bin
    with open(root / "gpqa" / "gpqa_diamond.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    with open(root / "gpqa" / "gpqa_diamond.csv", "w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows(rows[:2])
    return {key: root / key for key in ("mmlu_pro", "mmlu_redux", "gpqa", "babilong", "longbench")}


READBENCH_ONE_RECORD = [f"readbench_{name}{variant}" for variant in ("", "_150ppi") for name in (
    "mmlu_pro", "mmlu_redux", "gpqa", "babilong_qa1_0k", "babilong_qa1_1k", "babilong_qa1_2k", "babilong_qa1_4k",
    "babilong_qa1_8k", "longbench_hotpotqa_e")] + ["readbench_std_babilong_qa1_8k"]


def test_readbench_configs_built_from_one_record_sources_all_load(tmp_path, real_data, tokenizer_path):
    from mmlbdata.dataset.build import build_configs

    sources = _one_record_readbench_sources(tmp_path / "sources", real_data)
    out = tmp_path / "readbench"
    results = build_configs(READBENCH_ONE_RECORD, sources, out, limit=1, tokenizer=tokenizer_path,
                            store_root=tmp_path / "store", progress=False)
    assert [r.config for r in results if not r.ok] == [], [r.error for r in results if not r.ok]
    counts = _loaded(str(out), READBENCH_ONE_RECORD, tmp_path / "cache")
    assert len(counts) == 2 * len(READBENCH_ONE_RECORD) == 38
    for key, images in counts.items():
        assert len(images) == 1 and images[0] >= 1, key  # one row, its pages decoded
    single_page = {key.split()[0] for key, images in counts.items() if images == [1]}
    assert len(single_page) >= 8, single_page  # the draw datasets gave to parquet


def test_mmlb_build_ends_by_loading_every_config_of_the_folder(tmp_path, monkeypatch, capsys, coco_mini,
                                                               tokenizer_path):
    """The check asks the installed ``datasets``: made to read the folder as plain parquet (what a
    future release could do), the build fails naming each config and why; as it is, it passes."""
    import datasets.load

    from mmlbdata.cli import main

    command = ["build", "vh_single_8k", "--source", f"coco={coco_mini}", "--out", str(tmp_path / "out"),
               "--limit", "1", "--tokenizer", str(tokenizer_path), "--cache-dir", str(tmp_path / "cache"),
               "--no-progress"]
    assert main(command) == 0
    assert f"checked: the 1 config(s) of {tmp_path / 'out'} load with datasets" in capsys.readouterr().err
    monkeypatch.setattr(datasets.load, "infer_module_for_data_files_list", lambda *args, **kwargs: ("parquet", {}))
    assert main(command) == 1
    err = capsys.readouterr().err
    assert "1 of the 1 config(s)" in err and "do not load with datasets" in err
    assert "vh_single_8k: datasets' parquet builder: CastError" in err and "column names don't match" in err


def test_a_folder_whose_readme_predates_the_hint_is_mended_by_the_next_build(tmp_path, capsys):
    """A folder built before the hint (README entries name the metadata and partitions only):
    its first config had one image, so nothing loaded. The next build into it (any config) names
    the hint in every entry and writes it: every config loads."""
    refs = _images(ImageStore(tmp_path / "store"), 5)
    out = tmp_path / "old"
    for config in ("b_one_8k", "c_many_8k"):
        store_config(out, config, _rows(refs, MIX[config]), manifest={"family": "toy"})
    text = (out / "README.md").read_text()
    (out / "README.md").write_text(text.replace("    - imagefolder-hint/1.png\n    - imagefolder-hint/2.png\n", ""))
    shutil.rmtree(out / "imagefolder-hint")
    from mmlbdata.dataset.loadcheck import load_problems

    assert set(load_problems(out)) == {"b_one_8k", "c_many_8k"}  # as such a folder was
    from mmlbdata.cli import main

    assert main(["stats", str(out)]) == 0  # and says so, with the way out
    assert "written by an earlier mmlbdata (2 entries without imagefolder-hint/)" in capsys.readouterr().err
    # mmlb run reads the folder with datasets: it stops before any model, naming the mend
    assert main(["run", "--data", str(out), "--config", "c_many_8k", "--backend", "openai", "--model", "gpt-4o",
                 "--base-url", "http://127.0.0.1:9/v1", "--out", str(tmp_path / "p.jsonl")]) == 2
    assert f"`mmlb card {out}` rewrites it" in capsys.readouterr().err
    carded = shutil.copytree(out, tmp_path / "carded")  # the mend that message names
    assert main(["card", str(carded), "--benchmark", "mmlongbench", "--no-plot", "--no-progress"]) == 0 and load_problems(carded) == {}
    store_config(out, "a_text_8k", _rows(refs, MIX["a_text_8k"]), manifest={"family": "toy"})
    assert load_problems(out) == {}
    assert main(["stats", str(out)]) == 0 and "earlier mmlbdata" not in capsys.readouterr().err
    assert _loaded(str(out), list(MIX), tmp_path / "cache") == _expected(MIX)
