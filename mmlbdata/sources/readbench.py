"""Readers for ReadBench's five text sources, in their Hub release formats.

Each reader takes either a local folder holding the Hub dataset's files (as downloaded with
``hf download --repo-type dataset``) or ``None`` to read the Hub with ``datasets``.
They yield plain records; what is rendered and how the prompt looks is the builder's business
(``mmlbdata/official/readbench_prompts.py`` holds the prompts). Which records a config builds is decided
here too (the "selection" section at the end): ReadBench's per-group ``Random(42)`` draw and the
replay of its ``downsampler.py``.

Local layouts (the Hub repositories' own files):

* ``TIGER-Lab/MMLU-Pro``: ``data/test-00000-of-00001.parquet`` (question_id, question, options,
  answer, answer_index, cot_content, category, src).
* ``edinburgh-dawg/mmlu-redux-2.0``: one folder per subject holding the test split, either as
  ``datasets`` saved it (``<subject>/data-00000-of-00001.arrow``) or as the Hub's parquet
  conversion (``<subject>/test/0000.parquet``); columns question, choices, answer (index),
  error_type, source, correct_answer, potential_reason.
* ``Idavidrein/gpqa`` (gated): ``gpqa_diamond.csv`` (Question, Correct Answer, Incorrect Answer
  1-3, Record ID, High-level domain, Subdomain, ...).
* ``RMT-team/babilong``: ``data/<task>/<length>.json`` (input, question, target), e.g.
  ``data/qa1/4k.json``.
* ``THUDM/LongBench``: ``data/<subset>.jsonl`` from its ``data.zip``, or the parquet mirror
  ``<subset>/test/0000.parquet`` (input, context, answers, length, dataset, language,
  all_classes, _id).

A record with a missing or empty required field is skipped and reported (file and row), and
unreadable rows (bad JSON) likewise; the rest is read.
"""
from __future__ import annotations

import csv
import json
import random
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Optional, Sequence

from mmlbdata.core.paths import is_inside
from mmlbdata.core.report import BuildReport
from mmlbdata.official.readbench_prompts import LETTERS
from mmlbdata.sources.records import read_jsonl_reported

ROW_SUFFIXES = (".parquet", ".jsonl", ".json", ".csv", ".arrow")

HUB = {
    "mmlu_pro": "TIGER-Lab/MMLU-Pro",
    "mmlu_redux": "edinburgh-dawg/mmlu-redux-2.0",
    "gpqa": "Idavidrein/gpqa",
    "babilong": "RMT-team/babilong",
    "longbench": "THUDM/LongBench",
}

LAYOUTS = {
    "mmlu_pro": "TIGER-Lab/MMLU-Pro files: data/test-*.parquet (or omit to read the Hub)",
    "mmlu_redux": "edinburgh-dawg/mmlu-redux-2.0 files: <subject>/data-*.arrow or <subject>/test/*.parquet "
                  "(or omit to read the Hub)",
    "gpqa": "Idavidrein/gpqa files: gpqa_diamond.csv (gated; or omit to read the Hub with a token)",
    "babilong": "RMT-team/babilong files: data/<qa1..qa10>/<0k..128k>.json (or omit to read the Hub)",
    "longbench": "THUDM/LongBench files: data/<subset>.jsonl or <subset>/test/*.parquet (or omit to read the Hub)",
}

MMLU_SUBJECTS = (
    "abstract_algebra", "anatomy", "astronomy", "business_ethics", "clinical_knowledge",
    "college_biology", "college_chemistry", "college_computer_science", "college_mathematics",
    "college_medicine", "college_physics", "computer_security", "conceptual_physics", "econometrics",
    "electrical_engineering", "elementary_mathematics", "formal_logic", "global_facts",
    "high_school_biology", "high_school_chemistry", "high_school_computer_science",
    "high_school_european_history", "high_school_geography", "high_school_government_and_politics",
    "high_school_macroeconomics", "high_school_mathematics", "high_school_microeconomics",
    "high_school_physics", "high_school_psychology", "high_school_statistics", "high_school_us_history",
    "high_school_world_history", "human_aging", "human_sexuality", "international_law", "jurisprudence",
    "logical_fallacies", "machine_learning", "management", "marketing", "medical_genetics",
    "miscellaneous", "moral_disputes", "moral_scenarios", "nutrition", "philosophy", "prehistory",
    "professional_accounting", "professional_law", "professional_medicine", "professional_psychology",
    "public_relations", "security_studies", "sociology", "us_foreign_policy", "virology", "world_religions",
)
BABILONG_TASKS = tuple(f"qa{i}" for i in range(1, 11))
BABILONG_LENGTHS = ("0k", "1k", "2k", "4k", "8k", "16k", "32k", "64k", "128k", "256k", "512k")
LONGBENCH_SUBSETS = ("2wikimqa_e", "hotpotqa_e", "triviaqa_e", "narrativeqa")


@dataclass(frozen=True)
class MCRecord:
    """A multiple-choice question (MMLU-Pro, MMLU-Redux, GPQA)."""

    source: str
    id: str
    question: str
    options: tuple[str, ...]
    answer: str  # letter of the correct option
    category: str
    extra: dict = field(default_factory=dict, compare=False, hash=False)


@dataclass(frozen=True)
class BabilongRecord:
    id: str
    task: str
    length: str  # the BABILong length config, e.g. "4k"
    index: int  # row index within (task, length): the same bAbI sample across lengths
    input: str
    question: str
    target: str


@dataclass(frozen=True)
class LongBenchRecord:
    id: str
    subset: str
    input: str
    context: str
    answers: tuple[str, ...]
    length: int  # LongBench's word count of the context
    all_classes: Optional[tuple[str, ...]] = None


# -- rows from files or the Hub -------------------------------------------------------------------

def _json_rows(path: Path, report: BuildReport) -> Iterator[tuple[int, dict]]:
    with open(path, encoding="utf-8") as handle:
        head = handle.read(1)
        while head and head.isspace():
            head = handle.read(1)
        handle.seek(0)
        if head == "[":
            try:
                rows = json.load(handle)
            except json.JSONDecodeError as err:
                report.skip(path, None, f"invalid JSON file ({err})")
                return
            yield from enumerate(rows)
            return
    for line_no, record in read_jsonl_reported(path, report):
        yield line_no - 1, record


def _arrow_rows(path: Path) -> Iterator[tuple[int, dict]]:
    import pyarrow as pa

    with open(path, "rb") as handle:
        try:
            reader = pa.ipc.open_stream(handle)
        except pa.ArrowInvalid:
            handle.seek(0)
            reader = pa.ipc.open_file(handle)
            batches = (reader.get_batch(i) for i in range(reader.num_record_batches))
        else:
            batches = iter(reader)
        index = 0
        for batch in batches:
            for row in batch.to_pylist():
                yield index, row
                index += 1


def read_rows(path: Path, report: BuildReport) -> Iterator[tuple[int, dict]]:
    """(row index, row dict) of a parquet, JSON / JSON-lines, CSV or Arrow file, streamed."""
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        index = 0
        for batch in pq.ParquetFile(path).iter_batches(batch_size=256):
            for row in batch.to_pylist():
                yield index, row
                index += 1
    elif suffix in (".json", ".jsonl"):
        yield from _json_rows(path, report)
    elif suffix == ".csv":
        with open(path, encoding="utf-8", newline="") as handle:
            yield from enumerate(csv.DictReader(handle))
    elif suffix == ".arrow":
        yield from _arrow_rows(path)
    else:
        raise ValueError(f"{path}: unsupported file type (expected one of {', '.join(ROW_SUFFIXES)})")


def hub_rows(repo: str, name: Optional[str], split: str, **kwargs: Any) -> Iterator[tuple[int, dict]]:
    """Rows of a Hub dataset through ``datasets`` (only when no local folder is given)."""
    from datasets import load_dataset

    dataset = load_dataset(repo, name, split=split, **kwargs)
    yield from enumerate(dataset)


def _files(root: Path, pattern: str) -> list[Path]:
    """Row files under ``root`` matching ``pattern``, sorted (deterministic order)."""
    return sorted(p for p in root.glob(pattern) if p.is_file() and p.suffix.lower() in ROW_SUFFIXES
                  and is_inside(root, p.relative_to(root))  # a symlink leading out is never read
                  and p.name not in ("dataset_info.json", "state.json") and not p.name.startswith("."))


def missing_fields(row: dict, fields: Iterable[str]) -> list[str]:
    """Required fields that are absent, None, or empty."""
    out = []
    for name in fields:
        value = row.get(name)
        if value is None or (isinstance(value, (str, list, tuple)) and len(value) == 0):
            out.append(name)
    return out


def _check(row: Any, fields: Sequence[str], where: object, index: object, report: BuildReport) -> bool:
    if not isinstance(row, dict):
        report.skip(where, index, f"row is a {type(row).__name__}, not an object")
        return False
    missing = missing_fields(row, fields)
    if missing:
        report.skip(where, index, f"missing field(s): {', '.join(missing)}")
        return False
    return True


def checked_rows(key: str, root: Optional[Path], report: BuildReport, fields: Sequence[str],
                 patterns: Sequence[str], hub: tuple, what: str) -> Iterator[tuple[object, int, dict]]:
    """(where, index, row) of the rows that have every required field, from local files or the Hub.

    ``patterns`` are globs tried in order under ``root`` (the first that matches wins); ``hub`` is
    ``(name, split, kwargs)`` for :func:`hub_rows`; ``what`` names the file in error messages.
    """
    if root is None:
        name, split, kwargs = hub
        label = "/".join(str(part) for part in (HUB[key], name, split) if part)
        sources: list = [(f"hf://{label}", hub_rows(HUB[key], name, split, **kwargs))]
    else:
        files: list[Path] = []
        for pattern in patterns:
            files = files or _files(root, pattern)
        if not files:
            raise FileNotFoundError(f"{root}: no {what} (expected {LAYOUTS[key]})")
        sources = [(path, read_rows(path, report)) for path in files]
    for where, rows in sources:
        for index, row in rows:
            if _check(row, fields, where, index, report):
                yield where, index, row


# -- MMLU-Pro -------------------------------------------------------------------------------------

MMLU_PRO_FIELDS = ("question_id", "question", "options", "answer", "category")


def read_mmlu_pro(root: Optional[Path], report: BuildReport) -> Iterator[MCRecord]:
    """MMLU-Pro test questions (10 options, letter answers)."""
    for where, index, row in checked_rows("mmlu_pro", root, report, MMLU_PRO_FIELDS, ("**/test-*", "**/test*"),
                                          (None, "test", {}), "MMLU-Pro test file"):
        options = tuple(str(o) for o in row["options"])
        answer = str(row["answer"]).strip().upper()
        if answer not in LETTERS[: len(options)]:
            report.skip(where, index, f"answer {answer!r} is not one of the {len(options)} option letters")
            continue
        yield MCRecord("mmlu_pro", f"mmlu_pro_{row['question_id']}", str(row["question"]), options,
                       answer, str(row["category"]), {"src": row.get("src")})


# -- MMLU-Redux 2.0 -------------------------------------------------------------------------------

MMLU_REDUX_FIELDS = ("question", "choices", "answer")


def _redux_sources(root: Optional[Path], report: BuildReport) -> Iterator[tuple[str, object, Iterator]]:
    if root is None:
        for subject in MMLU_SUBJECTS:
            yield subject, f"hf://{HUB['mmlu_redux']}/{subject}/test", hub_rows(HUB["mmlu_redux"], subject, "test")
        return
    subjects = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    if not subjects:
        raise FileNotFoundError(f"{root}: no subject folder (expected {LAYOUTS['mmlu_redux']})")
    for folder in subjects:
        for path in _files(folder, "**/*"):
            yield folder.name, path, read_rows(path, report)


def read_mmlu_redux(root: Optional[Path], report: BuildReport) -> Iterator[MCRecord]:
    """MMLU-Redux 2.0 test questions of all subjects (4 options, index answers)."""
    for subject, where, rows in _redux_sources(root, report):
        for index, row in rows:
            if not _check(row, MMLU_REDUX_FIELDS, where, index, report):
                continue
            options = tuple(str(o) for o in row["choices"])
            try:
                answer = LETTERS[int(row["answer"])]
                if int(row["answer"]) >= len(options) or int(row["answer"]) < 0:
                    raise IndexError
            except (ValueError, IndexError, TypeError):
                report.skip(where, index, f"answer {row['answer']!r} is not an index into {len(options)} choices")
                continue
            extra = {k: row.get(k) for k in ("error_type", "source", "correct_answer", "potential_reason")}
            yield MCRecord("mmlu_redux", f"mmlu_redux_{subject}_{index}", str(row["question"]), options,
                           answer, subject, extra)


# -- GPQA -----------------------------------------------------------------------------------------

GPQA_FIELDS = ("Question", "Correct Answer", "Incorrect Answer 1", "Incorrect Answer 2",
               "Incorrect Answer 3", "Record ID")


def read_gpqa(root: Optional[Path], report: BuildReport, subset: str = "gpqa_diamond") -> Iterator[MCRecord]:
    """GPQA questions; options are (correct, incorrect 1-3): the builder shuffles them."""
    for where, index, row in checked_rows("gpqa", root, report, GPQA_FIELDS, (f"**/{subset}.*",),
                                          (subset, "train", {}), f"{subset}.csv"):
        options = tuple(str(row[k]).strip() for k in GPQA_FIELDS[1:5])
        category = str(row.get("High-level domain") or "")
        yield MCRecord("gpqa", f"gpqa_{row['Record ID']}", str(row["Question"]).strip(), options, "A",
                       category, {"subdomain": row.get("Subdomain"), "record_id": row["Record ID"]})


# -- BABILong -------------------------------------------------------------------------------------

BABILONG_FIELDS = ("input", "question", "target")


def read_babilong(root: Optional[Path], report: BuildReport, task: str, length: str) -> Iterator[BabilongRecord]:
    """BABILong samples of one task at one length config, in file order."""
    for _, index, row in checked_rows("babilong", root, report, BABILONG_FIELDS, (f"**/{task}/{length}.*",),
                                      (length, task, {}), f"{task}/{length}.json"):
        yield BabilongRecord(f"babilong_{task}_{length}_{index}", task, length, index,
                             str(row["input"]), str(row["question"]), str(row["target"]))


# -- LongBench ------------------------------------------------------------------------------------

LONGBENCH_FIELDS = ("input", "context", "answers")


def read_longbench(root: Optional[Path], report: BuildReport, subset: str) -> Iterator[LongBenchRecord]:
    """LongBench test samples of one subset (English subsets: ``*_e`` and narrativeqa)."""
    hub = (None, "test", {"revision": "refs/convert/parquet", "data_files": {"test": f"{subset}/test/*.parquet"}})
    for _, index, row in checked_rows("longbench", root, report, LONGBENCH_FIELDS,
                                      (f"**/{subset}.jsonl", f"**/{subset}/test/*"), hub, f"{subset} file"):
        answers = row["answers"] if isinstance(row["answers"], list) else [row["answers"]]
        context = str(row["context"])
        length = row.get("length")
        classes = row.get("all_classes")
        yield LongBenchRecord(
            id=f"longbench_{subset}_{row.get('_id') or index}", subset=subset, input=str(row["input"]),
            context=context, answers=tuple(str(a) for a in answers),
            length=int(length) if isinstance(length, (int, float)) else len(context.split()),
            all_classes=tuple(classes) if classes else None)


_LENGTH_KEY = re.compile(r"^(\d+)k$")


def babilong_length_tokens(key: str) -> int:
    """``"4k"`` -> 4096 (BABILong's nominal context length in tokens)."""
    match = _LENGTH_KEY.match(key)
    if not match:
        raise ValueError(f"not a BABILong length: {key!r}")
    return int(match.group(1)) * 1024


# -- selection: the records a config builds ---------------------------------------------------------
# ReadBench keeps 35 records per group, drawn with ``random.Random(42)``. By default each group gets
# a fresh generator (``sample_per_group``: one group's questions do not depend on the others');
# ``selection=official`` replays its ``downsampler.py`` (``OfficialDraw``: one generator over the
# groups of every dataset).
SAMPLE_SEED = 42
PER_GROUP = 35
ORIGINAL_BABILONG_LENGTHS = ("0k", "1k", "2k", "4k", "8k")  # the BABILong lengths ReadBench uses
LONGBENCH_BINS = (512, 1024, 2048, 4096, 8192)  # word-count bins; shorter and longer dropped


def longbench_bin(words: int) -> Optional[str]:
    """``"1024-2048"`` for 1500 words; None outside 512..8191."""
    for low, high in zip(LONGBENCH_BINS, LONGBENCH_BINS[1:]):
        if low <= words < high:
            return f"{low}-{high}"
    return None


def sample_per_group(items: Iterable[Any], key, k: int = PER_GROUP, seed: int = SAMPLE_SEED) -> list[Any]:
    """``k`` items per group (sorted group names), each drawn with a fresh ``random.Random(seed)``.

    Within a group the draw keeps the sample's order of ``random.sample`` (the original's); a
    group smaller than ``k`` is taken whole, in source order.
    """
    groups: dict[str, list[Any]] = defaultdict(list)
    for item in items:
        groups[key(item)].append(item)
    out = []
    for name in sorted(groups):
        members = groups[name]
        out.extend(random.Random(seed).sample(members, k) if len(members) > k else members)
    return out


# ReadBench's downsampler.py (standard split): the groups of every dataset, keyed as it keys them,
# are drawn in sorted key order from ONE ``random.Random(42)``; LongBench bins outside 512..8191 and
# BABILong above 8k are filtered out first, multifieldqa_en_e is dropped only after its draws.
OFFICIAL_LONGBENCH_SUBSETS = ("2wikimqa_e", "hotpotqa_e", "multifieldqa_en_e", "narrativeqa", "passage_count_e",
                              "triviaqa_e")
LAST = "\uffff"  # sorts after every group name: (family, LAST) bounds a whole family's keys


def official_draw(group_sizes: dict[tuple, int], cap: int = PER_GROUP, seed: int = SAMPLE_SEED) -> dict[tuple, list[int]]:
    """Positions chosen in each group as downsampler.py chooses them.

    One generator for all groups, visited in sorted key order; a group of at most ``cap`` is taken
    whole without a draw, GPQA always whole; otherwise ``sample(group, cap)``, whose choice depends on
    the group's length only, so sampling the positions gives the same members in the same order.
    """
    rng = random.Random(seed)
    picks = {}
    for key in sorted(group_sizes):
        size = group_sizes[key]
        whole = key[0] == "gpqa" or size <= cap
        picks[key] = list(range(size)) if whole else rng.sample(range(size), cap)
    return picks


class OfficialDraw:
    """downsampler.py's draw for one config: every group it draws before this config's own must be
    counted, since they all share its one generator.

    ``root_of(key)`` is a source's local folder (None: the Hub); ``config`` names the config in
    errors. Counting reads report into a throwaway report: their bad lines are the other configs'
    to report.
    """

    def __init__(self, root_of: Callable[[str], Optional[Path]], config: str, seed: int = SAMPLE_SEED) -> None:
        self.root_of, self.config, self.seed = root_of, config, seed

    def select(self, records: Iterable[Any], group_of, family: str, upto: tuple) -> list[Any]:
        """The records downsampler.py keeps, groups in sorted order, members in the draw's order.

        ``group_of(record)`` is the record's group key without the family; ``upto`` the last key of
        this config's groups (``(family, LAST)`` for a whole family).
        """
        groups: dict[tuple, list[Any]] = defaultdict(list)
        for record in records:
            groups[(family, *group_of(record))].append(record)
        unit = upto[:-1] if upto[-1] == LAST else upto  # the source read here: its groups are held
        held = {key: len(members) for key, members in groups.items()}
        picks = official_draw(dict(self.groups(upto, unit, held)), seed=self.seed)
        chosen = []
        for key in sorted(groups):
            chosen.extend(groups[key][i] for i in picks[key])
        return chosen

    def groups(self, upto: tuple, unit: tuple = (), held: Optional[dict[tuple, int]] = None
               ) -> Iterator[tuple[tuple, int]]:
        """(key, size) of downsampler.py's groups in sorted key order, read until ``upto`` is passed.

        Its keys: (babilong, length, task), (gpqa, ...) never drawn, (longbench, subset, bin),
        (mmlu_pro, category), (mmlu_redux, subject). Sources are read lazily, a family at a time.
        The groups of ``unit`` (the source this config reads: ``(family,)``, ``("babilong", length,
        task)`` or ``("longbench", subset)``) are not read again: their sizes are ``held``.
        """
        held = held or {}
        families = {"babilong": self._babilong_group_sizes, "longbench": self._longbench_group_sizes,
                    "mmlu_pro": lambda upto, unit, held: self._mc_group_sizes("mmlu_pro", unit, held),
                    "mmlu_redux": lambda upto, unit, held: self._mc_group_sizes("mmlu_redux", unit, held)}
        for family in sorted(families):
            if (family,) > upto:
                return
            for key, size in families[family](upto, unit, held):
                if key > upto:
                    return
                yield key, size

    def _needed(self, reader, what: str):
        try:
            return reader()
        except FileNotFoundError as err:
            raise FileNotFoundError(f"{self.config}: selection=official needs the size of every group "
                                    f"downsampler.py draws before this one, {what} included: {err}") from err

    def _babilong_group_sizes(self, upto: tuple, unit: tuple, held: dict[tuple, int]) -> Iterator[tuple[tuple, int]]:
        for length, task in sorted((length, task) for length in ORIGINAL_BABILONG_LENGTHS for task in BABILONG_TASKS):
            key = ("babilong", length, task)
            if key > upto:  # checked before reading: later files are not needed
                return
            if key == unit:
                size = held.get(key, 0)
            else:
                size = self._needed(lambda: sum(1 for _ in read_babilong(self.root_of("babilong"), BuildReport(),
                                                                         task, length)), f"babilong {task}/{length}")
            yield key, size

    def _longbench_group_sizes(self, upto: tuple, unit: tuple, held: dict[tuple, int]) -> Iterator[tuple[tuple, int]]:
        for subset in sorted(OFFICIAL_LONGBENCH_SUBSETS):
            if ("longbench", subset) > upto:
                return
            if ("longbench", subset) == unit:
                bins = {key[2]: size for key, size in held.items() if key[:2] == unit}
            else:
                bins = self._needed(lambda: Counter(longbench_bin(r.length) for r in read_longbench(
                    self.root_of("longbench"), BuildReport(), subset)), f"LongBench {subset}")
            for label in sorted(b for b in bins if b is not None):
                yield ("longbench", subset, label), bins[label]

    def _mc_group_sizes(self, key: str, unit: tuple, held: dict[tuple, int]) -> Iterator[tuple[tuple, int]]:
        reader = read_mmlu_pro if key == "mmlu_pro" else read_mmlu_redux
        if unit == (key,):
            counts = {group[1]: size for group, size in held.items() if group[0] == key}
        else:
            counts = self._needed(lambda: Counter(r.category for r in reader(self.root_of(key), BuildReport())), key)
        missing = sorted(set(MMLU_SUBJECTS) - set(counts)) if key == "mmlu_redux" else []
        if missing:  # a subject absent from a local copy would silently shift every later draw
            raise FileNotFoundError(f"{self.config}: selection=official needs every MMLU-Redux subject "
                                    f"downsampler.py draws; missing: {', '.join(missing[:5])}"
                                    f"{' ...' if len(missing) > 5 else ''} ({len(missing)})")
        for category in sorted(counts):
            yield (key, category), counts[category]
