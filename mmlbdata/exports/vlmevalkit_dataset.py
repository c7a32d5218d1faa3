"""A VLMEvalKit dataset class for the TSVs of ``mmlb export --format vlmevalkit``.

VLMEvalKit treats a TSV it does not know as a custom dataset: its ``DATASET_TYPE`` then defaults to
``MCQ`` (models rewrite the prompt as a multiple-choice one), ``build_prompt`` puts every image
before the text, and ``evaluate`` cannot score. :func:`dataset_class` makes the class that fixes
the three: type ``VQA``; ``build_prompt`` interleaves the images where the prompt has ``<image>``;
``evaluate`` scores each prediction with the metric its row names and aggregates each metric its
own way, through ``mmlb eval``'s ``evaluate_config`` (one category, one config, at a time).

VLMEvalKit's ``run.py`` finds dataset classes in ``vlmeval.dataset`` (``DATASET_CLASSES`` for
``--data NAME``, attributes for ``--config``). :func:`register` adds the class there, and
``python -m mmlbdata.exports.vlmevalkit_dataset PATH/TO/VLMEvalKit/run.py --data vh_single_8k
--model ...`` registers it and runs ``run.py`` itself, unchanged, with the remaining arguments.
Set ``LMUData`` to the export folder: the class serves the configs listed in its
``mmlb_vlmevalkit.json``. ``evaluate`` takes ``mmlb eval``'s parity, protocol and judge from the
environment (``MMLB_PARITY``, ``MMLB_PROTOCOL``, ``MMLB_JUDGE_*``: :mod:`.harness_options`), reports
rows it cannot score (a summary without a judge) in an ``unscorable`` column instead of failing,
and names each metric's ``score`` as VLMEvalKit's primary metric (``report_primary_metric``).
"""
from __future__ import annotations

import json
import logging
import os
import runpy
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any, Optional

from mmlbdata.core.tokens import IMAGE_PLACEHOLDER

logger = logging.getLogger(__name__)
CLASS_NAME = "MMLBDataset"
LISTING = "mmlb_vlmevalkit.json"  # the configs an export folder holds (written by export_tsv)
INSTALL_HINT = ("VLMEvalKit is not installed: git clone https://github.com/open-compass/VLMEvalKit && "
                "pip install -e VLMEvalKit")


class VLMEvalKitMissingError(ImportError):
    """``vlmeval`` cannot be imported."""


def lmu_root() -> Path:
    """VLMEvalKit's data folder: ``$LMUData``, else its default ``~/LMUData``."""
    return Path(os.environ.get("LMUData") or Path.home() / "LMUData")


def exported_configs(root: Optional[Path] = None) -> list[str]:
    """Config names listed by the export in ``root`` (none when it holds no mmlb export)."""
    path = Path(root or lmu_root()) / LISTING
    if not path.is_file():
        return []
    return list(json.loads(path.read_text(encoding="utf-8")).get("configs", []))


def interleave(prompt: str, images: list[str]) -> list[dict]:
    """VLMEvalKit's message list: text and image items in the order of the prompt's ``<image>``."""
    segments = prompt.split(IMAGE_PLACEHOLDER)
    if len(segments) != len(images) + 1:
        raise ValueError(f"prompt has {len(segments) - 1} {IMAGE_PLACEHOLDER} but the row has {len(images)} images")
    messages: list[dict] = []
    for index, segment in enumerate(segments):
        if segment:
            messages.append({"type": "text", "value": segment})
        if index < len(images):
            messages.append({"type": "image", "value": images[index]})
    return messages


def _as_list(value: Any) -> list[str]:
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value]
    text = str(value)
    if text.startswith("["):
        import ast

        return [str(v) for v in ast.literal_eval(text)]
    return [text] if text and text != "nan" else []


def _example(row: dict) -> dict:
    """The fields our metrics read, from one TSV / prediction-file row."""
    answers = row.get("answers")
    return {"id": str(row.get("id", row.get("index"))), "question": str(row.get("question", "")),
            "answers": json.loads(answers) if isinstance(answers, str) else [str(row.get("answer", ""))],
            "metric": row["metric"], "meta": row.get("meta") if isinstance(row.get("meta"), str) else "{}",
            "dataset": row.get("category", ""), "prompt": str(row.get("question", ""))}


def _prediction(row: dict) -> str:
    """The row's model output; VLMEvalKit writes a missing one as NaN."""
    prediction = row.get("prediction")
    return "" if prediction is None or str(prediction) == "nan" else str(prediction)


def _by_category(rows: list[dict]) -> dict[str, tuple[list[dict], dict[str, dict]]]:
    """Per category (a config), its examples and their predictions keyed by id, as
    ``evaluate_config`` takes them; an id twice in one category is refused (it would be one)."""
    groups: dict[str, tuple[list[dict], dict[str, dict]]] = defaultdict(lambda: ([], {}))
    for row in rows:
        example = _example(row)
        examples, predictions = groups[str(row.get("category", ""))]
        if example["id"] in predictions:
            raise ValueError(f"category {row.get('category', '')!r}: id {example['id']!r} appears twice")
        examples.append(example)
        predictions[example["id"]] = {"prediction": _prediction(row)}
    return groups


def score_rows(rows: list[dict], metric_options: Optional[dict] = None) -> list[dict]:
    """One line per (category, metric): ``n``, the metric's own aggregate ``score`` and the rows it
    could not score (``unscorable``, with the ``note`` saying why), scored by ``mmlb eval``'s own
    :func:`~mmlbdata.evaluation.evaluate.evaluate_config` (one scoring path) with ``mmlb eval``'s
    options: ``metric_options``, else those of the environment (:mod:`.harness_options`:
    ``MMLB_PARITY``, ``MMLB_PROTOCOL``, ``MMLB_JUDGE_*``)."""
    from mmlbdata.evaluation.evaluate import evaluate_config
    from mmlbdata.exports import harness_options

    options = harness_options.metric_options() if metric_options is None else metric_options
    table = []
    for category, (examples, predictions) in sorted(_by_category(rows).items()):
        scored = evaluate_config(examples, predictions, options)
        for metric_name, aggregate in sorted(scored["metrics"].items()):
            count = sum(1 for example in examples if example["metric"] == metric_name)
            table.append({"category": category, "metric": metric_name, "n": count,
                          "score": float(aggregate["score"]), "unscorable": int(aggregate.get("unscorable", 0))})
            if aggregate.get("note"):
                logger.warning("%s %s: %s", category, metric_name, aggregate["note"])
    return table


def primary_metric(metrics: Optional[dict]) -> dict:
    """The score lines of VLMEvalKit's flattened summary (``category=..|metric=..|score``), for
    ``report_primary_metric``. VLMEvalKit's own pick (vlmeval/dataset/image_base.py @e8e78f05 L17-50
    ``_choose_primary_metric_key``) ranks keys containing "acc" first and breaks ties by name, so
    ``category=vh_single|metric=binary_acc|n`` (the row count) beat ``...|score``; only numbers
    are kept, as there (a NaN score of unscorable rows is no primary metric)."""
    if not isinstance(metrics, dict):
        return {}
    return {str(key): float(value) for key, value in metrics.items()
            if str(key).split("|")[-1] == "score" and _finite_number(value)}


def _finite_number(value: Any) -> bool:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return False
    return not isinstance(value, bool) and number == number and abs(number) != float("inf")


def _read_predictions(eval_file: str):
    try:
        from vlmeval.smp import load
        return load(eval_file)
    except ImportError:
        import pandas as pd

        return pd.read_excel(eval_file) if eval_file.endswith(".xlsx") else pd.read_csv(eval_file, sep="\t")


def dataset_class(base: Optional[type] = None) -> type:
    """The dataset class, built on VLMEvalKit's ``ImageBaseDataset`` (or ``base``)."""
    if base is None:
        try:
            from vlmeval.dataset.image_base import ImageBaseDataset as base
        except ImportError as err:
            raise VLMEvalKitMissingError(INSTALL_HINT) from err

    class MMLBDataset(base):
        """mmlb configs exported as TSV: VQA-type, interleaved prompts, scored by mmlbdata."""

        TYPE = "VQA"
        MODALITY = "IMAGE"
        DATASET_URL: dict = {}
        DATASET_MD5: dict = {}

        @classmethod
        def supported_datasets(cls) -> list[str]:
            return exported_configs()

        def load_data(self, dataset: str):
            import pandas as pd

            path = lmu_root() / f"{dataset}.tsv"
            if not path.is_file():
                raise FileNotFoundError(f"{path}: no such mmlb TSV (set LMUData to the export folder)")
            return pd.read_csv(path, sep="\t", keep_default_na=False, dtype={"index": str})

        def build_prompt(self, line):
            if isinstance(line, int):
                line = self.data.iloc[line]
            paths = _as_list(line["image_path"]) if getattr(self, "meta_only", True) else self.dump_image(line)
            return interleave(str(line["question"]), list(paths))

        @classmethod
        def report_primary_metric(cls, metrics):
            return primary_metric(metrics)

        def evaluate(self, eval_file: str, **judge_kwargs):
            import pandas as pd

            table = pd.DataFrame(score_rows(_read_predictions(eval_file).to_dict("records")))
            table.to_csv(str(Path(eval_file).with_suffix("")) + "_mmlb_score.csv", index=False)
            return table

    MMLBDataset.__name__ = MMLBDataset.__qualname__ = CLASS_NAME
    return MMLBDataset


def register(module: Any = None, base: Optional[type] = None) -> type:
    """Make the class visible to VLMEvalKit's ``build_dataset`` and ``--config`` lookups
    (``module``: ``vlmeval.dataset`` unless given; ``base``: see :func:`dataset_class`)."""
    if module is None:
        try:
            import vlmeval.dataset as module
        except ImportError as err:
            raise VLMEvalKitMissingError(INSTALL_HINT) from err
    existing = getattr(module, CLASS_NAME, None)
    cls = existing if existing is not None else dataset_class(base)
    setattr(module, CLASS_NAME, cls)
    classes = getattr(module, "DATASET_CLASSES", None)
    if isinstance(classes, list) and cls not in classes:
        classes.insert(0, cls)  # ahead of the custom-TSV guesses
    supported = getattr(module, "SUPPORTED_DATASETS", None)
    if isinstance(supported, list):
        supported.extend(name for name in exported_configs() if name not in supported)
    return cls


def main(argv: Optional[list[str]] = None) -> int:
    """``python -m mmlbdata.exports.vlmevalkit_dataset RUN_PY [run.py arguments]``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0].endswith(".py") and not Path(argv[0]).is_file():
        print(f"error: {argv[0]}: no such file (VLMEvalKit's run.py, from a clone of VLMEvalKit)",
              file=sys.stderr)
        return 2
    if not argv or not argv[0].endswith(".py"):
        print("usage: python -m mmlbdata.exports.vlmevalkit_dataset PATH/TO/VLMEvalKit/run.py "
              "--data <config> --model <model> ...  (with LMUData=<mmlb export folder>)", file=sys.stderr)
        return 2
    try:
        register()
    except VLMEvalKitMissingError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    run_py = str(Path(argv[0]).resolve())
    sys.argv = [run_py, *argv[1:]]
    sys.path.insert(0, str(Path(run_py).parent))
    runpy.run_path(run_py, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
