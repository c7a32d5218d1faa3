"""Release lines are checked against one schema per file kind where they are read (issue #27).

Damaged copies of the release-format lines of ``test_mmlb_release.write_release``: each of the
issue's cases (a number/null in ``ctxs``, a byte that is not UTF-8, an object as the answer, a list
as the id) builds the config from the good lines and reports the bad one with its file, line and
field; a property test feeds random JSON values to every field of every release file kind
(MMLongBench's JSON lines, its ICL files, MMNeedle's metadata entries).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mmlbdata.dataset.build import build_configs
from mmlbdata.cli import main
from mmlbdata.exports import iter_rows
from mmlbdata.core.report import BuildReport
from mmlbdata.sources import mmlb_release as release
from mmlbdata.sources import mmneedle_release as needle
from mmlbdata.sources.lineschema import problem
from mmlbdata.sources.mmlb_release_lines import ICL_DOMAIN, ICL_TEST, LINE_SCHEMAS
from mmlbdata.dataset.writer import read_manifest
from test_mmlb_release import write_release

VH = "NIAH/vh_single_test_1000_K8_dep6.jsonl"


@pytest.fixture(scope="module")
def rel(tmp_path_factory, real_data):
    root = tmp_path_factory.mktemp("release")
    write_release(root, real_data)
    return root


def _damaged_copy(rel: Path, tmp_path: Path, lines: list[bytes]) -> Path:
    """A release whose Visual Haystack file is ``lines`` (the images shared with ``rel``)."""
    root = tmp_path / "damaged"
    (root / "mmlb_data" / "NIAH").mkdir(parents=True)
    (root / "mmlb_image").symlink_to(rel / "mmlb_image")
    (root / "mmlb_data" / VH).write_bytes(b"".join(line + b"\n" for line in lines))
    return root


def _vh_lines(rel: Path) -> list[dict]:
    return [json.loads(line) for line in (rel / "mmlb_data" / VH).read_text().splitlines()]


def _build(root: Path, tmp_path: Path, tokenizer_path: Path):
    [result] = build_configs(["vh_single_8k"], {"mmlb_release": root}, tmp_path / "out", tokenizer=tokenizer_path,
                             store_root=tmp_path / "store", progress=False)
    assert result.ok, result.error
    return result, [r["id"] for r in iter_rows(tmp_path / "out", "vh_single_8k")]


@pytest.mark.parametrize("field, value, reported_field, words", [
    ("ctxs", [5, None], "ctxs[0]", "expected a string, got 5"),  # case 1: was TypeError, 0 rows
    ("answer", {"x": 1}, "answer", "expected a string, got {'x': 1}"),  # case 3: was built silently
    ("id", [1, 2], "id", "expected an integer or a string, got [1, 2]"),  # case 4: was the id "[1, 2]"
])
def test_a_line_with_a_wrong_type_is_reported_and_the_rest_built(rel, tmp_path, tokenizer_path, field, value,
                                                                   reported_field, words):
    good = _vh_lines(rel)
    bad = {**good[0], field: value}
    root = _damaged_copy(rel, tmp_path, [json.dumps(good[0]).encode(), json.dumps(bad).encode(),
                                         json.dumps(good[1]).encode()])
    result, ids = _build(root, tmp_path, tokenizer_path)
    assert ids == ["7", "8"]
    [skipped] = result.report["skipped"]
    assert skipped["record"] == "line 2" and skipped["field"] == reported_field
    assert skipped["file"].endswith(VH) and words in skipped["reason"]
    assert read_manifest(tmp_path / "out", "vh_single_8k")["report"]["skipped"] == [skipped]


def test_a_line_that_is_not_utf8_is_named_and_the_rest_built(rel, tmp_path, tokenizer_path):
    """Case 2: one byte 0xff in the question was a UnicodeDecodeError failing the config, line unnamed."""
    good = _vh_lines(rel)
    text = json.dumps({**good[1], "question": "Is there a cow\u00e9?"}, ensure_ascii=False)
    broken = text.encode().replace("\u00e9".encode(), b"\xff")
    assert b"\xff" in broken
    root = _damaged_copy(rel, tmp_path, [json.dumps(good[0]).encode(), broken, json.dumps(good[1]).encode()])
    result, ids = _build(root, tmp_path, tokenizer_path)
    assert ids == ["7", "8"]
    [skipped] = result.report["skipped"]
    assert skipped["record"] == "line 2" and "not UTF-8: byte 0xff" in skipped["reason"]


def test_the_cli_build_exits_0_with_the_bad_line_in_the_manifest(rel, tmp_path, tokenizer_path, capsys):
    good = _vh_lines(rel)
    root = _damaged_copy(rel, tmp_path, [json.dumps({**good[0], "ctxs": [5, None]}).encode(),
                                         json.dumps(good[1]).encode()])
    assert main(["build", "vh_single_8k", "--source", f"mmlb_release={root}", "--out", str(tmp_path / "out"),
                 "--tokenizer", str(tokenizer_path), "--cache-dir", str(tmp_path / "cache"), "--no-progress"]) == 0
    assert [r["id"] for r in iter_rows(tmp_path / "out", "vh_single_8k")] == ["8"]
    [skipped] = read_manifest(tmp_path / "out", "vh_single_8k")["report"]["skipped"]
    # named under the source folder, not this machine's path (the same under every executor)
    assert skipped["file"] == f"damaged/mmlb_data/{VH}" and skipped["field"] == "ctxs[0]"


def test_the_paper_draw_leaves_out_bad_lines_instead_of_failing(rel, tmp_path):
    """A list id once failed the official-style set()/sorted() draw for the whole file."""
    good = _vh_lines(rel)
    root = _damaged_copy(rel, tmp_path, [json.dumps({**good[0], "id": [1, 2]}).encode(),
                                         json.dumps(good[1]).encode()])
    report = BuildReport()
    rows = list(release.read_release_file(root / "mmlb_data" / VH, "vh", report, paper=100))
    assert [row.official_id for _, row in rows] == [8] and report.skipped[0].record == "line 1"


# -- property test: random JSON in every field of every release file kind ------------------------
#: one good record per kind, shaped as test_mmlb_release.write_release and data.py's loaders read them
PASSAGES = [{"title": "Louvre", "text": "A museum.", "doc_id": "d1"}, {"title": "Seine", "text": "A river.", "doc_id": "d2"}]
TEXT_CTXS = [{"text": "The first passage. <image>"}, {"text": "The needle: the key is 42."}]
PAGES = ["docs/4055915/page0.png", "docs/4055915/page1.png"]
GOOD = {
    "vrag": {"id": "oven_1", "question": "Which country?", "answer": ["France", "FR"], "image": "coco/a.jpg",
             "ctxs": PASSAGES},
    "vrag_occ": {"id": "o1", "question": "Where?", "answer": ["Paris"], "image": "coco/a.jpg", "ctxs": PASSAGES,
                 "positive_ctxs": [{"doc_id": "d1"}]},
    "text_rag": {"id": "t1", "question": "unused", "original_question": "Where?", "answer": ["Paris"],
                 "ctxs": PASSAGES},
    "vh": {"id": 7, "question": "Is there a cat?", "answer": "Yes", "ctxs": ["coco/a.jpg", "coco/b.jpg"]},
    "niah": {"id": "rt1", "question": "What is the key?", "answer": "42", "ctxs": TEXT_CTXS, "image_list": ["a.jpg"]},
    "niah_count": {"id": "ci1", "question": "How many? <image>", "answer": [1], "ctxs": TEXT_CTXS,
                   "image_list": ["a.jpg"], "needle_image_list": ["b.jpg"]},
    "niah_choice": {"id": "ri1", "question": "Which?", "answer": 1, "ctxs": TEXT_CTXS, "image_list": ["a.jpg"],
                    "choices_image": ["b.jpg", "c.jpg"]},
    "gov": {"id": "gov1", "image_list": ["gov/GAO-19-123/page0.png"],
            "summary": [{"section_title": "What GAO Found", "paragraphs": ["First."]}]},
    "lexsum": {"id": "lex1", "image_list": PAGES, "summary": "The court ruled."},
    "docqa": {"id": "q2", "question": "Which two?", "doc_name": "4055915", "page_list": PAGES,
              "answer": "[\"a\", \"b\"]", "answer_format": "List"},
    "text_doc": {"id": "x1", "question": "What year?", "doc_name": "4055915", "answer": "2019",
                 "answer_format": "Integer", "page_list": PAGES, "page_text_list": ["One.", "Two."]},
}
JSON = st.recursive(st.none() | st.booleans() | st.integers(-3, 3) | st.floats(allow_nan=False)
                    | st.text(max_size=12) | st.sampled_from(["page", "a/page1.png", "List", "[1, 2]", "[\"x\"]"]),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
                        st.sampled_from(["text", "title", "doc_id", "image", "id", "section_title", "paragraphs"]),
                        inner, max_size=4), max_leaves=8)
FIELD_OF = st.sampled_from([(kind, name) for kind, schema in sorted(LINE_SCHEMAS.items()) for name in schema.fields])
PROPERTY = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def test_every_kind_has_a_good_record_that_fits_and_builds():
    assert sorted(GOOD) == sorted(LINE_SCHEMAS)
    for kind, record in GOOD.items():
        assert problem(record, LINE_SCHEMAS[kind]) is None, kind
        release.assemble(kind, record)


@PROPERTY
@given(target=FIELD_OF, value=JSON, drop=st.booleans())
def test_random_values_in_any_field_never_crash_a_release_file(tmp_path, target, value, drop):
    """[good, damaged, good]: the damaged line is built when its schema takes it (then the loader
    must too) and reported with its field when not; the good lines are built either way."""
    kind, name = target
    damaged = {k: v for k, v in GOOD[kind].items() if k != name} if drop else {**GOOD[kind], name: value}
    path = tmp_path / f"{kind}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in (GOOD[kind], damaged, GOOD[kind])))
    report = BuildReport()
    rows = dict(release.read_release_file(path, kind, report))
    seen: set[str] = set()
    assert all(isinstance(release.unique_id(row, n, seen), str) for n, row in rows.items())
    assert 1 in rows and 3 in rows
    if problem(damaged, LINE_SCHEMAS[kind]) is None:
        assert 2 in rows and not report.skipped, report.summary()
        assert all(isinstance(a, str) for a in rows[2].answers) and all(isinstance(i, str) for i in rows[2].images)
    else:
        assert 2 not in rows and [s.record for s in report.skipped] == ["line 2"]
        assert report.skipped[0].field.split("[")[0].split(".")[0] in (name, *[r.field for r in LINE_SCHEMAS[kind].rules])


ICL_GOOD = {"cars": {"exemplar_list": [[[{"image": "a.jpg", "id": 0}, {"image": "b.jpg", "id": 1}]]],
                     "test_example": [{"image": "c.jpg", "answer": 1}, {"image": "d.jpg", "answer": 0}]}}


@PROPERTY
@given(where=st.sampled_from(["exemplar_list", "exemplar image", "exemplar id", "test image", "test answer",
                              "test id", "test_example"]), value=JSON)
def test_random_values_in_an_icl_file_never_crash_it(tmp_path, where, value):
    data = json.loads(json.dumps(ICL_GOOD))
    data["dogs"] = json.loads(json.dumps(ICL_GOOD["cars"]))  # a second domain, always good
    entry = data["cars"]
    if where in ("exemplar_list", "test_example"):
        entry[where] = value
    elif where.startswith("exemplar"):
        entry["exemplar_list"][0][0][0][where.split()[1]] = value
    else:
        entry["test_example"][0][where.split()[1]] = value
    path = tmp_path / "icl.json"
    path.write_text(json.dumps(data))
    report = BuildReport()
    rows = [row for _, row in release.read_icl_file(path, report)]
    domain_ok = problem(entry, ICL_DOMAIN) is None
    tests_ok = domain_ok and sum(problem(t, ICL_TEST) is None for t in entry["test_example"])
    assert len(rows) == 2 + tests_ok  # the good domain's two tests always; the damaged one's that fit
    assert all(r.record is not None for r in report.skipped)  # a domain or test example, never the whole file
    assert all(isinstance(a, str) for row in rows for a in row.answers)


NEEDLE_GOOD = {"id": 0, "image_ids": ["images_stitched/2_2/a.jpg"], "index": 0, "row": 1, "col": 0,
               "target": "val2014/a.jpg"}


@PROPERTY
@given(name=st.sampled_from(sorted(needle.ENTRY_SCHEMA.fields)), value=JSON)
def test_random_values_in_an_mmneedle_entry_never_crash_it(tmp_path, name, value):
    root = tmp_path / "mmneedle"
    (root / "metadata_stitched").mkdir(parents=True, exist_ok=True)
    (root / needle.CAPTIONS).write_text(json.dumps({"val2014/a.jpg": "A dog."}))
    damaged = {**NEEDLE_GOOD, name: value}
    needle.metadata_path(root, 1, 2, 1).write_text(json.dumps([NEEDLE_GOOD, damaged, NEEDLE_GOOD]))
    report = BuildReport()
    samples = list(needle.read_samples(root, 1, 2, 1, report))
    assert [s.number for s in samples if s.number != 1] == [0, 2]
    if problem(damaged, needle.ENTRY_SCHEMA) is None and not report.skipped:
        assert samples[1].number == 1 and all(isinstance(nd.index, int) for nd in samples[1].needles)
    else:
        assert [s.record for s in report.skipped] == ["entry 1"]


def test_an_mmneedle_file_that_is_not_json_names_the_file(tmp_path):
    root = tmp_path / "mmneedle"
    (root / "metadata_stitched").mkdir(parents=True)
    (root / needle.CAPTIONS).write_text("{}")
    needle.metadata_path(root, 1, 2, 1).write_bytes(b"[\xff]")
    with pytest.raises(ValueError, match="annotations_1_2_2.json: not a readable JSON file"):
        list(needle.read_samples(root, 1, 2, 1, BuildReport()))


def test_json_lines_name_the_line_and_byte_that_is_not_utf8(tmp_path):
    """Valid UTF-8 beyond ASCII is read; a bad byte costs only its line; CRLF lines split as in text mode."""
    from mmlbdata.sources.records import BadRecord, read_jsonl

    path = tmp_path / "mixed.jsonl"
    path.write_bytes(b'{"a": 1}\r\n{"b": "x\xc3\xa9\xff"}\n{"c": "\xc3\xa9"}\n')
    records = list(read_jsonl(path))
    assert [n for n, _ in records] == [1, 2, 3] and records[0][1] == {"a": 1} and records[2][1] == {"c": "\u00e9"}
    assert isinstance(records[1][1], BadRecord) and records[1][1].reason == "not UTF-8: byte 0xff at character 9"


def test_a_line_nested_too_deep_to_parse_costs_its_line_only(tmp_path):
    """json.loads raises RecursionError (not JSONDecodeError) on a value nested ~100,000 deep:
    that line is reported as invalid JSON, the lines around it are read."""
    from mmlbdata.sources.records import BadRecord, read_jsonl

    path = tmp_path / "deep.jsonl"
    path.write_text('{"id": 1}\n{"id": 2, "ctxs": ' + "[" * 100_000 + "]" * 100_000 + '}\n{"id": 3}\n')
    records = list(read_jsonl(path))
    assert [r for _n, r in records if isinstance(r, dict)] == [{"id": 1}, {"id": 3}]
    assert isinstance(records[1][1], BadRecord) and records[1][1].reason.startswith("invalid JSON")


def test_a_lone_surrogate_escape_costs_its_line_only(tmp_path, real_data, tokenizer_path):
    """``"\\ud800"`` is valid JSON that Python reads into a string no UTF-8 holds: the tokenizer failed
    the whole config on it. The line is reported; an escaped pair (an emoji) is text and is built."""
    root = tmp_path / "release"
    write_release(root, real_data, k=8)
    path = root / "mmlb_data" / "NIAH" / "vh_single_test_1000_K8_dep6.jsonl"
    lines = path.read_text().splitlines()
    lines[0] = lines[0].replace('"question": "', '"question": "\\ud800', 1)
    lines[1] = lines[1].replace('"question": "', '"question": "\\ud83d\\ude00', 1)
    path.write_text("\n".join(lines) + "\n")
    [result] = build_configs(["vh_single_8k"], {"mmlb_release": root}, tmp_path / "out", tokenizer=tokenizer_path,
                             store_root=tmp_path / "store", progress=False)
    assert result.ok, result.error
    assert [s["record"] for s in result.report["skipped"]] == ["line 1"]
    assert "lone surrogate" in result.report["skipped"][0]["reason"]
    assert [r["question"][:1] for r in iter_rows(tmp_path / "out", "vh_single_8k")] == ["\U0001F600"]


def test_a_lone_surrogate_in_the_icl_file_costs_its_test_example_only(tmp_path, real_data, tokenizer_path):
    root = tmp_path / "release"
    write_release(root, real_data, k=8)
    path = root / "mmlb_data" / "ICL" / "cars196_K8.json"
    path.write_text(path.read_text().replace('"answer": 1}', '"answer": "\\ud800"}', 1))
    [result] = build_configs(["cars196_8k"], {"mmlb_release": root}, tmp_path / "out", tokenizer=tokenizer_path,
                             store_root=tmp_path / "store", progress=False)
    assert result.ok, result.error
    [skip] = result.report["skipped"]
    assert skip["record"] == "domain cars test example 0" and "lone surrogate" in skip["reason"]
    assert len(list(iter_rows(tmp_path / "out", "cars196_8k"))) == 1
