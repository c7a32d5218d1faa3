"""The harness exports score as ``mmlb eval`` does and never end a whole run (issue 35).

* VLMEvalKit: ``MMLBDataset.evaluate`` takes ``mmlb eval``'s parity and protocol (``MMLB_PARITY``,
  ``MMLB_PROTOCOL``); its primary metric is each metric's ``score``, checked with VLMEvalKit's own
  summary flattening and primary-metric pick read from a VLMEvalKit git mirror at e8e78f05
  (vlmeval/smp/status_report.py ``flatten_summary_metrics``; vlmeval/dataset/image_base.py L17-50
  ``_choose_primary_metric_key``, run unchanged) for every config family of the release fixture.
* A summary config without a judge: its rows are reported unscorable, in VLMEvalKit and lmms-eval,
  and the other configs are scored.
"""
from __future__ import annotations

import ast
import json
import math
import types

import pandas as pd
import pytest

from mmlbdata.exports import lmms_eval_hooks as hooks
from mmlbdata.exports.vlmevalkit import export_tsv
from mirrors import git_show, mirror_git
from mmlbdata.exports.vlmevalkit_dataset import primary_metric, register, score_rows
from test_mmlb_release import _ImageBaseStandIn, built_release, rel  # noqa: F401 (fixtures)

VLMEVALKIT = "e8e78f05"


def vlmevalkit_functions() -> dict:
    """VLMEvalKit's own functions, taken from the mirror at e8e78f05 and run unchanged: the
    top-level functions and constants of status_report.py and image_base.py (from their syntax
    trees, without the package imports this environment lacks), executed with numpy and pandas."""
    git_dir = mirror_git("MMLB_VLMEVALKIT_GIT", "open-compass+VLMEvalKit")
    if git_dir is None:
        pytest.skip("no open-compass/VLMEvalKit git mirror (set MMLB_VLMEVALKIT_GIT)")
    import numpy

    namespace: dict = {"np": numpy, "pd": pd, "Any": object}
    for name in ("vlmeval/smp/status_report.py", "vlmeval/dataset/image_base.py"):
        text = git_show(git_dir, VLMEVALKIT, name).decode("utf-8")
        for node in ast.parse(text).body:  # functions and constants; not the package's own imports
            if isinstance(node, (ast.FunctionDef, ast.Assign)):
                try:
                    exec(compile(ast.Module([node], []), name, "exec"), namespace)  # noqa: S102 - pinned upstream code
                except NameError:  # a module-level logger of the package: not needed here
                    pass
    return namespace


def _row(metric: str, prediction: str, answer: str, category: str = "c", ident: str = "1", **meta) -> dict:
    return {"id": ident, "category": category, "metric": metric, "answers": json.dumps([answer]),
            "meta": json.dumps(meta), "question": "", "prediction": prediction}


def test_vlmevalkit_scores_with_mmlb_evals_parity_and_protocol(monkeypatch):
    """``MMLB_PARITY=official``: "0" for the gold "No" is the default answer 0 (data.py @22b9f27
    DefaultAnswerGenerator ``[0, 1, 1, 0]``), 1 officially, 0 by default (tests/test_eval_parity.py);
    ``MMLB_PROTOCOL=v1.0`` reads only the first line after ``Answer:`` (utils.py @26197d2 parse_output)."""
    rows = [_row("binary_acc", "0", "No")]
    monkeypatch.delenv("MMLB_PARITY", raising=False)
    assert score_rows(rows)[0]["score"] == 0.0
    monkeypatch.setenv("MMLB_PARITY", "official")
    assert score_rows(rows)[0]["score"] == 1.0
    monkeypatch.delenv("MMLB_PARITY")
    doc = [_row("docqa", "Let me think.\nAnswer: 5", "5", dataset="text_doc", answer_format="Integer")]
    doc[0]["category"] = "text_doc"
    assert score_rows(doc)[0]["score"] == 1.0
    monkeypatch.setenv("MMLB_PARITY", "official")
    monkeypatch.setenv("MMLB_PROTOCOL", "v1.0")
    assert score_rows([{**doc[0], "prediction": "Let me think.\nAnswer: 5"}])[0]["score"] == 0.0


def test_primary_metric_is_the_score():
    metrics = {"category=vh_single|metric=binary_acc|n": 18, "category=vh_single|metric=binary_acc|score": 0.5,
               "category=vh_single|metric=binary_acc|unscorable": 0, "category=gov|metric=summ_judge|score": math.nan}
    assert primary_metric(metrics) == {"category=vh_single|metric=binary_acc|score": 0.5}


def test_vlmevalkit_run_reports_the_score_as_primary_for_every_family(built_release, tmp_path, monkeypatch):
    """Every config of the release fixture (VRAG, VH, ICL, summaries, document QA, MM-NIAH), scored
    with its gold as prediction and no judge: the flattened summary VLMEvalKit writes has the
    score as the primary metric (VLMEvalKit's own pick would take the row count of any metric
    whose name holds "acc"); the summaries are unscorable, not an error."""
    vlm = vlmevalkit_functions()
    out, results = built_release
    configs = sorted(name for name, result in results.items() if result.status == "built")
    export_tsv(out, tmp_path / "lmu", configs=configs, images="path")
    monkeypatch.setenv("LMUData", str(tmp_path / "lmu"))
    for name in ("MMLB_PARITY", "MMLB_PROTOCOL", "MMLB_JUDGE_BASE_URL", "OPENAI_BASE_URL",
                 "MMLB_JUDGE_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    cls = register(types.SimpleNamespace(DATASET_CLASSES=[], SUPPORTED_DATASETS=[]), base=_ImageBaseStandIn)
    wrong = []
    for config in configs:
        predictions = pd.read_csv(tmp_path / "lmu" / f"{config}.tsv", sep="\t", keep_default_na=False)
        predictions["prediction"] = ["Answer: " + str(a) for a in predictions["answer"]]
        predictions.to_csv(tmp_path / f"model_{config}.tsv", sep="\t", index=False)
        table = cls(dataset=config).evaluate(str(tmp_path / f"model_{config}.tsv"))
        flat = vlm["flatten_summary_metrics"](table)
        primary = cls.report_primary_metric(flat)
        summary = "summ_judge" in set(table["metric"])
        if summary:  # no judge: unscorable rows, a NaN score, no primary metric, and no exception
            assert table["unscorable"].tolist() == table["n"].tolist() and table["score"].isna().all()
            assert primary == {}
            continue
        assert list(primary) == [k for k in flat if k.endswith("|score")] and len(primary) == 1, (config, flat)
        assert list(primary.values())[0] == pytest.approx(table["score"].iloc[0])
        if vlm["_choose_primary_metric_key"](flat) != next(iter(primary)):
            wrong.append(config)
    assert any("gov" in c or "lexsum" in c for c in configs)
    assert {"vh_single_8k", "cars196_8k"} <= set(wrong)  # what VLMEvalKit alone would report


def test_lmms_eval_run_goes_on_past_a_summary_without_a_judge(monkeypatch):
    """lmms-eval calls ``process_results`` per doc and the aggregation per task: neither raises for a
    summary with no judge configured; the summary's score is NaN and says why, the VH task scores."""
    for name in ("MMLB_JUDGE_BASE_URL", "OPENAI_BASE_URL", "MMLB_JUDGE_API_KEY", "OPENAI_API_KEY", "MMLB_PARITY"):
        monkeypatch.delenv(name, raising=False)
    summary = {"id": "s", "dataset": "gov_report", "metric": "summ_judge", "answers": ["Gold."], "prompt": "",
               "meta": json.dumps({"keypoints": ["a"]})}
    vh = {"id": "v", "dataset": "vh_single", "metric": "binary_acc", "answers": ["Yes"], "prompt": "", "meta": "{}"}
    items = [hooks.process_results(summary, ["A summary."])["mmlb_score"] for _ in range(2)]
    assert all("needs an LLM judge" in i["extra"]["unscorable"] for i in items)
    assert math.isnan(hooks.aggregate(items)) and math.isnan(hooks.aggregate_stderr(items))
    scored = [hooks.process_results(vh, [p])["mmlb_score"] for p in ("Answer: Yes", "Answer: No")]
    assert hooks.aggregate(scored) == 0.5 and hooks.aggregate_stderr(scored) == pytest.approx(0.5)
