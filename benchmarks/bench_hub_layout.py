"""Issue 31's acceptance figures: the files layout as a Hub user meets it (plain ``datasets``
against the loopback Hub of tests/loopback_hub.py, every load in a fresh process and HF_HOME).

    python -m benchmarks.bench_hub_layout [--work DIR] [--vh-images 1500] [--vh-questions 2]
                                          [--plain-filter-rows 4] [--skip-stream] [--skip-idioms]

1. **download**: one repository holding mmlongdoc_8k + mmlongdoc_128k + longdocurl_8k +
   longdocurl_128k + vh_single_8k + vh_single_32k, built from the shared samples (MMLB_TEST_DATA,
   else ../shared/data: 8 MMLongBench-Doc PDFs, LongDocURL's sample pages, COCO mini), pushed
   (FolderUploader) and served; per config an in-memory ``load_dataset(repo, config)``: bytes the
   server sent, against 1.25 x the distinct image bytes its rows use + its metadata file. Beside
   it, the ratio the previous layout (``images/<family>/**``) gives: every image of the family.
   At the published size: a config's partitions hold exactly its images (partitions.py), so its
   download is its images + metadata whatever the size; the old layout's ratio is the family's
   images over the config's, from ``bench_layout.extrapolate`` (Table 3 images per row per length).
   And the same folder pushed with ``--branch-per family`` (card on main, each family on its
   branch): the same per-config bytes through one name.
2. **stream**: ``vh_single_128k`` (a generated COCO-size source, ``bench_layout.make_source``) and
   ``mmlongdoc_128k`` (the shared PDFs), files and embedded layouts, each pushed and served; a
   fresh process streams the first N rows (N = 1, 10, all) with images decoded: peak RSS and
   bytes sent, files against embedded.
3. **idioms**: in memory from a local folder of ``vh_single_128k``:
   ``ds.filter(lambda r: r["num_tokens"] > 0)`` (on the first ``--plain-filter-rows`` rows: it
   decodes every image of a 1,000-row batch), the same with ``input_columns=["num_tokens"]``, and
   ``ds.map`` over ``num_tokens`` both ways: peak RSS.
4. **published set**: files per repository, entries per folder and the largest file, from
   ``bench_layout.extrapolate`` (MMLongBench 8K..128K at Table 2's rows), scaled to 256K/512K;
   then one repository with a branch per family or per dataset (``mmlb push --branch-per``):
   files in each branch's tree.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from benchmarks._util import table, test_data

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the loopback Hub of the tests

DOWNLOAD_CONFIGS = ["mmlongdoc_8k", "mmlongdoc_128k", "longdocurl_8k", "longdocurl_128k", "vh_single_8k",
                    "vh_single_32k"]
STREAM_NS = (1, 10, None)  # None: every row
CHILD_SECONDS = 900
HUB_FILES, FOLDER_ENTRIES, FILE_BYTES = 100_000, 10_000, 5 * 10**9  # Hub docs, "Repository limitations"


# -- the loopback Hub, counting what it sends -------------------------------------------------------
def counting_hub(repos: dict[str, dict[str, bytes]], **branches_and_tags):
    from loopback_hub import LoopbackHub

    class CountingHub(LoopbackHub):
        sent = 0
        lock = threading.Lock()

        def _send(self, h, status, content, headers, body):  # noqa: D401 - LoopbackHub's hook
            try:
                LoopbackHub._send(h, status, content, headers, body)
            except BrokenPipeError:  # a reader that stopped after N rows dropped its read-ahead
                return
            if body:  # counted once delivered
                with self.lock:
                    CountingHub.sent += len(content)

    return CountingHub(repos=repos, **branches_and_tags)


def repo_files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def pushed(folder: Path, work: Path, repo_id: str) -> dict[str, bytes]:
    from mmlbdata.dataset.hub import FolderUploader, push_folder

    hub = FolderUploader(work / f"hub-{repo_id.replace('/', '-')}")
    push_folder(folder, repo_id, uploader=hub, card=True)
    return repo_files(hub.repo_dir(repo_id))


def pushed_to_branches(folder: Path, work: Path, repo_id: str, per: str = "family") -> dict:
    """``mmlb push --branch-per``: the LoopbackHub arguments serving main (the card) and each branch."""
    from mmlbdata.dataset.hub import FolderUploader, push_folder

    hub = FolderUploader(work / f"hub-{repo_id.replace('/', '-')}-per-{per}")
    plan = push_folder(folder, repo_id, uploader=hub, card=True, branch_per=per)
    return {"repos": {repo_id: repo_files(hub.repo_dir(repo_id))},
            "branches": {repo_id: {b: repo_files(hub.repo_dir(repo_id, b)) for b in sorted(plan.branches)}}}


def old_layout(files: dict[str, bytes]) -> dict[str, bytes]:
    """The same repository as the previous layout published it: each config's data files
    ``images/<family>/**`` (what ``datasets`` then downloads: every image of the family)."""
    from mmlbdata.dataset.card import join_front_matter, split_front_matter

    meta, body = split_front_matter(files["README.md"].decode())
    for entry in meta["configs"]:
        for split in entry["data_files"]:
            partitions = [p for p in split["path"][1:] if p.endswith("/**")]
            split["path"] = [p for p in split["path"] if p not in partitions] + \
                sorted({"/".join(p.split("/")[:2]) + "/**" for p in partitions})
    return {**files, "README.md": join_front_matter(meta, body).encode()}


# -- children: one load each, in a fresh process ----------------------------------------------------
def _peak_mb() -> float:
    with open("/proc/self/status") as handle:
        return next(int(line.split()[1]) / 1024 for line in handle if line.startswith("VmHWM:"))


def child(mode: str, source: str, config: str, arg: str) -> dict:
    import datasets

    datasets.disable_progress_bars()
    if mode == "memory":
        ds = datasets.load_dataset(source, config, split="test")
        return {"rows": len(ds), "peak_mb": _peak_mb()}
    if mode == "stream":
        wanted = int(arg) if arg != "all" else None
        rows = images = 0
        for row in datasets.load_dataset(source, config, split="test", streaming=True):
            images += len(row["images"])  # decoded by datasets, as a user gets them
            rows += 1
            if rows == wanted:
                break
        return {"rows": rows, "images": images, "peak_mb": _peak_mb()}
    ds = datasets.load_dataset(source, config, split="test")
    if mode == "filter_plain":
        kept = ds.select(range(min(int(arg), len(ds)))).filter(lambda r: r["num_tokens"] > 0).num_rows
    elif mode == "filter_bounded":
        kept = ds.filter(lambda n: n > 0, input_columns=["num_tokens"]).num_rows
    elif mode == "map_plain":
        kept = len(ds.map(lambda r: {"double": r["num_tokens"] * 2})["double"])
    elif mode == "map_bounded":
        kept = len(ds.map(lambda n: {"double": n * 2}, input_columns=["num_tokens"])["double"])
    else:
        raise SystemExit(f"unknown mode {mode}")
    return {"rows": kept, "peak_mb": _peak_mb()}


def run_child(mode: str, source: str, config: str, arg: str = "", env: dict | None = None) -> dict:
    home = tempfile.mkdtemp(prefix="hf-", dir=os.environ.get("BENCH_TMP"))
    try:
        done = subprocess.run([sys.executable, "-m", "benchmarks.bench_hub_layout", "--child", mode, source, config,
                               arg], capture_output=True, text=True, cwd=ROOT,
                              env={**os.environ, "HF_HOME": home, "HF_DATASETS_CACHE": f"{home}/datasets",
                                   **(env or {})}, timeout=CHILD_SECONDS)
    except subprocess.TimeoutExpired:
        return {"error": f"over {CHILD_SECONDS} s"}
    finally:
        shutil.rmtree(home, ignore_errors=True)
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or ["?"])[-1][:100]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def hub_child(hub, mode: str, repo: str, config: str, arg: str = "") -> tuple[dict, int]:
    """A child against the served repo; also the bytes the server sent it."""
    before = type(hub).sent
    got = run_child(mode, repo, config, arg, {"HF_ENDPOINT": hub.endpoint, "HF_HUB_OFFLINE": "0",
                                              "HF_DATASETS_OFFLINE": "0"})
    return got, type(hub).sent - before


# -- 1. per-config downloads ------------------------------------------------------------------------
def build(configs: list[str], sources: dict, out: Path, store: Path, layout: str = "files", **kwargs) -> None:
    from mmlbdata.dataset.build import build_all

    data = test_data()
    for config in configs:  # resumable: a kept --work folder is not rebuilt
        [result] = build_all([config], sources, out, tokenizer=data / "llama2" / "tokenizer.model",
                             store_root=store, progress=False, layout=layout, **kwargs)
        if not result.ok:
            sys.exit(f"{config} ({layout}): {result.error}")


def config_usage(folder: Path, config: str) -> tuple[int, int, int]:
    """(distinct image bytes its rows use, its metadata bytes, its family's image bytes)."""
    from mmlbdata.dataset.stats import image_paths
    from mmlbdata.dataset.writer import metadata_path

    names = image_paths(metadata_path(folder, config))
    family = {name.split("/")[1] for name in names}
    images = sum((folder / name).stat().st_size for name in names)
    family_bytes = sum(p.stat().st_size for fam in family for p in (folder / "images" / fam).rglob("*") if p.is_file())
    return images, metadata_path(folder, config).stat().st_size, family_bytes


def downloads(work: Path) -> list[dict]:
    data = test_data()
    sources = {"coco": data / "coco_mini", "longdocurl": data / "longdocurl_sample",
               "mmlongbench_doc": data / "mmlongbench_doc"}
    folder = work / "repo"
    build(DOWNLOAD_CONFIGS, sources, folder, work / "store")
    files = pushed(folder, work, "org/mmlb")
    images = sum(p.stat().st_size for p in (folder / "images").rglob("*") if p.is_file())
    on_disk = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    print(f"local folder: {on_disk / 1e6:.1f} MB on disk for {images / 1e6:.1f} MB of distinct images "
          f"({on_disk / images:.3f}x; budget 1.1x); {sum(n.startswith('images/') for n in files):,} image files",
          flush=True)
    rows = []
    for name, served in (("partitions", {"repos": {"org/mmlb": files}}),
                         ("family (before)", {"repos": {"org/mmlb": old_layout(files)}}),
                         ("branch per family", pushed_to_branches(folder, work, "org/mmlb"))):
        with counting_hub(**served) as hub:
            for config in DOWNLOAD_CONFIGS:
                got, sent = hub_child(hub, "memory", "org/mmlb", config)
                images, metadata, family = config_usage(folder, config)
                bound = 1.25 * images + metadata
                rows.append({"layout": name, "config": config, "rows": got.get("rows", got.get("error")),
                             "image MB": f"{images / 1e6:.1f}", "metadata MB": f"{metadata / 1e6:.2f}",
                             "sent MB": f"{sent / 1e6:.1f}", "sent / (images+meta)": f"{sent / (images + metadata):.2f}",
                             "<= 1.25 x images + meta": "yes" if sent <= bound else "NO",
                             "_ratio": sent / (images + metadata), "_family": family})
    return rows


def published_ratios() -> list[dict]:
    """Worst download / (images + metadata) over every MMLongBench config at Table 2's size: the
    partitions give exactly its images; the family layout the family's images."""
    from benchmarks import bench_layout

    units = bench_layout.measure_units()
    per_dataset = bench_layout.extrapolate(units)
    families = {f["family"]: f for f in bench_layout.families(per_dataset)}
    out = []
    for row in per_dataset:
        images = _images_per_length(row)
        for length, used in zip(bench_layout.LENGTH_KEYS, images):
            meta = row["meta"] / len(images)
            family = families[row["family"]]["image_bytes"]
            out.append({"config": f"{row['dataset']} {length}", "images GB": used / 1e9,
                        "partitions": (used + meta) / (used + meta), "family": (family + meta) / (used + meta)})
    return out


def _images_per_length(row: dict) -> list[float]:
    """A dataset's distinct image bytes per length: its 128K images scaled by Table 3's images per
    row (shorter haystacks and page windows lie inside the longer ones)."""
    import yaml

    stats = yaml.safe_load((ROOT / "mmlbdata" / "dataset" / "paper_stats.yaml").read_text())
    dataset = next(d for b in stats if b["benchmark"] == "MMLongBench" for d in b["datasets"]
                   if d["name"] == row["dataset"])
    per_row = dataset["images"]
    return [row["distinct"] * row["bytes_each"] * n / per_row[-1] for n in per_row]


# -- 2. streaming -----------------------------------------------------------------------------------
def streaming(work: Path, vh_images: int, vh_questions: int) -> list[dict]:
    from benchmarks.bench_layout import make_source

    data = test_data()
    coco = work / "coco_synthetic"
    if not coco.exists():
        make_source(coco, vh_images)
    sources = {"coco": coco, "mmlongbench_doc": data / "mmlongbench_doc"}
    rows = []
    for config, kwargs in (("vh_single_128k", {"options": {"num_questions": vh_questions}}), ("mmlongdoc_128k", {})):
        repos = {}
        for layout in ("files", "embedded"):
            folder = work / f"stream-{layout}"
            build([config], sources, folder, work / "store", layout=layout, **kwargs)
            repos[layout] = pushed(folder, work, f"org/{layout}")
        with counting_hub({f"org/{layout}": files for layout, files in repos.items()}) as hub:
            for n in STREAM_NS:
                line = {"config": config, "N": n or "all"}
                for layout in ("files", "embedded"):
                    got, sent = hub_child(hub, "stream", f"org/{layout}", config, str(n or "all"))
                    line[f"{layout} rows"] = got.get("rows", got.get("error"))
                    line[f"{layout} MB sent"] = f"{sent / 1e6:.1f}"
                    line[f"{layout} peak RSS MB"] = f"{got.get('peak_mb', 0):.0f}"
                    line[f"_{layout}"] = sent
                line["files / embedded bytes"] = f"{line['_files'] / max(line['_embedded'], 1):.2f}"
                rows.append(line)
    return rows


# -- 3. idioms --------------------------------------------------------------------------------------
def idioms(work: Path, plain_rows: int) -> list[dict]:
    folder = work / "stream-files"
    out = []
    for mode, arg in (("filter_plain", str(plain_rows)), ("filter_bounded", ""), ("map_plain", ""),
                      ("map_bounded", "")):
        got = run_child(mode, str(folder), "vh_single_128k", arg)
        out.append({"idiom": mode, "rows": got.get("rows", got.get("error")),
                    "peak RSS MB": f"{got.get('peak_mb', 0):.0f}"})
    return out


# -- 4. the published set ---------------------------------------------------------------------------
SIZES = (("8K..128K", 1), ("8K..512K", 4))  # lengths published, 128K images per question scaled by


def _scaled(per_dataset: list[dict], scale: int) -> list[dict]:
    """``bench_layout.extrapolate``'s rows grown to 512K (``scale`` 4): per question 4x the 128K
    images (VRAG: one image per question), capped by the pool the recipe draws from."""
    from benchmarks import bench_layout

    if scale > 1:
        for row in per_dataset:
            grown = row["distinct"] * (1 if row["family"] == "VRAG" else scale)
            row["distinct"] = min(grown, row["pool"]) if row["pool"] else grown
            row["meta"] *= (sum(bench_layout.LENGTHS) + 3 * 2 * bench_layout.LENGTHS[-1]) / sum(bench_layout.LENGTHS)
    return per_dataset


def published_branches() -> list[dict]:
    """``mmlb push --branch-per family|dataset``: files in each branch's tree (a family's or a
    dataset's images, metadata and manifests; main holds README.md + stats.png), the largest
    branch per grouping and whether every branch is within the Hub's recommendations. Per
    dataset an image two datasets share is on both branches (VH-Single and VH-Multi: one COCO pool)."""
    from benchmarks import bench_layout

    units = bench_layout.measure_units()
    out = []
    for lengths, scale in SIZES:
        per_dataset = _scaled(bench_layout.extrapolate(units), scale)
        configs = 5 if scale == 1 else 7
        fams = bench_layout.families(per_dataset)
        if scale > 1:
            next(f for f in fams if f["family"] == "VH")["distinct"] = bench_layout.COCO_VAL2017[0]
        groups = {"family": [(f["family"], f["distinct"], f["datasets"]) for f in fams],
                  "dataset": [(r["dataset"], r["distinct"], 1) for r in per_dataset]}
        for per, branches in groups.items():
            files = {name: distinct + 2 * datasets * configs for name, distinct, datasets in branches}
            largest = max(files, key=files.get)
            # a folder: images/<group>/ holds one partition per config at most, a partition 256 shards
            entries = max(max(datasets * configs, 256, distinct / max(datasets, 1) / 256)
                          for _, distinct, datasets in branches)
            out.append({"lengths": lengths, "branch per": per, "branches": len(files) + 1,
                        "largest branch": largest, "files": files[largest], "entries/folder": entries,
                        "files, all branches": sum(files.values()) + 2,
                        "over 100k": ", ".join(n for n, f in sorted(files.items()) if f >= HUB_FILES) or "-"})
    return out


def published_set() -> list[dict]:
    """Per family (one repository each, or all in one): files, entries per folder, largest file,
    at 8K..128K and with 256K + 512K (distinct images per question scaled with the length, capped
    by the pools the recipes draw from)."""
    from benchmarks import bench_layout

    units = bench_layout.measure_units()
    out = []
    for lengths, scale in SIZES:
        per_dataset = _scaled(bench_layout.extrapolate(units), scale)
        fams = bench_layout.families(per_dataset)
        configs_per_dataset = 5 if scale == 1 else 7
        for fam in fams:
            if scale > 1 and fam["family"] == "VH":
                fam["distinct"] = bench_layout.COCO_VAL2017[0]  # one pool, already covered
            partitions = fam["datasets"] * configs_per_dataset  # nested lengths: one partition per length
            biggest_partition = fam["distinct"] / max(fam["datasets"], 1)
            files = fam["distinct"] + 2 * fam["datasets"] * configs_per_dataset + 1
            biggest_metadata = max(r["meta"] for r in per_dataset if r["family"] == fam["family"]) * 0.6
            out.append({"lengths": lengths, "family": fam["family"], "files": files,
                        "entries/folder": max(partitions, 256, biggest_partition / 256),
                        "largest file GB": max(biggest_metadata, 0.7e6) / 1e9})
        out.append({"lengths": lengths, "family": "one repository", "files": sum(r["files"] for r in out
                                                                                  if r["lengths"] == lengths),
                    "entries/folder": max(r["entries/folder"] for r in out if r["lengths"] == lengths),
                    "largest file GB": max(r["largest file GB"] for r in out if r["lengths"] == lengths)})
    return out


def print_downloads(rows: list[dict]) -> None:
    print("\n1. In-memory load_dataset(repo, config) from the loopback Hub: bytes sent per config", flush=True)
    print(table(rows, [k for k in rows[0] if not k.startswith("_")]))
    worst = {layout: max(r["_ratio"] for r in rows if r["layout"] == layout) for layout in dict.fromkeys(
        r["layout"] for r in rows)}
    print("worst sent / (distinct images + metadata), this repository: " +
          ", ".join(f"{layout} {ratio:.2f}" for layout, ratio in worst.items()))
    ratios = published_ratios()
    worst_family = max(ratios, key=lambda r: r["family"])
    print(f"at the published size (MMLongBench 8K..128K, {len(ratios)} configs; extrapolated): partitions "
          f"{max(r['partitions'] for r in ratios):.2f} (each config's partitions hold its images only), family layout "
          f"{worst_family['family']:.1f} ({worst_family['config']}, {worst_family['images GB']:.2f} GB of its own "
          f"images)", flush=True)


# -- main -------------------------------------------------------------------------------------------
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=None, help="keep the builds here (default: a temporary folder)")
    parser.add_argument("--vh-images", type=int, default=1500, help="generated COCO-size photos for vh_single_128k")
    parser.add_argument("--vh-questions", type=int, default=2, help="vh_single_128k questions (6 rows each)")
    parser.add_argument("--plain-filter-rows", type=int, default=4,
                        help="rows the unbounded filter runs on (it holds every image of them decoded)")
    parser.add_argument("--skip-download", action="store_true")
    parser.add_argument("--skip-stream", action="store_true")
    parser.add_argument("--skip-idioms", action="store_true")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(*args.child)), flush=True)
        os._exit(0)  # a stream left after N rows keeps datasets' reader threads waiting on the next batch
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-hub-layout-"))
    work.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("BENCH_TMP", str(work))

    if not args.skip_download:
        print_downloads(downloads(work))

    if not args.skip_stream:
        stream = streaming(work, args.vh_images, args.vh_questions)
        print("\n2. Streaming the first N rows from the loopback Hub, images decoded (plain datasets)", flush=True)
        print(table(stream, [k for k in stream[0] if not k.startswith("_")]))
        if not args.skip_idioms:
            shown = idioms(work, args.plain_filter_rows)
            print("\n3. In memory from a folder, vh_single_128k: filter / map over num_tokens")
            print(table(shown, list(shown[0])))

    shown = [{**r, "files": f"{r['files']:,.0f}", "entries/folder": f"{r['entries/folder']:,.0f}",
              "largest file GB": f"{r['largest file GB']:.2f}",
              "within Hub limits": "yes" if r["files"] < HUB_FILES and r["entries/folder"] < FOLDER_ENTRIES
              and r["largest file GB"] * 1e9 < FILE_BYTES else "NO"} for r in published_set()]
    print("\n4. MMLongBench published (Table 2 rows; extrapolated): files per repository (images + metadata + "
          "manifest per config + README), entries per folder, largest file")
    print(table(shown, list(shown[0])))
    branches = [{**r, "files": f"{r['files']:,.0f}", "entries/folder": f"{r['entries/folder']:,.0f}",
                 "files, all branches": f"{r['files, all branches']:,.0f}",
                 "every branch within Hub limits": "yes" if r["over 100k"] == "-" and r["entries/folder"] < FOLDER_ENTRIES
                 else "NO"} for r in published_branches()]
    print("\n   One repository, `mmlb push --branch-per family|dataset` (main: README.md + stats.png): files "
          "in the largest branch's tree")
    print(table(branches, list(branches[0])))


if __name__ == "__main__":
    main()
