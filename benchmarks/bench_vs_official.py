"""Scoring and reading against the benchmarks' own code, side by side: CPU-time ratios (ours / official).

    python -m benchmarks.bench_vs_official [--n 3000] [--rounds 3] [--whole-n 1000] [--reader-rows 48]
                                           [--only metrics,engine,whole,reader] [--in-process]

The same generated inputs (``benchmarks/parity_pairs.py``'s pairs: realistic and adversarial
answers) go to this library and to the official functions, run unchanged from the fetched
mirrors (``benchmarks/official_code.py``; nothing official is in this repository). Each round runs
both sides of every row one after the other, alternating which goes first (a side's time in a
round: the least of up to 5 runs within 0.25 s of CPU, for the reader's rows up to 15 within 1 s;
one run for the processes); the table gives
the median ratio of CPU time (ours / official) over the rounds and its range. Each metric path's
rows are measured in a process of their own (``--in-process``: all in this one). Four parts:

* **metric**: ``get_metric(name, parity="official").score_many`` vs the function the official
  evaluation calls per example (MMLongBench ``data.py``'s ``post_process`` on the runner's text
  ``system_template + output``; MMLongBench-Doc ``eval_score``; MMNeedle ``evaluate.py`` /
  ``evaluate_multi.py``'s per-response loop; ReadBench ``eval_mmlu`` / ``eval_babi`` /
  ``eval_longbench``), ``--n`` pairs per path;
* **engine**: ``evaluate_config`` on one config of those pairs (per-example scores, aggregates,
  category/length/group tables, problems) vs the official per-example loop and its averages
  (eval.py L76-82 and L120: post_process, metric lists, ``np.mean``); for MMNeedle also a row
  "scores given", where the metric answers from results worked out beforehand: the engine's own
  features (ids matched, report rows, aggregates, stderr and interval, tables) against the whole
  official loop;
* **whole**: ``mmlb eval --parity official`` as a process over 11 built configs vs a process that
  runs the official evaluation over the same predictions (MMLongBench's loaders read their gold
  with ``load_dataset("json")`` as ``data.py`` does, then the loop above; MMNeedle's loop over its
  response files; MMLongBench-Doc's ``eval_score`` over its samples), CPU time of the children;
* **reader**: ``mmlb run``'s reading without a model (``runner.core.run`` with a backend that
  answers at once: streaming, image bytes read ahead, batching, the pipeline threads, the
  predictions file) vs ``data.py``'s ``load_visual_haystack`` (``load_dataset("json")`` + its
  ``map``) and reading every image file its rows list, on the same Visual Haystack rows of real
  COCO images (``$MMLB_TEST_DATA/coco_mini``); a second row times ``mmlb run --workers 0`` (no
  thread reading ahead of generation: what that thread costs, a feature the official side as
  timed here lacks; eval.py's DataLoader reads ahead in worker processes this does not count);
  a third row reads the same rows stored as ``mmlb build`` stores them by default (the files
  layout: a metadata parquet and the images under images/, through datasets' folder-based
  builder), where the first two read a plain parquet whose rows hold the images' paths.

A ratio above 1.0 means this library needs more CPU than the official code for the same work.
Timings on a shared machine are noisy: read the medians.
"""
from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

# Both sides are single-threaded Python; OpenBLAS's idle threads spin after numpy work and their CPU
# lands on whichever side runs next (measured: a 300-score bootstrap at 2x its wall time). One
# thread each, set before numpy loads, for this process and the children it times.
for _blas in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_blas, "1")
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from benchmarks import official_code as oc
from benchmarks import parity_pairs as pp
from benchmarks._util import table
from mmlbdata.core.seeding import rng as seeded_rng

# --- the inputs -----------------------------------------------------------------------------------


@dataclass
class Pairs:
    """One metric path's generated pairs: ours (predictions, examples) and the official arguments."""

    path: str
    metric: str
    predictions: list[str]
    examples: list[dict]
    official: list[dict]


def make_pairs(path: str, n: int, seed: str = "bench") -> Pairs:
    metric, generator = pp.PATHS[path]
    pp.SIZE = n
    predictions, examples, official = [], [], []
    for index, (prediction, example, args) in enumerate(generator(seeded_rng("parity_pairs", seed, path))):
        example = {"id": f"{path}-{index}", **example}
        if "meta" in example:
            example["meta"] = json.dumps(example["meta"])  # as a built dataset stores it
        predictions.append(prediction)
        examples.append(example)
        official.append(args)
    return Pairs(path, metric, predictions, examples, official)


# --- the official side: what the official evaluation calls per example -----------------------------

def _mmlb(kind: str, template: str, item: Callable[[dict], dict]):
    """MMLongBench: a fresh loader ``post_process`` on ``template + output`` (eval.py L73-76)."""
    def run(predictions: list[str], items: list[dict]) -> list:
        post_process = oc.mmlb_post_process(kind)
        out = []
        for prediction, official in zip(predictions, items):
            try:
                out.append(post_process({"output": template + prediction}, official))
            except Exception as exc:  # noqa: BLE001 - the official run would stop here; go on timing
                out.append(exc)
        return out

    run.item = item
    return run


def _answers(o):
    return {"answer": o["answers"]}


def _answer(o):
    return {"answer": o["answer"]}


def _docqa(o):
    return {"answer": o["answer"], "answer_format": o["answer_format"]}


def _doc(predictions, items):
    eval_score = oc.mmlongbench_doc_eval_score()
    out = []
    for prediction, o in zip(predictions, items):
        try:
            out.append(eval_score(o["answer"], prediction, o["answer_format"]))
        except Exception as exc:  # noqa: BLE001
            out.append(exc)
    return out


def _needles(multi: bool):
    def run(predictions, items):
        loop = oc.mmneedle_loops()[multi]
        responses = [{"ground_truth": o["answer"], "response": p, "id": i}
                     for i, (p, o) in enumerate(zip(predictions, items))]
        return loop(responses, "10", "4")  # the file name's SEQUENCE_LENGTH and N_ROW: 10 images, 4x4 grids

    return run


def _readbench_mc(predictions, items):
    eval_mmlu = oc.readbench()[0]
    return [eval_mmlu(p, o["answer"]) for p, o in zip(predictions, items)]


def _babilong(predictions, items):
    eval_babi = oc.readbench()[1]
    return [eval_babi(p, o["answer"], o["question"], o["task"]) for p, o in zip(predictions, items)]


def _longbench(predictions, items):
    eval_longbench = oc.readbench()[2]
    return [eval_longbench(p, o) for p, o in zip(predictions, items)]


def _identity(o):
    return o


#: metric path -> (official runner over (predictions, official items), item shaping, engine dataset)
OFFICIAL: dict[str, tuple[Callable, Callable[[dict], dict], str]] = {
    "sub_em": (_mmlb("sub_em", "Answer:", _answers), _answers, "infoseek"),
    "binary_acc": (_mmlb("vh", "Answer:", _answer), _answer, "vh_single"),
    "count_acc": (_mmlb("count", "Answer:", _answer), _answer, "mm_niah_count_image"),
    "mc_acc": (_mmlb("mc", "Answer:", _answer), _answer, "mm_niah_reasoning_image"),
    "cls_acc": (_mmlb("cls", "label:", _answer), _answer, "cars196"),
    "rouge_l": (_mmlb("rouge", "Summary:", _answers), _answers, "gov_report"),
    "docqa": (_mmlb("docqa", "Answer:", _docqa), _docqa, "mmlongdoc"),
    "docqa_release_lists": (_mmlb("docqa", "Answer:", _docqa), _docqa, "slidevqa"),
    "mmlongbench_doc": (_doc, _identity, "mmlongbench_doc"),
    "mmneedle_single": (_needles(False), _identity, "mmneedle_single"),
    "mmneedle_multi2": (_needles(True), _identity, "mmneedle_multi2"),
    "mmneedle_multi5": (_needles(True), _identity, "mmneedle_multi5"),
    "readbench_mc": (_readbench_mc, _identity, "mmlu_pro"),
    "babilong": (_babilong, _identity, "babilong"),
    "longbench_f1": (_longbench, _identity, "longbench"),
}
#: summ_judge is left out: both sides would time a judge's canned replies, not scoring


def official_items(pairs: Pairs) -> list[dict]:
    shape = OFFICIAL[pairs.path][1]
    return [shape(o) for o in pairs.official]


def our_metric(pairs: Pairs) -> Sequence:
    from mmlbdata.evaluation.metrics import get_metric

    return get_metric(pairs.metric, parity="official").score_many(pairs.predictions, pairs.examples)


# --- the engine ----------------------------------------------------------------------------------

def engine_examples(pairs: Pairs) -> tuple[list[dict], dict[str, dict]]:
    """The pairs as one built config's rows and its predictions file's rows."""
    dataset = OFFICIAL[pairs.path][2]
    examples = [{**e, "dataset": dataset, "length": 8192, "metric": pairs.metric,
                 "meta": e.get("meta", "{}"), "question": e.get("question", "")} for e in pairs.examples]
    predictions = {e["id"]: {"id": e["id"], "prediction": p} for e, p in zip(examples, pairs.predictions)}
    return examples, predictions


def our_engine(examples, predictions):
    from mmlbdata.evaluation.evaluate import evaluate_config

    return evaluate_config(examples, predictions, {"*": {"parity": "official"}})  # it only adds "_row", the same each time


@contextlib.contextmanager
def scores_given(pairs: Pairs):
    """The engine with the metric's ``score_many`` answering from results worked out beforehand:
    what the engine's own features cost (ids matched, report rows, aggregates, stderr and
    interval, tables), set against the whole official loop. MMNeedle's loop is the leanest of the
    official evaluations (about 1 us per example), so that is where those features weigh most."""
    from mmlbdata.evaluation.metrics import get_metric

    metric = get_metric(pairs.metric, parity="official")
    results = metric.score_many(pairs.predictions, pairs.examples)
    cls = type(metric)
    original = cls.__dict__.get("score_many")  # None: inherited

    def given(self, predictions, examples):
        assert predictions == pairs.predictions, "the engine asked for other predictions than the pairs'"
        return results

    cls.score_many = given
    try:
        yield
    finally:
        if original is None:
            del cls.score_many
        else:
            cls.score_many = original


def official_engine(path: str, predictions: list[str], items: list[dict]) -> dict:
    """The official per-example results gathered and averaged as MMLongBench's eval.py does
    (metric values appended per key, then the mean x 100); MMNeedle's loop returns its lists;
    MMLongBench-Doc's run_api.py adds ``eval_acc_and_f1`` (here once, not after every sample)."""
    import numpy as np

    results = OFFICIAL[path][0](predictions, items)
    if path.startswith("mmneedle"):
        return {k: float(np.mean(v)) * 100 for k, v in zip(("index", "exact", "exist"), results)}
    if path == "mmlongbench_doc":
        samples = [{"answer": o["answer"], "pred": p, **({} if isinstance(r, Exception) else {"score": r})}
                   for p, o, r in zip(predictions, items, results)]
        return dict(zip(("acc", "f1"), oc.mmlongbench_doc().eval_acc_and_f1(samples)))
    metrics: dict[str, list] = {}
    for result in results:
        mets = result[0] if isinstance(result, tuple) else result
        if isinstance(mets, dict):
            for key, value in mets.items():
                metrics.setdefault(key, []).append(value)
        elif not isinstance(mets, Exception):
            metrics.setdefault("score", []).append(float(mets))
    return {k: float(np.mean(v)) * 100 for k, v in metrics.items()}


# --- timing -----------------------------------------------------------------------------------------

def cpu(fn: Callable[[], object], budget: float = 0.25, most: int = 5) -> float:
    """CPU seconds (this process, all threads) of ``fn()``: the least of a few runs (up to ``most``,
    while they take under ``budget`` seconds together), which strips most of what other processes
    on a shared machine add; each run starts after a collection, so neither side pays for the
    other's garbage. What it prints (MMLongBench-Doc's ``eval_score`` prints on some
    lists) goes to the null device, still written."""
    times: list[float] = []
    with open(os.devnull, "w") as null, contextlib.redirect_stdout(null):
        while len(times) < most and sum(times) < budget:
            gc.collect()  # the garbage of the run before (either side's) is not collected on this run's clock
            start = time.process_time()
            fn()
            times.append(time.process_time() - start)
    return min(times)


def children_cpu(command: list[str], env: dict | None = None) -> float:
    """CPU seconds (user + system) of a child process running ``command``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode:
        sys.exit(f"bench_vs_official: {' '.join(command)} failed:\n{done.stderr[-3000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


class Rows:
    """Per row: CPU seconds of each side per round, alternating which side runs first."""

    def __init__(self) -> None:
        self.times: dict[str, dict[str, list[float]]] = {}
        self.order: list[tuple[str, str]] = []

    def measure(self, part: str, name: str, ours: Callable[[], float], official: Callable[[], float],
                round_no: int) -> None:
        key = f"{part}|{name}"
        if key not in self.times:
            self.times[key] = {"ours": [], "official": []}
            self.order.append((part, name))
        sides = [("ours", ours), ("official", official)]
        for side, fn in (sides if round_no % 2 == 0 else sides[::-1]):
            self.times[key][side].append(fn())

    def merge(self, other: dict) -> None:
        """Add the rows another process measured (``as_json``'s output)."""
        for part, name in other["order"]:
            self.order.append((part, name))
            self.times[f"{part}|{name}"] = other["times"][f"{part}|{name}"]

    def as_json(self) -> str:
        return json.dumps({"order": self.order, "times": self.times})

    def render(self) -> str:
        rows = []
        parts = ("metric", "engine", "whole", "reader")
        for part, name in sorted(self.order, key=lambda row: parts.index(row[0])):  # stable: paths keep their order
            t = self.times[f"{part}|{name}"]
            ratios = [o / max(f, 1e-9) for o, f in zip(t["ours"], t["official"])]
            rows.append({"part": part, "path": name, "ours s": f"{statistics.median(t['ours']):.3f}",
                         "official s": f"{statistics.median(t['official']):.3f}",
                         "ratio": f"{statistics.median(ratios):.2f}",
                         "range": f"{min(ratios):.2f}-{max(ratios):.2f}"})
        return table(rows, ["part", "path", "ours s", "official s", "ratio", "range"])


# --- whole process --------------------------------------------------------------------------------

WHOLE_PATHS = ("sub_em", "binary_acc", "count_acc", "mc_acc", "cls_acc", "rouge_l", "docqa", "mmlongbench_doc",
               "mmneedle_single", "mmneedle_multi2", "mmneedle_multi5")


def write_whole(root: Path, n: int) -> tuple[Path, Path, Path]:
    """11 configs of ``n`` pairs: a built folder + predictions JSONL for ``mmlb eval``, and the
    same golds and outputs in the official files' shapes for the official process."""
    from mmlbdata.core.schema import FEATURES
    from mmlbdata.runner.smoke import write_built

    configs, lines, official = {}, [], root / "official"
    official.mkdir(parents=True, exist_ok=True)
    for path in WHOLE_PATHS:
        pairs = make_pairs(path, n, seed="whole")
        examples, _ = engine_examples(pairs)
        config = f"{path.replace('_', '')}_8k"
        rows = []
        for e in examples:
            row = {k: None for k in FEATURES}
            row.update({"id": e["id"], "dataset": e["dataset"], "length": 8192, "num_tokens": 8000, "prompt": "x",
                        "images": [], "question": e.get("question", ""), "answers": [str(a) for a in e["answers"]],
                        "metric": e["metric"], "meta": e["meta"]})
            rows.append(row)
        configs[config] = rows
        lines += [json.dumps({"id": e["id"], "config": config, "prediction": p}) for e, p in
                  zip(examples, pairs.predictions)]
        items = official_items(pairs)
        with open(official / f"{path}.jsonl", "w", encoding="utf-8") as f:
            for index, (p, item) in enumerate(zip(pairs.predictions, items)):
                f.write(json.dumps({"id": index, "output": p, **item}) + "\n")
    built = write_built(root / "built", configs)
    predictions = root / "predictions.jsonl"
    predictions.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return built, predictions, official


def official_whole(folder: str) -> None:
    """The official evaluation of every file in ``folder`` (run as its own process)."""
    import numpy as np

    report = {}
    for file in sorted(Path(folder).glob("*.jsonl")):
        path = file.stem
        if path.startswith("mmneedle") or path == "mmlongbench_doc":
            with open(file, encoding="utf-8") as f:  # their scripts json.load their result files
                rows = [json.loads(line) for line in f]
        else:
            from datasets import load_dataset  # data.py's loaders: load_dataset("json", data_files=path)

            data = load_dataset("json", data_files=str(file))["train"]
            rows = [data[i] for i in range(len(data))]  # eval.py reads test_item = data["data"][idx]
        items = [{k: v for k, v in r.items() if k not in ("id", "output")} for r in rows]
        report[path] = official_engine(path, [r["output"] for r in rows], items)
    json.dump({k: {m: float(np.round(v, 4)) for m, v in r.items()} for k, r in report.items()}, sys.stdout)


# --- reader -------------------------------------------------------------------------------------

def write_reader(root: Path, rows: int, images: int) -> tuple[Path, Path, Path]:
    """Visual Haystack rows of ``images`` COCO files each: a built folder (files layout: each image
    a path) and the official release's JSONL (``ctxs``: the image names) beside the image folder."""
    from benchmarks._util import test_data
    from mmlbdata.runner.smoke import write_built

    coco = test_data() / "coco_mini" / "val2017"
    pics = sorted(p.name for p in coco.glob("*.jpg"))
    built_rows, release = [], []
    for i in range(rows):
        names = [pics[(i * images + j) % len(pics)] for j in range(images)]
        built_rows.append({"id": f"vh{i}", "dataset": "vh_single", "length": 8192, "num_tokens": 8000,
                           "prompt": "<image>" * images + f"\nQuestion {i}: is there a dog?",
                           "images": [{"bytes": None, "path": str(coco / n)} for n in names],
                           "question": "Is there a dog?", "answers": ["yes" if i % 2 else "no"],
                           "metric": "binary_acc", "meta": "{}"})
        release.append({"id": f"vh{i}", "question": "Is there a dog?", "answer": "yes" if i % 2 else "no",
                        "ctxs": names})
    built = write_built(root / "built", {"vhsingle_8k": built_rows})
    (root / "release").mkdir(exist_ok=True)
    with open(root / "release" / "vh.jsonl", "w", encoding="utf-8") as f:
        f.writelines(json.dumps(r) + "\n" for r in release)
    return built, root / "release", coco


def write_reader_files_layout(root: Path, built: Path) -> Path:
    """The same rows as ``mmlb build`` stores them by default (the files layout: a metadata parquet
    and one copy of each image under images/, read back by datasets' folder-based builder)."""
    import datasets

    from mmlbdata.core.schema import make_example
    from mmlbdata.core.store import ImageStore
    from mmlbdata.dataset.build import store_config

    store, refs = ImageStore(root / "store"), {}

    def rows():
        for row in datasets.load_dataset(str(built), "vhsingle_8k", split="test", streaming=True).decode(False):
            for image in row["images"]:
                if image["path"] not in refs:
                    refs[image["path"]] = store.put_bytes(Path(image["path"]).read_bytes(), "jpg")
            yield make_example(**{**row, "images": [refs[image["path"]] for image in row["images"]],
                                  "meta": json.loads(row["meta"])})

    store_config(root / "built_files", "vhsingle_8k", rows(), manifest={"family": "vh"}, layout="files")
    return root / "built_files"


class _Answering:
    """A backend that answers every request at once (no prepare: nothing to decode for it)."""

    def generate(self, requests):
        from mmlbdata.runner.core import Generation

        return [Generation("no", 1, 1) for _ in requests]


def our_reader(built: Path, out: Path, workers: int = 2) -> None:
    """``mmlb run`` (``--workers 2``, its default: a thread reads ahead of generation; 0: the serial
    path, which the second reader row times to show what that thread costs)."""
    from mmlbdata.runner.core import PipelineOptions, run

    if out.exists():
        out.unlink()
    # batch size 1: mmlb run's default, eval.py's DataLoader's
    run(_Answering(), built, ["vhsingle_8k"], out, pipeline=PipelineOptions(workers=workers))


def official_reader(release: Path, images: Path) -> None:
    """data.py load_visual_haystack (json + map; the datasets cache warm, as from a second run),
    then each row's image files read and held until the next row (what a reader that hands a row's
    images to the model at least does; eval.py's DataLoader then decodes them in prepare_inputs)."""
    args = argparse.Namespace(test_file_root=str(release), image_file_root=str(images), preprocessing_num_workers=1)
    data = oc.mmlongbench()[1].load_visual_haystack(args, "vh.jsonl")["data"]
    for index in range(len(data)):
        row = []
        for image in data[index]["image_list"]:
            with open(image, "rb") as handle:
                row.append(handle.read())


# --- main -------------------------------------------------------------------------------------

def run_metrics(rows: Rows, n: int, rounds: int, paths: list[str]) -> None:
    inputs = {path: make_pairs(path, n) for path in paths}
    items = {path: official_items(p) for path, p in inputs.items()}
    # both sides' inputs built once, here, side by side: built per round, the engine's landed in a heap
    # fragmented by the rounds before. Part of why the engine rows depend on how many paths run (BABILong,
    # same code: 1.02 with 2 paths, 1.2 with all 15 before this, 1.14 after)
    engine_inputs = {path: engine_examples(p) for path, p in inputs.items()}
    for path in paths:  # warm both sides (imports, compiled patterns, the official modules)
        warm = make_pairs(path, 5)
        our_metric(warm)
        our_engine(*engine_examples(warm))
        official_engine(path, warm.predictions, official_items(warm))
    gc.collect()
    gc.freeze()  # the inputs of every path live to the end: a full collection need not walk them on either side's clock
    for round_no in range(rounds):
        for path in paths:
            pairs = inputs[path]
            rows.measure("metric", path, lambda: cpu(lambda: our_metric(pairs)),
                         lambda: cpu(lambda: OFFICIAL[path][0](pairs.predictions, items[path])), round_no)
        for path in paths:
            examples, predictions = engine_inputs[path]
            rows.measure("engine", path, lambda: cpu(lambda: our_engine(examples, predictions)),
                         lambda: cpu(lambda: official_engine(path, inputs[path].predictions, items[path])), round_no)
        for path in [p for p in paths if p.startswith("mmneedle")]:
            examples, predictions = engine_inputs[path]
            with scores_given(inputs[path]):
                rows.measure("engine", f"{path}, scores given", lambda: cpu(lambda: our_engine(examples, predictions)),
                             lambda: cpu(lambda: official_engine(path, inputs[path].predictions, items[path])),
                             round_no)
        print(f"round {round_no + 1}/{rounds}: metrics and engine done", file=sys.stderr)


def run_metrics_apart(rows: Rows, n: int, rounds: int, paths: list[str]) -> None:
    """:func:`run_metrics` for each path in a process of its own. In one process the engine rows
    depend on which paths ran before them (the same code: BABILong's engine 0.95 alone, 1.14 after
    the other 14 paths' rows; the official side barely moves): the heap those rows churned, not
    the path's own work. Both sides of a row still run in one process, alternating."""
    for path in paths:
        command = [sys.executable, "-m", "benchmarks.bench_vs_official", "--only", "metrics", "--path", path,
                   "--n", str(n), "--rounds", str(rounds), "--in-process", "--rows-json"]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode:
            sys.exit(f"bench_vs_official: the {path} rows failed:\n{done.stderr[-4000:]}")
        rows.merge(json.loads(done.stdout.strip().splitlines()[-1]))  # the official code may print before it
        print(f"{path}: metric and engine rows done", file=sys.stderr)


def run_whole(rows: Rows, n: int, rounds: int, work: Path) -> None:
    built, predictions, official = write_whole(work / "whole", n)
    env = {**os.environ, "HF_DATASETS_CACHE": str(work / "hf_cache")}
    ours = [sys.executable, "-m", "mmlbdata.cli", "eval", str(predictions), "--data", str(built), "--out",
            str(work / "report"), "--parity", "official", "--extractor", "none", "--no-plot"]
    theirs = [sys.executable, "-m", "benchmarks.bench_vs_official", "--official-whole", str(official)]
    children_cpu(ours, env)  # warm: the files in the page cache, the official json loaders' datasets cache
    children_cpu(theirs, env)
    for round_no in range(rounds):
        rows.measure("whole", f"mmlb eval, {len(WHOLE_PATHS)} configs x {n}", lambda: children_cpu(ours, env),
                     lambda: children_cpu(theirs, env), round_no)
        print(f"round {round_no + 1}/{rounds}: whole process done", file=sys.stderr)


#: each side of a reader row reads some 150 MB of image files per run (48 rows x 20 COCO images, from
#: the page cache): the copying moves with the shared machine's memory traffic more than anything
#: else timed here (one run's ratio moved 0.8-1.2 with no code change), so its least is taken over
#: more runs
READER_RUNS = {"budget": 1.0, "most": 15}


def run_reader(rows: Rows, n_rows: int, images: int, rounds: int, work: Path) -> None:
    built, release, coco = write_reader(work / "reader", n_rows, images)
    files_layout = write_reader_files_layout(work / "reader", built)
    our_reader(built, work / "warm.jsonl")
    our_reader(files_layout, work / "warm.jsonl")
    official_reader(release, coco)
    for round_no in range(rounds):
        for folder, workers, how in ((built, 2, ""), (built, 0, ", --workers 0"), (files_layout, 2, ", files layout")):
            rows.measure("reader", f"vh 8k, {n_rows} rows x {images} images{how}",
                         lambda: cpu(lambda: our_reader(folder, work / "reader.jsonl", workers), **READER_RUNS),
                         lambda: cpu(lambda: official_reader(release, coco), **READER_RUNS), round_no)
        print(f"round {round_no + 1}/{rounds}: reader done", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--n", type=int, default=3000, help="pairs per metric path (default 3000)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--whole-n", type=int, default=1000, help="predictions per config in the whole run (11 configs)")
    parser.add_argument("--reader-rows", type=int, default=48)
    parser.add_argument("--reader-images", type=int, default=20, help="images per row (about 8K tokens of COCO)")
    parser.add_argument("--path", action="append", choices=sorted(OFFICIAL), help="only these metric paths")
    parser.add_argument("--only", default="metrics,engine,whole,reader",
                        help="comma list of parts (metrics includes the engine)")
    parser.add_argument("--in-process", action="store_true",
                        help="measure every metric path in this process (default: a process per path, see "
                             "run_metrics_apart)")
    parser.add_argument("--official-whole", help=argparse.SUPPRESS)
    parser.add_argument("--rows-json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.official_whole:
        official_whole(args.official_whole)
        return 0
    os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
    parts = set(args.only.split(","))
    rows = Rows()
    try:
        with tempfile.TemporaryDirectory(prefix="mmlb_vs_official_") as tmp:
            work = Path(tmp)
            if parts & {"metrics", "engine"}:
                paths = args.path or list(OFFICIAL)
                if args.in_process or len(paths) == 1:
                    run_metrics(rows, args.n, args.rounds, paths)
                else:
                    run_metrics_apart(rows, args.n, args.rounds, paths)
            if "whole" in parts:
                run_whole(rows, args.whole_n, args.rounds, work)
            if "reader" in parts:
                run_reader(rows, args.reader_rows, args.reader_images, args.rounds, work)
    except oc.Missing as exc:
        sys.exit(f"bench_vs_official: {exc}")
    if args.rows_json:
        print(rows.as_json())
        return 0
    print(f"CPU seconds, median of {args.rounds} alternating rounds; ratio = ours / official (<= 1.0: not slower)")
    print(rows.render())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
