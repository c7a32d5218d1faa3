"""Score a predictions JSONL against a built config: the engine behind ``mmlb eval``.

Predictions: one JSON object per line, ``{"id": ..., "config": ..., "prediction": "..."}``
(extra keys kept). Bad lines, unknown ids, duplicates and missing predictions are reported,
never fatal. Examples are read without their images (nothing is decoded).
"""
from __future__ import annotations

import json
import logging
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from mmlbdata.core.lengths import ALL_LENGTHS
from mmlbdata.core.suggest import did_you_mean
from mmlbdata.evaluation import uncertainty
from mmlbdata.evaluation.metrics import get_metric
from mmlbdata.evaluation.metrics.common import meta_of
from mmlbdata.evaluation.metrics.registry import GENERATED_TOKENS, mean, parity_of
from mmlbdata.official.names import CATEGORIES  # dataset-name prefix -> task category (meta["category"] wins)

log = logging.getLogger(__name__)

#: the example's position in its config (every row counts, scored or not), for order-dependent
#: official rules
ROW_KEY = "_row"
EXAMPLE_COLUMNS = ("id", "dataset", "length", "num_tokens", "question", "answers", "metric", "meta")


@dataclass
class Predictions:
    rows: dict[str, dict[str, dict]] = field(default_factory=dict)  # config ("" = any) -> id -> row
    malformed: list[dict] = field(default_factory=list)
    duplicates: list[str] = field(default_factory=list)

    def configs(self) -> list[str]:
        return sorted(c for c in self.rows if c)

    def for_config(self, config: str) -> dict[str, dict]:
        merged = dict(self.rows.get("", {}))
        merged.update(self.rows.get(config, {}))
        return merged


#: what one line of a predictions file looks like (printed in every message about the format)
PREDICTION_EXAMPLE = '{"id": "vh_single_00000_d0.0", "config": "vh_single_8k", "prediction": "Yes"}'


class UnknownConfigError(KeyError):
    """A config the dataset folder does not have (the message names those it has)."""

    def __str__(self) -> str:
        return self.args[0]


class PredictionsError(ValueError):
    """A predictions file nothing can be read from; the message says what is wrong with it."""


def _keys(row: dict) -> str:
    return ", ".join(sorted(map(str, row))) or "none"


def _json_problem(line: str, exc: Exception) -> str:
    """Why ``line`` is not JSON: "truncated" when the text stops before the value closes."""
    if not isinstance(exc, json.JSONDecodeError):
        why = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        return f"not JSON: {why}"[:200]
    if exc.msg.startswith("Unterminated string") or exc.pos >= len(line.rstrip()):
        return f"truncated: the JSON stops at column {len(line.rstrip())}, before the object closes"
    return f"not JSON: {exc.msg} (column {exc.colno})"


#: JSON's names for what ``json.loads`` gives (a message says ``null``, not ``NoneType``)
JSON_TYPES = {type(None): "null", bool: "boolean", int: "number", float: "number", str: "string",
              list: "array", dict: "object"}


def _json_type(value) -> str:
    return JSON_TYPES.get(type(value), type(value).__name__)


def _row_problem(row) -> str | None:
    """What keeps a parsed line from being a prediction (None: it is one)."""
    if not isinstance(row, dict):
        return f"a JSON {_json_type(row)}, not an object"
    if "id" not in row:
        return f"no 'id' key (keys found: {_keys(row)})"
    if "prediction" not in row:
        return f"no 'prediction' key (keys found: {_keys(row)})"
    if row["prediction"] is None:
        return "'prediction' is null, not a string (write \"\" for an empty answer)"
    if not isinstance(row["prediction"], str):
        return f"'prediction' is a JSON {_json_type(row['prediction'])}, not a string"
    return None


def read_predictions(path: str | Path) -> Predictions:
    """Parse the JSONL; a line that is not UTF-8, not JSON (or truncated), or not an object with
    an ``id`` and a string ``prediction`` is recorded in ``malformed`` with its line number and
    why, and skipped (one bad line never stops the run). A file with no usable line at all raises
    :class:`PredictionsError` naming what it holds instead (:func:`unusable_file`)."""
    preds = Predictions()
    if _head(path).startswith(b"["):  # no JSON line starts with "[" (each is an object), a JSON array does
        raise PredictionsError(unusable_file(path, []))
    with open(path, "rb") as f:
        for line_no, raw in enumerate(f, 1):
            try:
                line = (raw.removeprefix(UTF8_BOM) if line_no == 1 else raw).decode("utf-8")
            except UnicodeDecodeError as exc:
                preds.malformed.append({"line": line_no, "error": f"not UTF-8 (byte {exc.start}: {exc.reason})"})
                continue
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except (ValueError, RecursionError) as exc:  # ValueError: e.g. an integer over Python's digit limit
                preds.malformed.append({"line": line_no, "error": _json_problem(line, exc)})
                continue
            _add_prediction(preds, row, {"line": line_no})
    if preds.malformed and preds.malformed[0]["line"] == 1 and _head(path).startswith(b"{") \
            and preds.malformed[0]["error"].startswith(("truncated", "not JSON")):
        whole = _one_object(path)  # a pretty-printed object, or {id: prediction}: not JSON lines at all
        if whole is not None:
            preds = Predictions()
            for key, row in whole:
                _add_prediction(preds, row, {"key": key})
    if not preds.rows:
        raise PredictionsError(unusable_file(path, preds.malformed))
    return preds


UTF8_BOM = b"\xef\xbb\xbf"  # what some Windows editors put first; JSON parsers refuse it


def _add_prediction(preds: Predictions, row, where: dict) -> None:
    """One parsed prediction into ``preds`` (or its problem into ``malformed``, ``where`` it was)."""
    problem = _row_problem(row)
    if problem:
        keys = {"keys": sorted(map(str, row))} if isinstance(row, dict) else {}
        preds.malformed.append({**where, "error": problem, **keys})
        return
    config, ident = str(row.get("config") or ""), str(row["id"])
    bucket = preds.rows.setdefault(config, {})
    if ident in bucket and not bucket[ident].get("error"):  # a failed request's line: replaced by its retry
        preds.duplicates.append(ident)
    bucket[ident] = row


def _one_object(path: str | Path) -> list[tuple[str, object]] | None:
    """The file read as one JSON object: one prediction (``{"id": ..., "prediction": ...}``,
    pretty-printed), ``{id: prediction}`` or ``{id: {"prediction": ...}}``, as (key, row) pairs; None
    when it is not one object."""
    try:
        value = json.loads(Path(path).read_bytes().removeprefix(UTF8_BOM).decode("utf-8"))
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        return None
    if not isinstance(value, dict):
        return None
    if "id" in value:  # one prediction (or a record that lacks one: said as for a line)
        return [(str(value["id"]), value)]
    return [(str(key), {"id": key, **item} if isinstance(item, dict) else {"id": key, "prediction": item})
            for key, item in value.items()]


def _head(path: str | Path) -> bytes:
    """The file's first bytes after any leading white space (or a BOM)."""
    with open(path, "rb") as f:
        return f.read(4096).lstrip().removeprefix(UTF8_BOM).lstrip()


def unusable_file(path: str | Path, malformed: list[dict]) -> str:
    """The one message for a predictions file without a single usable line: empty, a JSON array,
    lines without the needed keys, a truncated line, or not JSON lines at all."""
    expected = f"expected JSON lines, one object per line, e.g. {PREDICTION_EXAMPLE}"
    head = _head(path)
    if not head:
        return f"{path} is empty: {expected}"
    if head.startswith(b"["):
        return (f"{path} is a JSON array, not JSON lines: {expected} "
                f"(convert with: jq -c '.[]' {path} > predictions.jsonl)")
    if all(m["error"].startswith("no '") for m in malformed):
        found = sorted({key for m in malformed for key in m["keys"]})
        return (f"{path}: no line has both 'id' and 'prediction' (keys found: {', '.join(found)}); "
                f"{expected}")
    truncated = [m for m in malformed if m["error"].startswith("truncated")]
    if truncated and "line" in truncated[0]:
        return f"{path}: line {truncated[0]['line']} is {truncated[0]['error']}; no other line is usable"
    first = malformed[0]
    where = f"line {first['line']}" if "line" in first else f"key {first['key']!r} of its one JSON object"
    return f"{path} is not JSON lines: {where}: {first['error']}; {expected}"


def load_examples(data_dir: str | Path, config: str) -> list[dict]:
    """The config's test split as plain dicts, without the ``images`` column.

    Streamed straight from the parquet files: the non-streaming loader caches an Arrow copy
    keyed by folder *name* and config, so a rebuilt folder of the same name would be read
    stale (and images would be copied for nothing). A local folder in this library's layouts
    is read with pyarrow, only these columns (``datasets`` would resolve the folder's files
    again for every config and import torch for its streaming workers); anything else (a Hub
    repository, another layout) through ``datasets``.
    """
    local = _local_shards(data_dir, config)
    if local:
        return _read_columns(local)
    import datasets

    # decode(False): streaming from the Hub would otherwise fetch and decode every image first
    ds = datasets.load_dataset(str(data_dir), config, split="test", streaming=True).decode(False)
    names = ds.column_names or list(ds.features or [])
    ds = ds.select_columns([c for c in names if c in EXAMPLE_COLUMNS])
    return [dict(row) for row in ds]


def _local_shards(data_dir: str | Path, config: str) -> list[Path]:
    """The parquet files of ``config`` in a local built folder (none: not one)."""
    from mmlbdata.dataset.stats import shard_files

    return shard_files(Path(data_dir), config) if Path(data_dir).is_dir() else []


def _read_columns(files: list[Path]) -> list[dict]:
    """The example columns of ``files``' rows, in file order, as plain dicts."""
    import pyarrow.parquet as pq

    rows: list[dict] = []
    for file in files:
        names = pq.read_schema(file).names
        rows += pq.read_table(file, columns=[c for c in names if c in EXAMPLE_COLUMNS]).to_pylist()
    return rows


def _length_key(length) -> tuple[int, int, str]:
    """Sort key: "8k" < "16k" < "128k" < 200000 < other labels (alphabetical)."""
    text = str(length)
    match = _LENGTH_TEXT.fullmatch(text)
    if not match:
        return (1, 0, text)
    return (0, int(match.group(1)) * (1024 if match.group(2) else 1), text)


_LENGTH_TEXT = re.compile(r"(\d+)([kK]?)")


def length_label(length) -> str:
    """8192 -> "8k" for the standard (and extended) budgets; anything else as text."""
    try:
        return {tokens: name for name, tokens in ALL_LENGTHS.items()}.get(int(length), str(length))
    except (TypeError, ValueError):
        return str(length)


def category_of(example: dict) -> str:
    """The example's task category for the report and the plot."""
    explicit = meta_of(example).get("category")
    if explicit:
        return str(explicit)
    dataset = str(example.get("dataset") or "unknown")
    lowered = dataset.lower()
    for prefix, category in CATEGORIES.items():
        if lowered.startswith(prefix):
            return category
    return dataset


def _table(keys: Sequence, scores: Sequence[float], answered: Sequence[bool]) -> dict:
    """{key: {"score": mean, "n": count, "answered", "stderr", "ci95"}} of the scores grouped by
    their keys, keys in length order then alphabetical (``answered``: a flag per score; an
    unanswered example is in the mean with score 0)."""
    groups: dict = {}
    for key, score, was_answered in zip(keys, scores, answered):
        groups.setdefault(key, []).append((score, was_answered))
    return {key: _cell([score for score, _ in pairs], sum(flag for _, flag in pairs))
            for key, pairs in sorted(groups.items(), key=lambda item: _length_key(item[0]))}


def _cell(scores: list[float], answered: int) -> dict:
    """One table cell: mean, count, answered, stderr and bootstrap interval."""
    return {"score": mean(scores), "n": len(scores), "answered": answered, **uncertainty.summary(scores)}


def _label_tables(rows: list[dict], scores: list[float], answered: list[bool]) -> tuple:
    """(by_category, by_length, by_category_length) of the headline rows."""
    labels = [(category_of(row), length_label(row.get("length"))) for row in rows]
    by_category = _table([category for category, _ in labels], scores, answered)
    by_length = _table([length for _, length in labels], scores, answered)
    both: dict[tuple[str, str], list[float]] = {}
    for label, score in zip(labels, scores):
        both.setdefault(label, []).append(score)
    return by_category, by_length, {f"{category}|{length}": {"score": mean(values), "n": len(values)}
                                    for (category, length), values in sorted(both.items())}


def counts_missing(metric_options: dict | None) -> bool:
    """Whether an example without a prediction is in the headline as a wrong answer (score 0).

    Yes by default: saying nothing is not right, and a score over the answered examples only
    rises as a model answers fewer. ``parity="official"``: no, as MMLongBench's eval.py (the
    official run loop) skips an example whose output is None and averages the others."""
    return parity_of((metric_options or {}).get("*", {})) != "official"


def _headline(rows: list[dict], result_at: Sequence, count_missing: bool) -> list[tuple[dict, float, bool]]:
    """(row, score, answered) for every row the headline averages, in config order, given each
    row's result (None: unanswered): the scored ones (official skips excepted), and the unanswered
    ones with 0 when ``count_missing``, but for a metric this run cannot score (a summary without
    a judge: its answers are left out as unscorable, so a 0 for its unanswered examples alone
    would read as a score)."""
    unscorable = {str(row.get("metric")) for row, r in zip(rows, result_at) if r is not None and r.extra
                  and r.extra.get("unscorable")}
    out = []
    for row, result in zip(rows, result_at):
        if result is None:
            if count_missing and str(row.get("metric")) not in unscorable:
                out.append((row, 0.0, False))
        elif not result.extra.get("left_out"):
            out.append((row, result.score, True))
    return out


def evaluate_config(examples: list[dict], predictions: dict[str, dict], metric_options: dict | None = None,
                    protocol: str | None = None) -> dict:
    """Score one config. The headline ``score`` averages every example of the config, an unanswered
    one as wrong (``counts_missing``), with its ``stderr`` and bootstrap ``ci95``; ``answered`` of
    ``total`` and ``score_answered`` (the mean over the answered examples) beside it. Also: per
    metric, aggregates over the answered examples; tables by category/length (as the headline) and
    meta groups (answered only); per-example {id, score, parsed}; problems (unknown ids, missing
    predictions). ``protocol``: MMLongBench's (``mmlbdata.official.protocol``; None: the ``protocol``
    of ``metric_options["*"]``, else v1.1)."""
    return _evaluate_config(examples, predictions, metric_options, protocol)[0]


def scored_prediction(metric, row: dict) -> str:
    """The text ``metric`` scores. A metric that, under ``--parity official``, prepends the
    loader's system_template to the model's output (MMLongBench's, :class:`MMLongBenchMetric`) gets
    the output without the answer prefix ``mmlb run`` already put before it (``answer_prefix``),
    so the prefix is there once, as in ``eval_api.py``'s text."""
    prediction = row["prediction"]
    prefix = row.get("answer_prefix")
    if getattr(metric, "prepends_system_template", False) and isinstance(prefix, str) and prefix \
            and prediction.startswith(prefix):
        return prediction[len(prefix):]
    return prediction


def _evaluate_config(examples, predictions, metric_options=None, protocol=None):
    """:func:`evaluate_config`, and the headline rows ((example, score, answered), config order)
    that :func:`evaluate` sums per dataset."""
    metric_options = dict(metric_options or {})
    if protocol is not None:
        from mmlbdata.official.protocol import get as get_protocol

        metric_options["*"] = {**metric_options.get("*", {}), "protocol": get_protocol(protocol).name}
    by_id = dict(zip((str(example["id"]) for example in examples), examples))  # an id twice: one row
    rows, ids = list(by_id.values()), list(by_id)
    result_at: list = [None] * len(rows)
    metrics_out, groups_out, scored = {}, {}, []
    for name, positions in _by_metric(rows, ids, predictions):
        metric = get_metric(name, **{**metric_options.get("*", {}), **metric_options.get(name, {})})
        if metric.reads_row:
            for row, example in enumerate(examples):
                example.setdefault(ROW_KEY, row)  # official binary_acc's default answer depends on it
        exs = [rows[i] for i in positions]
        if metric.reads_generated_tokens:
            for i in positions:
                rows[i][GENERATED_TOKENS] = predictions[ids[i]].get("generated_tokens")
        results = list(metric.score_many([scored_prediction(metric, predictions[ids[i]]) for i in positions], exs))
        metrics_out[name] = metric.aggregate(results, exs)
        groups_out.update(_meta_groups(metric, exs, results))
        for i, result in zip(positions, results):
            result_at[i] = result
            scored.append((ids[i], result))
    count_missing = counts_missing(metric_options)
    headline = _headline(rows, result_at, count_missing)
    values, answered = [score for _, score, _ in headline], [flag for _, _, flag in headline]
    kept = [result.score for _, result in scored if not result.extra.get("left_out")]
    by_category, by_length, by_category_length = _label_tables([row for row, _, _ in headline], values, answered)
    unknown, missing = sorted(predictions.keys() - by_id.keys()), sorted(by_id.keys() - predictions.keys())
    result = {
        "n": len(values),
        "total": len(rows),
        "answered": len(scored),
        **({"left_out": len(scored) - len(kept)} if len(scored) != len(kept) else {}),
        "score": mean(values),
        **uncertainty.summary(values),
        "missing_counted_as_wrong": count_missing,
        "score_answered": mean(kept),
        "metrics": metrics_out,
        "by_category": by_category,
        "by_length": by_length,
        "by_category_length": by_category_length,
        "groups": groups_out,
        "problems": {"unknown_ids": unknown, "missing_predictions": len(missing), "missing_ids": missing[:100]},
        "examples": [{"id": ident, "score": r.score, "parsed": r.parsed, **({"extra": r.extra} if r.extra else {})}
                     for ident, r in scored],
    }
    return result, headline


def _by_metric(rows: list[dict], ids: list[str], predictions: dict) -> list[tuple[str, list[int]]]:
    """(metric name, positions of the answered rows it scores), by name."""
    groups: dict[str, list[int]] = {}
    for i, (row, ident) in enumerate(zip(rows, ids)):
        if ident in predictions:
            groups.setdefault(row["metric"], []).append(i)
    return sorted(groups.items())


def _meta_groups(metric, examples: list[dict], results: list) -> dict:
    """The metric's ``group_by`` tables over its answered examples (official skips excepted)."""
    kept = [(meta_of(example), result.score) for example, result in zip(examples, results)
            if not (result.extra and result.extra.get("left_out"))]
    tables = {}
    for key in metric.group_by:
        grouped = [(str(meta[key]), score) for meta, score in kept if key in meta]
        if grouped:
            tables[key] = _table([k for k, _ in grouped], [score for _, score in grouped], [True] * len(grouped))
    return tables


def _absolute(path: str | Path) -> str:
    """A local path as an absolute one (report.json is read from other folders); a Hub id as given."""
    return str(Path(path).expanduser().absolute()) if Path(path).expanduser().exists() else str(path)


def check_configs(data_dir: str | Path, configs: list[str]) -> None:
    """Before any scoring: every config is built in a local ``data_dir`` (a KeyError naming the
    configs there, and the close ones, otherwise). A Hub repository is left to ``datasets``."""
    from mmlbdata.dataset.writer import built_configs

    if not Path(data_dir).is_dir():
        return
    there = sorted(set().union(*built_configs(data_dir).values()))
    if not there:  # not a folder mmlb built (a dataset of another shape): datasets decides
        return
    for config in configs:
        if config not in there:
            listed = ", ".join(there[:10]) + (" ..." if len(there) > 10 else "") if there else "none"
            raise UnknownConfigError(f"config {config!r} is not built in {_absolute(data_dir)}"
                                     f"{did_you_mean(config, there)}; configs there: {listed}")


def built_protocol(data_dir: str | Path, config: str) -> str | None:
    """The MMLongBench protocol a local build of ``config`` recorded in its manifest (None: not
    recorded, not a local folder, or an unreadable manifest)."""
    from mmlbdata.dataset.writer import read_manifest

    try:
        protocol = (read_manifest(data_dir, config) or {}).get("protocol") if Path(data_dir).is_dir() else None
    except (OSError, ValueError, AttributeError):
        return None
    return str(protocol) if protocol else None


def evaluate(predictions_path: str | Path, data_dir: str | Path, configs: list[str] | None = None,
             metric_options: dict | None = None, parity: str = "default", protocol: str | None = None) -> dict:
    """Score every requested config (default: the configs named in the predictions).

    ``parity="official"``: every metric returns what the benchmark's official scorer returns
    (bugs included); the default fixes them, each difference listed in ``deviations.py``.
    ``protocol``: MMLongBench's ``v1.1`` (default) or ``v1.0`` (``mmlbdata.official.protocol``); under v1.1
    document QA is scored by the LLM judge when ``metric_options["docqa"]`` has ``judge`` and
    ``judge_prompts`` (``docqa_judge``), else by the rules.
    """
    from mmlbdata.evaluation.docqa_judge import prepare as prepare_docqa_judge
    from mmlbdata.official import protocol as protocols

    parity_of({"parity": parity})
    chosen = protocols.get(protocol)
    metric_options = dict(metric_options or {})
    metric_options["*"] = {**metric_options.get("*", {}), "parity": parity, "protocol": chosen.name}
    docqa_judge = prepare_docqa_judge(metric_options, chosen)
    preds = read_predictions(predictions_path)
    configs = configs or preds.configs()
    if not configs:
        keys = sorted({str(k) for rows in preds.rows.values() for row in rows.values() for k in row})
        raise PredictionsError(f"{predictions_path}: no line names its config (keys found: {', '.join(keys)}); "
                               "pass --config NAME, or add a 'config' key to each line")
    report = {"predictions": _absolute(predictions_path), "data": _absolute(data_dir), "parity": parity,
              "protocol": {"name": chosen.name, "repository": protocols.REPOSITORY, "commit": chosen.commit},
              **({"docqa_judge": docqa_judge} if docqa_judge else {}), "configs": {},
              "problems": {"malformed_lines": preds.malformed, "duplicate_ids": sorted(set(preds.duplicates))}}
    named = set(preds.configs())
    other = sorted(named - set(configs))
    if other:
        report["problems"]["other_configs"] = other
    by_dataset: dict[str, list[float]] = defaultdict(list)
    check_configs(data_dir, configs)
    for config in configs:
        examples = load_examples(data_dir, config)
        result, headline = _evaluate_config(examples, preds.for_config(config), metric_options)
        built = built_protocol(data_dir, config)
        if built is not None and built != chosen.name:  # prompts of one protocol, scoring of the other
            result["problems"]["protocol_mismatch"] = {"built": built, "scored": chosen.name}
        report["configs"][config] = result
        for example, score, _ in headline:
            by_dataset[str(example.get("dataset"))].append(score)
    per_dataset = {k: mean(v) for k, v in sorted(by_dataset.items())}
    report["overall"] = {
        "mean_over_configs": mean(r["score"] for r in report["configs"].values()),
        "by_dataset": per_dataset,
        # ReadBench's overall number: every source dataset weighs the same
        "mean_over_datasets": mean(per_dataset.values()),
    }
    return report
