"""Publishing benchmark: statistics, card, exports, push plan and resume check on a real VH build.

    python -m benchmarks.bench_publish [--questions 4]

Builds vh_single_8k and vh_single_32k from the COCO sample (once, into a temporary folder), then
times each publishing stage and prints one table. ``stats`` reads only the cheap columns and the
image paths; the comparison row reads every column through ``datasets`` (images not decoded).
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from benchmarks._util import table, test_data

CONFIGS = ["vh_single_8k", "vh_single_32k"]


def timed(stage: str, func, size_mb: float | None = None, written: Path | None = None) -> dict:
    """Seconds of ``func``; rate over ``size_mb`` of input; MB written under ``written``."""
    start = time.perf_counter()
    func()
    elapsed = time.perf_counter() - start
    rate = f"{size_mb / elapsed:,.0f} MB/s" if size_mb else ""
    out_mb = sum(p.stat().st_size for p in written.rglob("*") if p.is_file()) / 1e6 if written else None
    return {"stage": stage, "seconds": f"{elapsed:.3f}", "parquet read": rate,
            "written": f"{out_mb:,.0f} MB ({out_mb / elapsed:,.0f} MB/s)" if out_mb else ""}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--questions", type=int, default=4)
    args = parser.parse_args()
    data = test_data()
    from mmlbdata.dataset.build import build_all, build_parameters, completed_stats
    from mmlbdata.dataset.card import render_card
    from mmlbdata.exports.lmms_eval import export_lmms_eval
    from mmlbdata.exports.mmlongbench import export_jsonl
    from mmlbdata.exports.vlmevalkit import export_tsv
    from mmlbdata.dataset.hub import FolderUploader, push_folder
    from mmlbdata.dataset.registry import resolve
    from mmlbdata.dataset.stats import config_distribution

    with tempfile.TemporaryDirectory() as tmp:
        out, sources = Path(tmp) / "mmlb", {"coco": data / "coco_mini"}
        kwargs = dict(limit=args.questions, store_root=Path(tmp) / "store",
                      tokenizer=data / "llama2" / "tokenizer.model", progress=False)
        rows = [timed(f"build {len(CONFIGS)} configs ({args.questions} questions)",
                      lambda: build_all(CONFIGS, sources, out, **kwargs))]
        size = sum(p.stat().st_size for p in (out / "data").rglob("*.parquet")) / 1e6

        def load_all() -> None:
            import datasets

            datasets.disable_progress_bars()
            for name in CONFIGS:
                ds = datasets.load_dataset(str(out), name, split="test").cast_column(
                    "images", datasets.List(datasets.Image(decode=False)))
                for _ in ds:
                    pass

        rows += [
            timed("resume check (manifest + shard sizes)", lambda: [completed_stats(
                out, n, build_parameters(resolve(n), sources, limit=args.questions)) for n in CONFIGS]),
            timed("resume: build_all again (all kept)", lambda: build_all(CONFIGS, sources, out, **kwargs)),
            timed("stats (cheap columns + image paths)", lambda: [config_distribution(out, n).summary() for n in CONFIGS], size),
            timed("read every column via datasets", load_all, size),
            timed("card + plot", lambda: render_card(out, repo_id="org/mmlb")),
            timed("card without plot", lambda: render_card(out, repo_id="org/mmlb", plot=False)),
            timed("export lmms-eval", lambda: export_lmms_eval(out, Path(tmp) / "lmms")),
            timed("export VLMEvalKit TSV (base64)", lambda: export_tsv(out, Path(tmp) / "tsv"), size,
                  Path(tmp) / "tsv"),
            timed("export VLMEvalKit TSV (image_path)",
                  lambda: export_tsv(out, Path(tmp) / "tsvp", images="path"), size, Path(tmp) / "tsvp"),
            timed("export MMLongBench JSONL + images", lambda: export_jsonl(out, Path(tmp) / "rel"), size,
                  Path(tmp) / "rel"),
            timed("push to a local folder (first)",
                  lambda: push_folder(out, "org/mmlb", uploader=FolderUploader(Path(tmp) / "hub")), size),
            timed("push again (all skipped)",
                  lambda: push_folder(out, "org/mmlb", uploader=FolderUploader(Path(tmp) / "hub"))),
        ]
        print(f"{len(CONFIGS)} configs, {size:.1f} MB of parquet\n")
        print(table(rows, ["stage", "seconds", "parquet read", "written"]))


if __name__ == "__main__":
    main()
