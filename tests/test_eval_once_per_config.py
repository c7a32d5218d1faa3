"""Work done once per config instead of once per example (issue 36) gives what the per-example
functions give: the report's category/length tables, MMNeedle's batch path, the memoised parses."""
from __future__ import annotations

import json
import re

import pytest

from mmlbdata.evaluation.evaluate import category_of, evaluate_config, length_label
from mmlbdata.evaluation.metrics import get_metric
from mmlbdata.evaluation.metrics import official as off
from mmlbdata.evaluation.metrics.common import meta_of


def _rows():
    """Interleaved datasets, metas (text, mapping, none, a category override) and lengths."""
    datasets = ["vh_single", "mmneedle_multi", "gov_report", "Mystery", None]
    metas = ["{}", json.dumps({"category": "Custom"}), None, {"k": 2}, "not json", ""]
    lengths = [8192, "16k", 200000, None, 131072, "8192"]
    return [{"id": f"r{i}", "dataset": datasets[i % 5], "meta": metas[i % 6], "length": lengths[i % 4],
             "answers": ["Yes" if i % 3 else "No"], "metric": "binary_acc"} for i in range(60)]


def test_category_and_length_tables_equal_the_per_example_labels():
    rows = _rows()
    predictions = {r["id"]: {"prediction": "yes" if i % 2 else "no"} for i, r in enumerate(rows)}
    report = evaluate_config([dict(r) for r in rows], predictions)
    scores = {e["id"]: e["score"] for e in report["examples"]}
    want_cat, want_len, want_both = {}, {}, {}
    for r in rows:
        c, l = category_of(r), length_label(r.get("length"))
        for table, key in ((want_cat, c), (want_len, l), (want_both, f"{c}|{l}")):
            table.setdefault(key, []).append(scores[r["id"]])
    assert {k: v["n"] for k, v in report["by_category"].items()} == {k: len(v) for k, v in want_cat.items()}
    assert {k: v["score"] for k, v in report["by_length"].items()} == {k: sum(v) / len(v) for k, v in want_len.items()}
    assert {k: v["n"] for k, v in report["by_category_length"].items()} == {k: len(v) for k, v in want_both.items()}
    assert report["by_category"]["Custom"]["n"] == 10 and "Mystery" in report["by_category"]


def test_meta_text_is_parsed_once_and_shared_read_only():
    example = {"meta": json.dumps({"k": 5, "category": "NIAH"})}
    assert meta_of(example) is meta_of({"meta": example["meta"]}) and meta_of(example) == {"k": 5, "category": "NIAH"}
    assert meta_of({"meta": "[1, 2]"}) == {} and meta_of({"meta": "{bad"}) == {} and meta_of({}) == {}
    mapping = {"k": 1}
    assert meta_of({"meta": mapping}) == mapping and meta_of({"meta": mapping}) is not mapping


def test_mmneedle_batch_path_equals_one_by_one_crashes_included():
    """MMNeedle's official score_many and score (one path) on hand-read cases, a k that the official
    spelling cannot use ("2": str - int) included (evaluate_multi.py: exact is string equality, so
    "-1; -1" for the gold "-1" exists but is not exact)."""
    examples = [{"id": "a", "answers": ["2, 1, 3"], "meta": "{}"},
                {"id": "b", "answers": ["0, 1, 1"], "meta": "{}"},
                {"id": "c", "answers": ["-1"], "meta": json.dumps({"k": 2})},
                {"id": "d", "answers": ["0, 1, 1; 0, 2, 2"], "meta": json.dumps({"k": "2"})},
                {"id": "e", "answers": "1, 1, 1; 2, 2, 2", "meta": None},
                {"id": "f", "answers": [], "meta": json.dumps({"k": 100})}]
    predictions = ["2, 1, 3.\n", "-1", "-1; -1", "-1", "1, 1, 1;2, 2, 2", None]
    metric = get_metric("mmneedle", parity="official")
    batch = metric.score_many(predictions, examples)
    single = [metric.score(p, e) for p, e in zip(predictions, examples)]
    assert [(r.score, r.parsed, r.extra) for r in batch] == [(r.score, r.parsed, r.extra) for r in single]
    assert [r.score for r in batch] == [1.0, 1.0, 0.0, 0.0, 0.0, 0.0] and batch[2].extra["exist"] == 1.0
    assert batch[3].extra["official_crash"].startswith("TypeError") and list(batch[3].extra)[0] == "official_crash"
    assert batch[5].extra["exist"] == 0.0  # gold "-1", k 100: "no needle" is spelled for 100 needles only


def _parse_output_as_written(output: str, prefix: str, first_line: bool) -> str:
    """utils.py parse_output's two readings, with the patterns built per call."""
    if first_line:
        match = re.search(f"(?:{prefix})(.*)(?:\n|$)", output, flags=re.IGNORECASE)
        rest = (match.group(1) if match else re.search(r"(?:^)(.*)(?:\n|$)", output).group(1)).strip()
    else:
        match = re.search(f"(?:{prefix})(.*)", output, flags=re.IGNORECASE | re.DOTALL)
        rest = match.group(1).strip() if match else output.strip()
    return re.sub("^" + re.escape(prefix), "", rest, flags=re.IGNORECASE).strip()


def test_parse_output_with_compiled_patterns_reads_as_before():
    texts = ["Answer: Answer: Paris", "label:3\nlabel: 5", "no prefix\nsecond", "", "SUMMARY:  x \n y", "Answer:"]
    for text in texts:
        for prefix in ("Answer:", "label:", "Summary:"):
            for first_line in (False, True):
                want = _parse_output_as_written(text, prefix, first_line)
                assert off.mmlb_parse_output(text, prefix, first_line) == want
                assert off.mmlb_parse_output(text, prefix, first_line) == want  # the memoised answer


def test_a_local_folder_is_read_with_pyarrow_as_datasets_streams_it(tmp_path):
    """load_examples reads a built folder's example columns with pyarrow (once per config, no torch
    import through datasets' streaming): the same rows, in the same order, as datasets streams."""
    import datasets

    from mmlbdata.evaluation.evaluate import EXAMPLE_COLUMNS, load_examples
    from mmlbdata.runner.smoke import write_built

    rows = [{"id": f"x{i}", "dataset": "vh_single", "length": 8192, "num_tokens": 10 + i, "prompt": "<image> q",
             "images": [{"bytes": b"\x89PNG fake", "path": None}], "question": f"q{i}", "answers": ["yes", "no"][: 1 + i % 2],
             "metric": "binary_acc", "meta": json.dumps({"i": i})} for i in range(7)]
    folder = write_built(tmp_path / "built", {"vhsingle_8k": rows})
    streamed = datasets.load_dataset(str(folder), "vhsingle_8k", split="test", streaming=True).decode(False)
    want = [{k: v for k, v in row.items() if k in EXAMPLE_COLUMNS} for row in streamed]
    got = load_examples(folder, "vhsingle_8k")
    assert got == want and [r["id"] for r in got] == [f"x{i}" for i in range(7)] and "images" not in got[0]


def _category_rows(meta_for) -> list[dict]:
    """Rows of one dataset and length whose metas differ per row (as MMNeedle's and MM-NIAH's do)."""
    return [{"id": f"m{i}", "dataset": "mmneedle_single", "length": 8192, "meta": meta_for(i),
             "answers": ["1, 1, 1"], "metric": "mmneedle"} for i in range(12)]


def test_labels_follow_a_category_in_meta_however_the_meta_text_spells_it():
    """The engine skips parsing metas that cannot name a category; one that does, even with its key
    written as JSON escapes, still wins over the dataset's category (category_of, per row)."""
    escaped = '{"\\u0063ategory": "Escaped", "i": %d}'
    for meta_for, want in ((lambda i: json.dumps({"i": i}), {"NIAH": 12}),
                           (lambda i: escaped % i if i % 3 == 0 else json.dumps({"i": i}), {"Escaped": 4, "NIAH": 8}),
                           (lambda i: json.dumps({"category": "Plain"}) if i < 5 else "", {"Plain": 5, "NIAH": 7})):
        rows = _category_rows(meta_for)
        report = evaluate_config(rows, {r["id"]: {"prediction": "1, 1, 1"} for r in rows}, {"*": {"parity": "official"}})
        assert {k: v["n"] for k, v in report["by_category"].items()} == want
        assert want == {c: sum(category_of(r) == c for r in rows) for c in want}


def test_mmneedle_reads_k_from_meta_even_when_escaped_and_skips_metas_without_it():
    from mmlbdata.evaluation.metrics.mmneedle import gold_of

    assert gold_of({"answers": ["1, 1, 1"], "meta": '{"k": 2}'}) == ("1, 1, 1", True, 2)
    assert gold_of({"answers": ["1, 1, 1"], "meta": '{"\\u006b": 2}'}) == ("1, 1, 1", True, 2)
    assert gold_of({"answers": ["-1"], "meta": '{"depth": 3, "kk": 4}'}) == ("-1", False, None)
    assert gold_of({"answers": "2, 1, 1", "meta": {"k": 1}}) == ("2, 1, 1", False, 1)


def test_only_metrics_that_read_the_row_get_it():
    """``_row`` (the official binary_acc default-answer cycle) is set for the metrics that read it,
    and the config's other rows are left as they were given."""
    rows = [{"id": f"v{i}", "dataset": "vh_single", "length": 8192, "answers": ["Yes"], "metric": "binary_acc"}
            for i in range(4)] + [{"id": "c0", "dataset": "cars196", "length": 8192, "answers": ["a"], "metric": "cls_acc"}]
    cls_only = [dict(rows[-1])]
    evaluate_config(cls_only, {"c0": {"prediction": "a"}}, {"*": {"parity": "official"}})
    assert "_row" not in cls_only[0]
    evaluate_config(rows, {r["id"]: {"prediction": "maybe"} for r in rows[1:]}, {"*": {"parity": "official"}})
    assert [r.get("_row") for r in rows] == [0, 1, 2, 3, 4]  # the unanswered first row keeps the cycle's place


def test_a_config_whose_answers_are_all_left_out_has_no_group_tables():
    """Official parity leaves out an answer that parses to nothing; when that is every answer of a
    metric with group_by keys, the config still scores (n 0) and its group tables are empty."""
    rows = [{"id": f"d{i}", "dataset": "mmlongdoc", "length": 8192, "metric": "docqa", "answers": ["2019"],
             "meta": json.dumps({"answer_format": "Integer"})} for i in range(3)]
    report = evaluate_config(rows, {r["id"]: {"prediction": "Answer:\n2019"} for r in rows},
                             {"*": {"parity": "official"}}, protocol="v1.0")
    assert (report["n"], report["left_out"], report["groups"]) == (0, 3, {})


# --- MMNeedle's batch path: facts per gold, shared breakdowns (issue 36) ------------------------

#: "2,, 1, 3": an index ending in ","; "4,2,2" is this project's reading, not the official line:
#: evaluate.py L47 unpacks ``gt.split(', ')`` into three and would raise on it; the index here is the
#: text before the first ", "
_NEEDLE_GOLDS = ["2, 1, 3", "0, 1, 1", "-1", "10, 4, 4", "2,, 1, 3", "4,2,2", "0, 1, 1; 0, 2, 2", "-1; -1",
                 "1, 1, 1; 2, 2, 2", "3, 2, 2; 5, 1, 1; 7, 3, 3"]
#: k as meta spells it: ints, and the JSON values the official expressions treat differently
#: (2.0 == 2 but "-1" * 2.0 raises; true is 1; "2" raises; a list raises), escaped, absent, mappings
_NEEDLE_METAS = ["{}", '{"k": 1}', '{"k": 2}', '{"k": 2.0}', '{"k": true}', '{"k": "2"}', '{"k": [2]}',
                 '{"\\u006b": 3}', '{"k": 100}', None, {"k": 2}, {"k": 2.0}, '{"depth": 3}']
_NEEDLE_PREDICTIONS = ["2, 1, 3.\n", "-1", " -1 .", "-1; -1", "-1, -1", "-1-1", "-1, -1, -1; -1, -1, -1",
                       "1, 1, 1;2, 2, 2", "1, 1, 1; 2, 2, 2", "3, 2, 2; 5, 1, 1; 7, 3, 3", "10, 4, 4",
                       "2, 1", "0", "", None, "Answer: 2, 1, 3", "\n-1\n.",
                       # an index that only begins the answer's, or is followed by no ", "
                       "2", "21, 1, 3", "2,1, 3", "2,, 1", "2,, 3", "4,2,2, 5", "0, 5, 5", "-1, 1"]


def _needle_cases():
    """Every gold x meta x prediction, the gold spelled as a list, a bare string or a longer list."""
    examples, predictions = [], []
    for g, gold in enumerate(_NEEDLE_GOLDS):
        for m, meta in enumerate(_NEEDLE_METAS):
            for p, prediction in enumerate(_NEEDLE_PREDICTIONS):
                answers = [gold] if (g + m + p) % 3 else (gold if p % 2 else [gold, "other"])
                examples.append({"id": f"{g}-{m}-{p}", "answers": answers, "meta": meta})
                predictions.append(prediction)
    return examples, predictions


def _needle_by_the_lines(gold: str, prediction, k, several: bool) -> dict:
    """MMNeedle's official rules read line by line, one example at a time (evaluate.py @2e558415,
    evaluate_multi.py @53fe0c64), with this project's two readings of a gold: ``-1`` is negative as
    the index 0 is, and meta's ``k`` is the count of a negative gold written as the bare ``-1``."""
    pred = (prediction or "").replace("\n", "").strip()  # both files L44-46 / L34-36
    pred = pred.strip(".").strip()
    if not several:  # evaluate.py
        gt_index = gold.split(", ")[0]  # L47 (one needle: "i, r, c")
        negative = gt_index in ("0", "-1")  # L49
        gt = "-1" if negative else gold
        return {"positive": not negative, "exist": float((gt == "-1") == (pred == "-1")),  # L73-80
                "index": float(gt_index == pred.split(", ")[0]),  # L51-53
                "exact": float(gt == pred), "multi": False}  # L62
    gt_index = [g.split(", ")[0] for g in gold.split("; ")]  # evaluate_multi.py L37-38
    negative = gt_index[0] in ("0", "-1")  # L40
    gt = "-1" if negative else gold
    n = k if (negative and k) else len(gt_index)
    pred_split = [p.strip() for p in pred.split("; ")]  # L43-44
    pred = "; ".join(pred_split)  # L45
    no_needle = ["-1", "-1" + "; -1" * (n - 1), "-1" + ", -1" * (n - 1),  # L82-85: may raise for a k
                 "-1, -1, -1" + "; -1, -1, -1" * (n - 1), "-1" * n]
    return {"positive": not negative, "exist": float((gt == "-1") == (pred in no_needle)),  # L86-93
            "index": float(gt_index == [p.split(", ")[0] for p in pred_split]),  # L46, L49
            "exact": float(gt == pred), "multi": True}  # L67


def test_mmneedle_official_results_follow_the_official_lines_for_every_gold_meta_and_prediction():
    """The batch path (what a one-needle gold decides kept per gold, k read per meta text, shared
    breakdowns) gives what the official lines give, example by example: a gold is multi by its own
    "; " or by k over 1; k 2.0, "2" or [2] make the official expressions raise (0.0, the exception
    kept); k true is 1. ``score`` gives the same as ``score_many``."""
    examples, predictions = _needle_cases()
    for options in ({"parity": "official"}, {"strict": True}):
        metric = get_metric("mmneedle", **options)
        batch = metric.score_many(predictions, examples)
        crashed = 0
        for example, prediction, result in zip(examples, predictions, batch):
            answers = example["answers"]
            gold = answers if isinstance(answers, str) else answers[0]
            k = meta_of(example).get("k")
            several = ";" in gold or (isinstance(k, int) and k > 1)
            try:
                want = _needle_by_the_lines(gold, prediction, k, several)
            except TypeError as exc:
                crashed += 1
                assert result.extra["official_crash"] == f"TypeError: {exc}" and result.score == 0.0
                continue
            assert (result.score, result.parsed, result.extra) == (want["exact"], prediction or "", want)
            assert list(result.extra) == list(want)
        assert crashed == 4 * 2 * len(_NEEDLE_PREDICTIONS)  # metas with k 2.0 (text, mapping), "2", [2] x 2 negative multi golds
    # a prediction that is no text crashes evaluate_multi.py's cleaning (L34): 0, the exception kept
    [result] = get_metric("mmneedle", parity="official").score_many([5], [{"answers": ["1, 1, 1; 2, 2, 2"]}])
    assert result.score == 0.0 and result.extra["official_crash"].startswith("AttributeError")


def test_mmneedle_results_share_read_only_breakdowns():
    """Results with the same outcome share one breakdown, which refuses changes (a change through one
    result would reach every other); copies, JSON and pickles of it are plain dicts."""
    import copy
    import pickle

    import pytest

    from mmlbdata.evaluation.metrics.registry import ReadOnlyDict

    results = get_metric("mmneedle", parity="official").score_many(["2, 1, 3", "2, 1, 3."], [{"answers": ["2, 1, 3"]}] * 2)
    first, second = (r.extra for r in results)
    assert first is second and isinstance(first, ReadOnlyDict)
    assert first == {"positive": True, "exist": 1.0, "index": 1.0, "exact": 1.0, "multi": False}
    for change in (lambda d: d.__setitem__("exact", 0.0), lambda d: d.update(exact=0.0), lambda d: d.pop("exact"),
                   lambda d: d.setdefault("x", 1), lambda d: d.popitem(), lambda d: d.clear(),
                   lambda d: d.__delitem__("exact")):
        with pytest.raises(TypeError, match="read-only"):
            change(first)
    with pytest.raises(TypeError, match="read-only"):
        first |= {"exact": 0.0}
    assert first["exact"] == 1.0 and second["exact"] == 1.0
    with pytest.raises(TypeError, match="read-only"):
        first.__init__(exact=0.0)
    assert first["exact"] == 1.0 and second["exact"] == 1.0
    plain = dict(first)
    plain["exact"] = 0.0
    assert first["exact"] == 1.0
    # results copied or pickled together share one breakdown again: it must still refuse changes
    for copied in (copy.deepcopy(results), pickle.loads(pickle.dumps(results))):
        assert copied[0].extra is copied[1].extra and copied[0].extra == first
        with pytest.raises(TypeError, match="read-only"):
            copied[0].extra["exact"] = 0.0
    assert json.dumps(first) == json.dumps(dict(first))


def _aggregate_by_hand(results) -> dict:
    """MMNeedle's aggregate as its docstring states it, adding the parts one by one."""
    out = {"score": sum(r.score for r in results) / len(results), "n": len(results)}
    groups = {}
    for r in results:
        groups.setdefault(("multi" if r.extra["multi"] else "single", r.extra["positive"]), []).append(r.extra)
    for (kind, positive), rows in sorted(groups.items()):
        tag = f"{kind}.{'pos' if positive else 'neg'}"
        out[f"{tag}.n"] = len(rows)
        out[f"{tag}.exist"] = sum(x["exist"] for x in rows) / len(rows)
        if positive:
            out[f"{tag}.index"] = sum(x["index"] for x in rows) / len(rows)
            out[f"{tag}.exact"] = sum(x["exact"] for x in rows) / len(rows)
    return out


def test_mmneedle_aggregate_counts_outcomes_as_adding_them_one_by_one_would():
    """Shared breakdowns are counted by identity; results with breakdowns of their own (crashes, the
    tolerant default parser) by their parts: both give the one-by-one sums, key for key."""
    examples, predictions = _needle_cases()
    official = get_metric("mmneedle", parity="official")
    for metric in (official, get_metric("mmneedle")):  # crashes among them / the tolerant parser's own dicts
        results = metric.score_many(predictions, examples)
        got, want = metric.aggregate(results, examples), _aggregate_by_hand(results)
        assert got == want and list(got) == list(want)
    no_crash = [(e, p) for e, p in zip(examples, predictions) if e["meta"] in (None, "{}", '{"k": 1}', '{"k": 2}')]
    results = official.score_many([p for _, p in no_crash], [e for e, _ in no_crash])  # shared breakdowns only
    assert all(type(r.extra).__name__ == "ReadOnlyDict" for r in results) and len(results) > 500
    assert official.aggregate(results, []) == _aggregate_by_hand(results)


_HOSTILE = ["", None, "Answer: A", "answer: []", "(B)", "-1", "2, 1, 3", "1e999", "nan", "x" * 300, "\n\n", "[[[", "{}"]


def test_metrics_that_say_they_never_leave_an_example_out_never_do():
    """``may_leave_out = False`` spares the engine its scan for left-out marks: every metric that says
    so makes none, on the benchmark pairs of its paths and on hostile text, in both parities."""
    from benchmarks.bench_vs_official import OFFICIAL, make_pairs
    from mmlbdata.evaluation.metrics import metric_names

    quiet = [name for name in metric_names() if not get_metric(name).may_leave_out]
    assert {"mmneedle", "babilong", "readbench_mc", "longbench_f1", "lvb_mc", "mmlongbench_doc", "longdocurl",
            "memlens_judge"} <= set(quiet)
    for name in quiet:
        examples = [{"id": f"h{i}", "answers": ["A"], "meta": json.dumps({"task": "qa1"}), "question": "q?"}
                    for i in range(len(_HOSTILE))]
        predictions = list(_HOSTILE)
        for path in OFFICIAL:
            pairs = make_pairs(path, 200)
            if pairs.metric == name:
                examples, predictions = examples + pairs.examples, predictions + pairs.predictions
        for options in ({"parity": "official"}, {}):
            for r in get_metric(name, **options).score_many(predictions, examples):
                assert not {"left_out", "unscorable"} & set(r.extra), (name, options, r)


def test_the_cycle_collector_is_paused_while_a_config_is_scored_and_restored_after(monkeypatch):
    """Scoring builds acyclic records, so the engine pauses the cycle collector for the config, and
    puts it back as it found it: on, off, or on after a metric failed; left on for a judged metric."""
    import gc

    import pytest

    from mmlbdata.evaluation.metrics.mmneedle import MMNeedle

    seen = []
    original = MMNeedle.score_many

    def watching(self, predictions, examples):
        seen.append(gc.isenabled())
        if examples and examples[0].get("fail"):
            raise RuntimeError("metric failed")
        return original(self, predictions, examples)

    monkeypatch.setattr(MMNeedle, "score_many", watching)
    rows = [{"id": "a", "dataset": "mmneedle_single", "length": 8192, "answers": ["1, 1, 1"], "metric": "mmneedle"}]
    predictions = {"a": {"prediction": "1, 1, 1"}}
    assert gc.isenabled()
    cli_options = _cli_metric_options()  # mmlb eval's: a judge stand-in for summ_judge, an extractor for the docs
    assert cli_options["summ_judge"]["judge"] is not None
    evaluate_config(rows, predictions, {**cli_options, "*": {"parity": "official"}})
    assert seen == [False] and gc.isenabled()  # the config's metrics call no model: paused
    for calls_a_model in ({"judge": object()}, {"extractor": object()}):
        evaluate_config(rows, predictions, {"*": {"parity": "official"}, "mmneedle": calls_a_model})
        assert seen[-1] is True and gc.isenabled()
    with pytest.raises(RuntimeError, match="metric failed"):
        evaluate_config([{**rows[0], "fail": True}], predictions)
    assert seen[-1] is False and gc.isenabled()
    gc.disable()
    try:
        evaluate_config(rows, predictions)
        assert not gc.isenabled()
    finally:
        gc.enable()


def _cli_metric_options() -> dict:
    """``mmlb eval``'s metric options with no judge configured and the default extractor."""
    from mmlbdata.cli import make_parser
    from mmlbdata.cli import eval as cli_eval

    args = make_parser().parse_args(["eval", "predictions.jsonl", "--data", "built", "--out", "report"])
    return cli_eval.metric_options(args, None)


def test_score_columns_are_a_sequence_of_the_results_they_hold():
    """A metric may return its results as columns (MMNeedle's official rules do): indexing,
    slicing, iterating, comparing, copying and pickling behave as the list of the same results."""
    import copy
    import pickle

    from mmlbdata.evaluation.metrics.registry import ScoreColumns, ScoreResult

    shared = off.NEEDLE_BREAKDOWNS[0]
    results = [ScoreResult(1.0, "a", {"x": 1}), ScoreResult(0.0, None, shared), ScoreResult(0.5, "c")]
    columns = ScoreColumns.of(results)
    assert ScoreColumns.of(columns) is columns
    assert columns.scores == [1.0, 0.0, 0.5] and columns.parsed == ["a", None, "c"]
    assert columns.extras == [{"x": 1}, shared, {}]
    assert len(columns) == 3 and columns[1] == results[1] and columns[-1] == results[-1]
    assert list(columns) == results and columns == results and results == columns and columns != results[:2]
    assert columns[1:] == results[1:] and isinstance(columns[1:], ScoreColumns)
    assert columns[1].extra is shared  # the breakdown itself, not a copy
    assert columns != "abc" and repr(columns).startswith("ScoreColumns([ScoreResult(")
    for copied in (copy.deepcopy(columns), pickle.loads(pickle.dumps(columns))):
        assert copied == columns
        with pytest.raises(TypeError, match="read-only"):
            copied[1].extra["exact"] = 0.0
    with pytest.raises(ValueError, match="2 scores, 3 parsed, 3 extras"):
        ScoreColumns([1.0, 0.0], ["a", "b", "c"], [{}, {}, {}])
    with pytest.raises(TypeError):
        hash(columns)


def test_the_engine_reports_the_same_whether_a_metric_returns_columns_or_a_list(monkeypatch):
    """The engine reads any metric's results as columns: MMNeedle's official rules return them, and
    the same results handed over as a list give the same report, key for key (missing predictions,
    a second metric and meta groups included)."""
    from mmlbdata.evaluation.metrics.mmneedle import MMNeedle
    from mmlbdata.evaluation.metrics.registry import ScoreColumns

    examples, predictions = _needle_cases()
    rows = [{**e, "dataset": "mmneedle_single", "length": 8192, "metric": "mmneedle"} for e in examples]
    rows += [{"id": f"b{i}", "dataset": "vh_single", "length": 16384, "metric": "binary_acc", "answers": ["Yes"],
              "meta": json.dumps({"depth": i % 3})} for i in range(40)]
    preds = {e["id"]: {"id": e["id"], "prediction": p or ""} for e, p in zip(examples, predictions)}
    preds.update({f"b{i}": {"id": f"b{i}", "prediction": "Yes" if i % 2 else "No"} for i in range(40)})
    options = {"*": {"parity": "official"}}
    assert isinstance(get_metric("mmneedle", parity="official").score_many(["-1"], [rows[0]]), ScoreColumns)
    original = MMNeedle.score_many
    some = {k: v for n, (k, v) in enumerate(preds.items()) if n % 7}
    for name, chosen in {"all": preds, "some missing": some}.items():
        as_columns = evaluate_config([dict(r) for r in rows], chosen, options)
        with monkeypatch.context() as patch:
            patch.setattr(MMNeedle, "score_many", lambda self, p, e: list(original(self, p, e)))
            as_list = evaluate_config([dict(r) for r in rows], chosen, options)
        assert json.dumps(as_columns, sort_keys=True) == json.dumps(as_list, sort_keys=True), name
        assert as_columns["metrics"]["mmneedle"]["n"] == len(examples) or name != "all"


def test_any_meta_may_hold_answers_as_asking_each_meta():
    """One search through the joined metas gives what asking each would: a key split over two
    metas, or an escape split over two, is not found; a meta that is not text may hold anything."""
    from mmlbdata.evaluation.metrics.common import any_meta_may_hold, meta_may_hold

    cases = [[], [None, ""], ['{"k": 1}'], ['{"category": 1}'], ['{"\\u0063ategory": 1}'], ['{"a\\', 'u"}'],
             ['{"categ', 'ory"}'], ['x"', 'category"'], [5], ["x", 5], ['{"k": 1}'] * 3000 + ['{"category": "A"}']]
    for metas in cases:
        assert any_meta_may_hold(metas, "category") == any(meta_may_hold(m, "category") for m in metas if m), metas


def test_mmneedle_columns_stop_at_the_shorter_of_predictions_and_examples():
    """As every score_many does (a zip): one result per pair, never columns of different lengths."""
    results = get_metric("mmneedle", parity="official").score_many(["-1", "x"], [{"answers": ["-1"]}])
    assert len(results) == 1 and results[0].parsed == "-1" and results[0].score == 1.0


def test_ids_that_are_not_text_are_matched_and_reported_as_text():
    """A built dataset's ids are plain text, and the engine then keeps them as they are; ids given as
    numbers (rows made by hand) or as another text type are matched to the predictions file's text
    ids by their str(), and reported as plain text."""
    rows = [{"id": i, "dataset": "vh_single", "length": 8192, "metric": "binary_acc", "answers": ["Yes"], "meta": "{}"}
            for i in range(4)]
    predictions = {str(i): {"prediction": "yes" if i % 2 else "no"} for i in range(4)}
    report = evaluate_config(rows, predictions)
    assert [e["id"] for e in report["examples"]] == ["0", "1", "2", "3"]
    assert all(type(e["id"]) is str for e in report["examples"])
    assert (report["answered"], report["problems"]["unknown_ids"], report["score"]) == (4, [], 0.5)
    mixed = rows[:2] + [{**rows[2], "id": "2"}]  # one text id among numbers: all reported as text
    report = evaluate_config(mixed, predictions)
    assert [e["id"] for e in report["examples"]] == ["0", "1", "2"] and report["problems"]["unknown_ids"] == ["3"]

    class Label(str):  # text of another type (numpy.str_ is one): its str(), as plain text
        def __str__(self):
            return self.upper()

    labelled = [{**row, "id": Label(f"r{i}")} for i, row in enumerate(rows)]
    report = evaluate_config(labelled, {f"R{i}": {"prediction": "yes"} for i in range(4)})
    assert [e["id"] for e in report["examples"]] == ["R0", "R1", "R2", "R3"]
    assert {type(e["id"]) for e in report["examples"]} == {str} and report["answered"] == 4
