"""benchmarks/parity_pairs.py: the pair file others compare with the official code."""
from __future__ import annotations

import json

from benchmarks.parity_pairs import PATHS, generate, main


def _lines(seed: str, n: int, paths=None) -> list[str]:
    return [json.dumps(r, sort_keys=True, ensure_ascii=False) for r in generate(seed, n, paths)]


def test_same_seed_same_pairs_other_seed_other_pairs():
    first = _lines("a", 6, ["binary_acc", "docqa"])
    assert first == _lines("a", 6, ["binary_acc", "docqa"])
    assert first != _lines("b", 6, ["binary_acc", "docqa"])


def test_every_path_gets_n_pairs_with_official_inputs_and_our_result():
    records = list(generate("parity", 5))
    assert [r["path"] for r in records] == [p for p in PATHS for _ in range(5)]
    for record in records:
        assert record["official"] and 0.0 <= record["ours"]["score"] <= 1.0
        assert record["example"]["id"] == f"{record['path']}-{record['index']}"


def test_binary_rows_follow_the_order_the_official_default_answer_cycles_over():
    """data.py DefaultAnswerGenerator advances once per example: the pair's row is its position."""
    records = list(generate("parity", 8, ["binary_acc"]))
    assert [r["example"]["_row"] for r in records] == list(range(8))
    assert [r["official"]["position"] for r in records] == list(range(8))


def test_official_crash_classes_are_in_the_file(tmp_path):
    """utils.py extract_binary_label: `label_map[match.group(0)]` with `yeſ` (IGNORECASE matches
    `yes`, the map has no such key) raises KeyError; parity mode scores 0 and records it."""
    out = tmp_path / "pairs.jsonl"
    assert main(["--n", "400", "--path", "binary_acc", "--out", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    crashed = [r for r in rows if "yeſ" in r["prediction"].lower() and "yes" not in r["prediction"].lower()
               and "no" not in r["prediction"].lower()]
    assert crashed and all(r["ours"]["score"] == 0.0 for r in crashed)
    assert all(r["ours"]["extra"]["official_crash"].startswith("KeyError") for r in crashed)


MMLB_PATHS = {"sub_em": "Answer:", "binary_acc": "Answer:", "count_acc": "Answer:", "mc_acc": "Answer:",
              "cls_acc": "label:", "rouge_l": "Summary:", "docqa": "Answer:", "docqa_release_lists": "Answer:",
              "summ_judge": "Summary:"}


def test_mmlongbench_pairs_name_the_prepended_template_and_carry_it_mid_text():
    """eval.py L73-74 (26197d2 = 22b9f27): the official side scores `system_template + prediction`; the
    data.py loaders' templates are `Answer:`, `label:` (load_icl_er L323), `Summary:` (L371, L405). Each
    MMLongBench path has predictions that hold an answer prefix after their start (a chain of thought)."""
    records = list(generate("parity", 200, sorted(MMLB_PATHS)))
    for path, template in MMLB_PATHS.items():
        rows = [r for r in records if r["path"] == path]
        assert {r["official"]["system_template"] for r in rows} == {template}, path
        assert any(r["prediction"].lower().find(p) > 0 for r in rows for p in ("answer:", "label:", "summary:")), path
    assert all("system_template" not in r["official"] for r in generate("parity", 3, ["mmneedle_single", "readbench_mc"]))


def test_protocol_is_recorded_and_changes_ours_where_v10_reads_one_line():
    """utils.py parse_output @26197d2 L123 reads the first line after the (prepended) prefix."""
    v11 = list(generate("parity", 300, ["docqa"], "v1.1"))
    v10 = list(generate("parity", 300, ["docqa"], "v1.0"))
    assert {r["protocol"] for r in v11} == {"v1.1"} and {r["protocol"] for r in v10} == {"v1.0"}
    assert [r["prediction"] for r in v11] == [r["prediction"] for r in v10]
    differ = [a for a, b in zip(v11, v10) if a["ours"]["parsed"] != b["ours"]["parsed"]]
    assert differ and all("\n" in r["prediction"] for r in differ)
