"""The scoring engine (evaluate_config) and MMNeedle's official rules: the report's category/length
tables, meta, ids, rows read, and the official lines read one by one."""
from __future__ import annotations

import json

from mmlbdata.evaluation.evaluate import category_of, evaluate_config, length_label
from mmlbdata.evaluation.metrics import get_metric
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


def test_meta_is_read_from_text_or_a_mapping():
    example = {"meta": json.dumps({"k": 5, "category": "NIAH"})}
    assert meta_of(example) == {"k": 5, "category": "NIAH"}
    assert meta_of({"meta": "[1, 2]"}) == {} and meta_of({"meta": "{bad"}) == {} and meta_of({}) == {}
    mapping = {"k": 1}
    assert meta_of({"meta": mapping}) == mapping and meta_of({"meta": mapping}) is not mapping


def test_mmneedle_official_results_on_hand_read_cases_crashes_included():
    """MMNeedle's official rules on hand-read cases, a k that the official spelling cannot use
    ("2": str - int) included (evaluate_multi.py: exact is string equality, so "-1; -1" for the gold
    "-1" exists but is not exact)."""
    examples = [{"id": "a", "answers": ["2, 1, 3"], "meta": "{}"},
                {"id": "b", "answers": ["0, 1, 1"], "meta": "{}"},
                {"id": "c", "answers": ["-1"], "meta": json.dumps({"k": 2})},
                {"id": "d", "answers": ["0, 1, 1; 0, 2, 2"], "meta": json.dumps({"k": "2"})},
                {"id": "e", "answers": "1, 1, 1; 2, 2, 2", "meta": None},
                {"id": "f", "answers": [], "meta": json.dumps({"k": 100})}]
    predictions = ["2, 1, 3.\n", "-1", "-1; -1", "-1", "1, 1, 1;2, 2, 2", None]
    metric = get_metric("mmneedle", parity="official")
    batch = metric.score_many(predictions, examples)
    assert [r.score for r in batch] == [1.0, 1.0, 0.0, 0.0, 0.0, 0.0] and batch[2].extra["exist"] == 1.0
    assert batch[3].extra["official_crash"].startswith("TypeError") and list(batch[3].extra)[0] == "official_crash"
    assert batch[5].extra["exist"] == 0.0  # gold "-1", k 100: "no needle" is spelled for 100 needles only


def test_a_local_folder_is_read_with_pyarrow_as_datasets_streams_it(tmp_path):
    """load_examples reads a built folder's example columns with pyarrow (once per config, no torch
    import through datasets' streaming): the same rows, in the same order, as datasets streams."""
    import datasets

    from mmlbdata.evaluation.evaluate import EXAMPLE_COLUMNS, load_examples
    from tests.smoke import write_built

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
    """A category in meta, even with its key written as JSON escapes, wins over the dataset's
    category (category_of, per row)."""
    escaped = '{"\\u0063ategory": "Escaped", "i": %d}'
    for meta_for, want in ((lambda i: json.dumps({"i": i}), {"NIAH": 12}),
                           (lambda i: escaped % i if i % 3 == 0 else json.dumps({"i": i}), {"Escaped": 4, "NIAH": 8}),
                           (lambda i: json.dumps({"category": "Plain"}) if i < 5 else "", {"Plain": 5, "NIAH": 7})):
        rows = _category_rows(meta_for)
        report = evaluate_config(rows, {r["id"]: {"prediction": "1, 1, 1"} for r in rows}, {"*": {"parity": "official"}})
        assert {k: v["n"] for k, v in report["by_category"].items()} == want
        assert want == {c: sum(category_of(r) == c for r in rows) for c in want}


def test_mmneedle_reads_k_from_meta_even_when_escaped():
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


# --- MMNeedle's official rules, line by line -----------------------------------------------------

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
    """The official rules give what the official lines give, example by example: a gold is multi by
    its own "; " or by k over 1; k 2.0, "2" or [2] make the official expressions raise (0.0, the
    exception kept); k true is 1."""
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


def test_mmneedle_aggregate_adds_the_parts_one_by_one():
    """Per needle kind and positive/negative gold: existence, index, exact, key for key, crashes and
    the tolerant default parser's results included."""
    examples, predictions = _needle_cases()
    official = get_metric("mmneedle", parity="official")
    for metric in (official, get_metric("mmneedle")):  # crashes among them / the tolerant parser's own dicts
        results = metric.score_many(predictions, examples)
        got, want = metric.aggregate(results, examples), _aggregate_by_hand(results)
        assert got == want and list(got) == list(want)


def test_mmneedle_results_stop_at_the_shorter_of_predictions_and_examples():
    """As every score_many does (a zip): one result per pair."""
    results = get_metric("mmneedle", parity="official").score_many(["-1", "x"], [{"answers": ["-1"]}])
    assert len(results) == 1 and results[0].parsed == "-1" and results[0].score == 1.0


def test_ids_that_are_not_text_are_matched_and_reported_as_text():
    """Ids given as numbers (rows made by hand) or as another text type are matched to the
    predictions file's text ids by their str(), and reported as plain text."""
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
