"""Scoring against the benchmarks' own code, side by side: CPU-time ratios (ours / official).

    python -m benchmarks.bench_vs_official [--n 3000] [--rounds 3] [--whole-n 1000] [--only metrics,whole]

The same generated inputs (``benchmarks/parity_pairs.py``'s pairs: realistic and adversarial
answers) go to this library and to the official functions, run unchanged from the fetched
mirrors (``benchmarks/official_code.py``; nothing official is in this repository). Each round runs
both sides of every row one after the other, alternating which goes first (a side's time in a
round: the least of up to 5 runs within 0.25 s of CPU; one run for the processes); the table gives
the median ratio of CPU time (ours / official) over the rounds and its range. Two parts:

* **whole** (the user's figure: the target is a ratio at or under 1.0): ``mmlb eval --parity
  official`` as a process over 11 built configs vs a process that runs the official evaluation
  over the same predictions (MMLongBench's loaders read their gold with ``load_dataset("json")``
  as ``data.py`` does, then eval.py's loop L76-82 and L120: post_process, metric lists,
  ``np.mean``; MMNeedle's loop over its response files; MMLongBench-Doc's ``eval_score`` over its
  samples and ``eval_acc_and_f1``), CPU time of the children;
* **metric**: ``get_metric(name, parity="official").score_many`` vs the function the official
  evaluation calls per example (MMLongBench ``data.py``'s ``post_process`` on the runner's text
  ``system_template + output``; MMLongBench-Doc ``eval_score``; MMNeedle ``evaluate.py`` /
  ``evaluate_multi.py``'s per-response loop; ReadBench ``eval_mmlu`` / ``eval_babi`` /
  ``eval_longbench``), ``--n`` pairs per path: where a path's cost comes from, not a goal.

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


def engine_examples(pairs: Pairs) -> list[dict]:
    """The pairs as one built config's rows."""
    dataset = OFFICIAL[pairs.path][2]
    return [{**e, "dataset": dataset, "length": 8192, "metric": pairs.metric, "meta": e.get("meta", "{}"),
             "question": e.get("question", "")} for e in pairs.examples]


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

    def render(self) -> str:
        rows = []
        parts = ("whole", "metric")
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
    from tests.smoke import write_built

    configs, lines, official = {}, [], root / "official"
    official.mkdir(parents=True, exist_ok=True)
    for path in WHOLE_PATHS:
        pairs = make_pairs(path, n, seed="whole")
        examples = engine_examples(pairs)
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


# --- main -------------------------------------------------------------------------------------

def run_metrics(rows: Rows, n: int, rounds: int, paths: list[str]) -> None:
    inputs = {path: make_pairs(path, n) for path in paths}
    items = {path: official_items(p) for path, p in inputs.items()}
    for path in paths:  # warm both sides (imports, compiled patterns, the official modules)
        warm = make_pairs(path, 5)
        our_metric(warm)
        OFFICIAL[path][0](warm.predictions, official_items(warm))
    for round_no in range(rounds):
        for path in paths:
            pairs = inputs[path]
            rows.measure("metric", path, lambda: cpu(lambda: our_metric(pairs)),
                         lambda: cpu(lambda: OFFICIAL[path][0](pairs.predictions, items[path])), round_no)
        print(f"round {round_no + 1}/{rounds}: metrics done", file=sys.stderr)


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--n", type=int, default=3000, help="pairs per metric path (default 3000)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--whole-n", type=int, default=1000, help="predictions per config in the whole run (11 configs)")
    parser.add_argument("--path", action="append", choices=sorted(OFFICIAL), help="only these metric paths")
    parser.add_argument("--only", default="whole,metrics", help="comma list of parts: whole, metrics")
    parser.add_argument("--official-whole", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.official_whole:
        official_whole(args.official_whole)
        return 0
    os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
    parts = set(args.only.split(","))
    rows = Rows()
    try:
        with tempfile.TemporaryDirectory(prefix="mmlb_vs_official_") as tmp:
            if "whole" in parts:
                run_whole(rows, args.whole_n, args.rounds, Path(tmp))
            if "metrics" in parts:
                run_metrics(rows, args.n, args.rounds, args.path or list(OFFICIAL))
    except oc.Missing as exc:
        sys.exit(f"bench_vs_official: {exc}")
    print(f"CPU seconds, median of {args.rounds} alternating rounds; ratio = ours / official (<= 1.0: not slower)")
    print(rows.render())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
