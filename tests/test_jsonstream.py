"""sources/jsonstream.py (ijson's C parser) reads the release files as ``json.load`` reads them, and
says where it differs: JSON that neither MemLens's dataset files (question ids, dates, dialogue
text, small numeric answers: official data.py ``json.load``s them) nor Multi-LexSum's sources.json
(document texts and metadata strings) hold."""
from __future__ import annotations

import json
import random

import pytest

from mmlbdata.sources.jsonstream import iter_array_items, iter_object_items


def _value(rnd: random.Random, depth: int = 0):
    roll = rnd.random()
    if depth > 4 or roll < 0.3:
        return rnd.choice([rnd.randint(-2**63, 2**63 - 1), rnd.random() * 10 ** rnd.randint(-300, 300), -0.0, 5e-324,
                           "s\u00e9\U0001f600\n\"\\/\t", "", True, False, None, 0.1, 1e308])
    if roll < 0.6:
        return [_value(rnd, depth + 1) for _ in range(rnd.randint(0, 4))]
    return {f"k{i}\u00e9": _value(rnd, depth + 1) for i in range(rnd.randint(0, 4))}


@pytest.mark.parametrize("ensure_ascii", [True, False])
def test_values_equal_json_load_for_nested_records(tmp_path, ensure_ascii):
    """Nested records of every JSON type (64-bit integers, floats of every magnitude, -0.0, the
    smallest subnormal, escapes, emoji) equal json.load's, repr for repr, in small and large chunks."""
    rnd = random.Random(46)
    records = [_value(rnd) for _ in range(1500)]
    path = tmp_path / "records.json"
    path.write_text(json.dumps(records, ensure_ascii=ensure_ascii, indent=1), encoding="utf-8")
    for chunk in (7, 1 << 16):
        assert repr(list(iter_array_items(path, chunk=chunk))) == repr(json.loads(path.read_text(encoding="utf-8")))
    path.write_text(json.dumps({"meta": 1, "data": records}, ensure_ascii=ensure_ascii), encoding="utf-8")
    assert repr(list(iter_array_items(path))) == repr(records)
    path.write_text(json.dumps({f"d{i}": r for i, r in enumerate(records)}, ensure_ascii=ensure_ascii), encoding="utf-8")
    assert repr(list(iter_object_items(path))) == repr(list(json.loads(path.read_text(encoding="utf-8")).items()))


@pytest.mark.parametrize("text, why", [
    ('[{"id": 123456789012345678901234567890}]', "integer overflow"),  # json.load: a Python int
    ('[{"answer": NaN}]', "invalid char"),  # json.load: nan
    ('[{"answer": -Infinity}]', "malformed number"),
    ('[{"answer": 1e400}]', "overflow"),  # json.load: inf
    ('[{"a": 1}, {"b": ', "premature EOF"),
])
def test_what_the_c_parser_refuses_stops_the_read_naming_the_file(tmp_path, text, why):
    path = tmp_path / "dataset_32k.json"
    path.write_text(text)
    with pytest.raises(ValueError, match=rf"dataset_32k.json: truncated or invalid JSON near byte ~\d+ \(.*{why}"):
        list(iter_array_items(path))


def test_a_lone_surrogate_escape_is_read_as_a_question_mark(tmp_path):
    """json.load keeps "\\ud800" as a lone surrogate, which no UTF-8 writer (parquet, the card) can
    write; a surrogate pair is read as its character by both."""
    path = tmp_path / "s.json"
    path.write_text('["a\\ud800b", "\\ud83d\\ude00"]')
    assert list(iter_array_items(path)) == ["a?b", "\U0001f600"]
    assert json.loads(path.read_text()) == ["a\ud800b", "\U0001f600"]


def test_the_wrong_shape_is_named(tmp_path):
    path = tmp_path / "x.json"
    for text, reader, message in (("[1]", iter_object_items, "expected a JSON object"),
                                  ("5", iter_array_items, "expected a JSON array or object"),
                                  ('{"items": [1]}', iter_array_items, "a JSON object without a 'data' array")):
        path.write_text(text)
        with pytest.raises(ValueError, match=f"x.json: {message}"):
            list(reader(path))
    path.write_text('{"data": [], "more": 1}')
    assert list(iter_array_items(path)) == []
