"""``mmlb export DIR --format lmms-eval|vlmevalkit|mmlongbench --out OUT``."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mmlbdata.cli._common import absolute, built_folder_problem
from mmlbdata.exports import FORMATS


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "export", help="export a built folder for lmms-eval, VLMEvalKit or MMLongBench's evaluation code",
        description="lmms-eval: a task folder per family (YAML + utils.py scoring with mmlbdata's metrics). "
                    "vlmevalkit: one TSV per config (index, image_path or image as base64, question, answer, "
                    "category) + mmlb_vlmevalkit.json; run VLMEvalKit with LMUData=OUT through "
                    "`python -m mmlbdata.exports.vlmevalkit_dataset VLMEvalKit/run.py --data CONFIG --model M` "
                    "(VQA type, interleaved images, scored by mmlbdata). mmlongbench: the official release "
                    "layout (mmlb_data/<files as the release names them> + mmlb_image/) that MMLongBench's "
                    "data.py loads; `--source mmlb_release=OUT` reads it back.")
    parser.add_argument("folder", help="a folder written by `mmlb build`")
    parser.add_argument("--format", required=True, choices=FORMATS)
    parser.add_argument("--out", required=True, help="output folder")
    parser.add_argument("--config", action="append", default=None, help="only these configs")
    parser.add_argument("--dataset-path", default=None,
                        help="lmms-eval: the dataset_path tasks load (a Hub repo id; default: this folder)")
    parser.add_argument("--images", choices=["base64", "path"], default="path",
                        help="vlmevalkit: path (default): each image written once under OUT/images/, rows name "
                             "them by absolute image_path (VLMEvalKit's ImageBaseDataset reads such rows: no "
                             "`image` column makes it meta_only); base64: self-contained TSVs with a copy of every "
                             "image in each row that shows it (often 50x the folder; MMLongBench's own TSVs)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    problem = built_folder_problem(args.folder, args.config if "config" in args else None)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 1
    folder, out = Path(args.folder), Path(absolute(args.out))  # printed paths and the README's: pasteable
    try:
        if args.format == "lmms-eval":
            from mmlbdata.exports.lmms_eval import export_lmms_eval

            written = export_lmms_eval(folder, out, dataset_path=args.dataset_path, configs=args.config)
        elif args.format == "vlmevalkit":
            from mmlbdata.exports.vlmevalkit import export_tsv

            written = export_tsv(folder, out, configs=args.config, images=args.images)
        else:
            from mmlbdata.exports.mmlongbench import export_jsonl

            written = export_jsonl(folder, out, configs=args.config)
    except (FileNotFoundError, ValueError) as err:  # ValueError: a name from the data leaving --out
        print(f"error: {err}", file=sys.stderr)
        return 1
    for path in written:
        print(path)
    if args.format == "vlmevalkit" and args.images == "base64":
        warn_if_large(written)
    return 0


#: above this many bytes of base64 TSV, ``--images path`` is proposed (decimal, as human_bytes prints)
LARGE_TSV_BYTES = 200 * 10**6


def warn_if_large(written: list) -> None:
    """Say the size of base64 TSVs past LARGE_TSV_BYTES, and the smaller form."""
    from mmlbdata.core.report import human_bytes

    total = sum(Path(p).stat().st_size for p in written if str(p).endswith(".tsv"))
    if total > LARGE_TSV_BYTES:
        print(f"note: the TSVs hold {human_bytes(total)}: --images base64 puts a copy of every image in each row "
              "that shows it; --images path (the default) writes each image once under OUT/images/ and VLMEvalKit "
              "reads the rows' image_path", file=sys.stderr)
