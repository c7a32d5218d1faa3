"""MemLens: the release reader (streamed JSON, declared schema, bad records reported) and the
official templates, against the official code at fd4c8d7 (tests/memlens_official.py)."""
from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import pytest

from mmlbdata.core.report import BuildReport
from mmlbdata.official import memlens_prompts as prompts
from mmlbdata.sources import memlens as source
from mmlbdata.sources.jsonstream import iter_array_items

sys.path.insert(0, str(Path(__file__).parent))
import memlens_fixture as fixture  # noqa: E402
import memlens_official as official  # noqa: E402


@pytest.fixture(scope="module")
def release(tmp_path_factory, real_data):
    return fixture.write_release(tmp_path_factory.mktemp("memlens_release"), real_data)


def _records(path, report=None):
    return list(source.read_release_file(path, report or BuildReport()))


def test_every_length_reads_the_same_questions_with_more_sessions(release):
    per_length = {key: _records(release / source.dataset_file(key)) for key in source.LENGTH_KEYS}
    ids = [[r.question_id for r in recs] for recs in per_length.values()]
    assert all(i == ids[0] for i in ids) and len(ids[0]) == len(fixture.QUESTIONS)
    sessions = [sum(len(r.sessions) for r in recs) for recs in per_length.values()]
    assert sessions == sorted(sessions) and sessions[0] < sessions[-1]


def test_record_fields_as_the_official_code_reads_them(release):
    recs = _records(release / "dataset_32k.json")
    listed, dated = recs[0], recs[1]  # list-of-turns sessions with haystack_dates; {"date","session"} sessions
    assert listed.sessions[0].date == "2024/02/01 (Thu) 18:00"
    assert listed.sessions[-1].date == "unknown"  # one date short: build_context's "unknown"
    assert dated.sessions[0].date == "2024/01/01 (Mon) 09:00"
    # images named as resolve_image_path reads them: a path, "file", "path"
    assert listed.sessions[0].turns[0].images == ("release_images/img_0000.jpg", "img_0001.jpg")
    ku = [r for r in recs if r.question_type == "knowledge_update"]
    assert [r.old_answer for r in ku] == ["sourdough", "Porto"]  # old_answer, then question_content.old_answer
    assert recs[2].answer == "3" and recs[1].question_subtype == "previnfo"


def test_bad_records_are_skipped_and_reported_with_file_index_field_reason(tmp_path):
    """Records the official loader cannot read (data.py load_data @fd4c8d7 raises: sessions not a list
    L134/L212, turns whose items are not objects L145/L223, a turn's text not a string L267-269), an
    ability that cannot key the official tables, no reference answer, not an object. (Dates, questions, roles and abilities it writes into
    the prompt as they are: tests/test_memlens_unusual.py.)"""
    good = fixture.record(0, 2, ["a.jpg"])
    bad = [
        {**good, "question_id": "b1", "haystack_sessions": 5},
        {**good, "question_id": "b2", "question_type": ["chit_chat"]},
        {**good, "question_id": "b3", "haystack_sessions": [[{"role": "user", "content": ["x"]}]]},
        {**good, "question_id": "b4", "haystack_sessions": [{"date": 3, "session": "hello"}]},
        {k: v for k, v in good.items() if k != "answer"},
        "not an object",
    ]
    path = tmp_path / "dataset_32k.json"
    path.write_text(json.dumps([good, *bad, {**good, "question_id": "last"}]), encoding="utf-8")
    report = BuildReport()
    assert [r.question_id for r in _records(path, report)] == ["q000", "last"]
    skipped = [(s.record, s.field, s.reason) for s in report.skipped]
    assert [s[0] for s in skipped] == [f"item {i}" for i in range(1, 7)]
    assert [s[1] for s in skipped] == ["haystack_sessions", "question_type", "haystack_sessions[0][0].content",
                                       "haystack_sessions[0].session", "answer", None]
    assert "expected a list, got 5" in skipped[0][2] and "expected a string or null" in skipped[1][2]
    assert all(s.file.endswith("dataset_32k.json") for s in report.skipped)


def test_the_data_wrapper_form_and_errors_naming_the_file(tmp_path):
    path = tmp_path / "wrapped.json"
    path.write_text(json.dumps({"version": 1, "meta": {"n": [1, 2]}, "data": [{"a": 1}, {"b": [2]}]}))
    assert list(iter_array_items(path)) == [{"a": 1}, {"b": [2]}]
    (tmp_path / "empty.json").write_text(" [ ] ")
    assert list(iter_array_items(tmp_path / "empty.json")) == []
    (tmp_path / "other.json").write_text('{"items": []}')
    with pytest.raises(ValueError, match="other.json.*'data'"):
        list(iter_array_items(tmp_path / "other.json"))
    (tmp_path / "cut.json").write_text('[{"a": 1}, {"b": ')
    with pytest.raises(ValueError, match="cut.json: truncated"):
        list(iter_array_items(tmp_path / "cut.json", chunk=4))


def test_small_chunks_read_the_same_records(release):
    path = release / "dataset_64k.json"
    assert list(iter_array_items(path, chunk=7)) == json.loads(path.read_text())


def test_agent_subset_index(release, tmp_path):
    assert source.agent_subset(release / source.AGENT_SUBSET_FILE) == fixture.AGENT_IDS
    (tmp_path / "a.json").write_text('["x", 7]')
    assert source.agent_subset(tmp_path / "a.json") == ["x", "7"]
    (tmp_path / "b.json").write_text('{"ids": []}')
    with pytest.raises(ValueError, match="b.json"):
        source.agent_subset(tmp_path / "b.json")


def test_reading_a_large_file_keeps_memory_flat(tmp_path):
    """A 60 MB release file (the benchmark does the real 778 MB): the reading process's peak RSS
    stays far below the file's size (json.load would hold several times the file)."""
    from benchmarks.bench_memlens_read import read_peak, write_release_json

    size = write_release_json(tmp_path / "dataset_256k.json", 60_000_000)
    got = read_peak(tmp_path / "dataset_256k.json")
    assert got["records"] == 789 and got["skipped"] == 0
    assert got["peak_mb"] - got["base_mb"] < size / 1e6 / 2, got


# -- the official templates -----------------------------------------------------------------------------

def _official_strings(path: Path) -> dict[str, str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {node.targets[0].id: node.value.value for node in tree.body
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)}


def test_templates_are_data_py_s(tmp_path):
    strings = _official_strings(official.checkout(tmp_path) / "data.py")
    assert prompts.SYSTEM == strings["SYSTEM_TEMPLATE"]
    assert prompts.QUESTION == strings["QUESTION_TEMPLATE"]
    assert prompts.USER == strings["USER_TEMPLATE"]
    assert prompts.INSTRUCTIONS == {"default": strings["INSTRUCTION_DEFAULT"], "cot": strings["INSTRUCTION_COT"],
                                    "reasoning": strings["INSTRUCTION_REASONING"]}


def test_a_broken_record_in_a_large_file_stops_where_it_is_broken(tmp_path):
    path = tmp_path / "dataset_32k.json"
    good = json.dumps({"a": "x" * 1000})
    path.write_text("[" + good + ', {"b": [1, 2,, 3]}, ' + ",".join([good] * 2000) + "]")
    read = []
    with pytest.raises(ValueError, match=r"dataset_32k.json: truncated or invalid JSON near byte ~[\d,]+ \(parse error"):
        read.extend(iter_array_items(path, chunk=512))
    assert read == [{"a": "x" * 1000}]  # the record before it was read; nothing after it
