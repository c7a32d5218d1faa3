"""MMLongBench's released test files (``mmlb_data/`` + ``mmlb_image/``), read as its loader reads them.

The release (Hugging Face ``ZhaoweiWang/MMLongBench``) holds one file per dataset and length, named
as in the official ``scripts/generate_configs.py``; the official ``data.py`` turns each record into
a prompt with one loader per task kind. This module is that loader's counterpart in our schema:
:func:`assemble` builds the prompt exactly as ``data.py`` does (``user_template.format(context=...,
question=...)``; the answer prefix ``Answer:`` / ``label:`` / ``Summary:`` is kept apart, as in every
family here), the image names in prompt order (relative to ``mmlb_image/``) and the answers.

Selection (``subset=paper``) follows the official evaluation, which calls ``transformers.set_seed(42)``
before each load: for VRAG, Visual Haystack and MM-NIAH ``random.sample(sorted(set(ids)), n)`` keeping
every row of a drawn id in file order; for summaries and document QA
``datasets.Dataset.shuffle(seed=42).select(range(n))`` (the same call is made here on an index
column); for ICL ``random.shuffle`` of the test examples, truncated. ``n`` is ``max_test_samples``:
100, and 50 for MM-NIAH.

ICL rows draw their exemplar round set with ``random.choice`` and shuffle each round in place, per
test example, inside ``datasets.map(num_proc=8)`` (the default ``--preprocessing_num_workers``).
Python reseeds ``random`` from the OS in every forked worker, so those draws follow no seed and no
two official runs see the same prompts. :func:`icl_rows` fixes them: the draws the official loader
makes when its map runs in its own process (``preprocessing_num_workers: null`` in the YAML config;
datasets 5 forks a worker even for ``num_proc=1``): one seeded sequence, recorded in ``meta``
(``exemplar_choice``, ``exemplar_ids``) with every candidate round set (``candidates``).

Reading is streaming (one line at a time; a selection keeps ids or at most ``n`` rows), except the
ICL files, which are single JSON objects.
"""
from __future__ import annotations

import copy
import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Optional

from mmlbdata.core.report import BuildReport
from mmlbdata.core.tokens import IMAGE_PLACEHOLDER
from mmlbdata.official import mmlongbench_prompts as prompts
from mmlbdata.official import names
from mmlbdata.official import protocol as protocols
from mmlbdata.sources.docqa import list_answer_text
from mmlbdata.sources.lineschema import Problem, problem
from mmlbdata.sources.mmlb_release_lines import ICL_DOMAIN, ICL_TEST, LINE_SCHEMAS
from mmlbdata.sources.records import Span, read_jsonl_reported_spans, read_spans, unencodable

SOURCE_KEY = "mmlb_release"
LAYOUT = ("MMLongBench release: mmlb_data/{vrag,NIAH,ICL,summ,documentQA}/<files as in the official "
          "scripts/generate_configs.py> + mmlb_image/ (mmlb_data.tar.gz and the image tarballs extracted)")
RELEASE_ONLY_LENGTH = 4096  # generate_configs.py's "4k": released, but no recipe here builds it
OFFICIAL_SEED = 42  # arguments.py --seed default; eval.py calls set_seed(args.seed) before each load

# The templates are data.py's, held once in mmlbdata.official.mmlongbench_prompts: every row below is assembled with its
# helpers (render, passage, page_item, doc_page_item, text_page_item, doc_question, icl_item,
# image_choices, vh_context), the ones the recipes build their rows with.


@dataclass(frozen=True)
class ReleaseFile:
    """Where one of our datasets lives in the release, and how its loader reads it."""

    category: str  # folder under mmlb_data/
    pattern: str  # file name with {k} for the length in K
    kind: str  # key of TEMPLATES (the data.py loader)
    paper_samples: int  # max_test_samples of the official configs

    def path(self, length: int) -> str:
        if not self.pattern:
            raise ValueError(f"the release's file names for the {self.kind} ablation are not in "
                             "generate_configs.py: give it with --option release_file=<path under mmlb_data>")
        return f"{self.category}/{self.pattern.format(k=length // 1024)}"

    @property
    def selection(self) -> str:
        """How the official loader draws its sample: by id, by datasets shuffle, or ICL shuffle."""
        return {"gov": "shuffle", "lexsum": "shuffle", "docqa": "shuffle", "text_doc": "shuffle",
                "icl": "icl"}.get(self.kind, "ids")


def _file(name: str, pattern: str, kind: str, paper_samples: int = 100) -> ReleaseFile:
    """Dataset ``name``'s file in its release folder (official.names)."""
    return ReleaseFile(names.BY_NAME[name].folder, pattern, kind, paper_samples)


def _niah(task: str, modality: str, depth: int) -> ReleaseFile:
    kind = "niah" if modality == "text" else ("niah_count" if task == "counting" else "niah_choice")
    return _file(f"mm_niah_{task}_{modality}", f"{task}-{modality}_test_K{{k}}_dep{depth}.jsonl", kind, 50)


#: our dataset name -> its release file (scripts/generate_configs.py, master_mapping)
RELEASE_FILES: dict[str, ReleaseFile] = {
    "infoseek": _file("infoseek", "infoseek_K{k}_dep3.jsonl", "vrag"),
    "viquae": _file("viquae", "viquae_K{k}_dep6.jsonl", "vrag"),
    "vh_single": _file("vh_single", "vh_single_test_1000_K{k}_dep6.jsonl", "vh"),
    "vh_multi": _file("vh_multi", "vh_multi_test_1000_K{k}_dep3.jsonl", "vh"),
    "mm_niah_retrieval_text": _niah("retrieval", "text", 6),
    "mm_niah_counting_text": _niah("counting", "text", 3),
    "mm_niah_reasoning_text": _niah("reasoning", "text", 3),
    "mm_niah_retrieval_image": _niah("retrieval", "image", 6),
    "mm_niah_counting_image": _niah("counting", "image", 3),
    "mm_niah_reasoning_image": _niah("reasoning", "image", 6),
    **{name: _file(name, f"{name}_K{{k}}.json", "icl") for name in names.in_category("ICL")},
    "gov_report": _file("gov_report", "gov_K{k}.jsonl", "gov"),
    "multi_lexsum": _file("multi_lexsum", "lexsum_K{k}.jsonl", "lexsum"),
    **{name: _file(name, f"{name}_K{{k}}.jsonl", "docqa") for name in names.in_category("DocVQA")},
}
#: the paper's ablation sets (data.py load_text_rag / load_vrag_occlusion / load_text_doc_qa); their
#: file names are in no official script, so a build names the file (option release_file)
ABLATIONS: dict[str, tuple[str, ReleaseFile]] = {
    "triviaqa": ("infoseek", ReleaseFile("vrag", "", "text_rag", 100)),
    "occ_vrag": ("infoseek", ReleaseFile("vrag", "", "vrag_occ", 100)),
    "text_doc": ("mmlongdoc", ReleaseFile("documentQA", "", "text_doc", 100)),
}
RELEASE_FILES.update({name: spec for name, (_anchor, spec) in ABLATIONS.items()})


class ReleaseRecordError(ValueError):
    """A release record that lacks what its loader needs (reported and skipped, never fatal)."""


@dataclass
class ReleaseRow:
    """One official example in our terms."""

    official_id: Any
    prompt: str
    images: list[str]  # relative to mmlb_image/, in prompt order
    question: str  # the release's question field, as released
    answers: list[str]
    meta: dict = field(default_factory=dict)


def data_root(root: Path) -> Path:
    """``ROOT/mmlb_data`` when present, else ROOT itself (a folder holding the category folders)."""
    return root / "mmlb_data" if (root / "mmlb_data").is_dir() else root


def image_root(root: Path) -> Path:
    return root / "mmlb_image"


# -- one record -> prompt, images, answers (data.py, one function per loader) ----------------------
def _need(record: dict, key: str) -> Any:
    if key not in record:
        raise ReleaseRecordError(f"no '{key}' field")
    return record[key]


def answers_of(value: Any) -> list[str]:
    """Our answer strings: a string as is, strings of a list each, a list of numbers as JSON."""
    if isinstance(value, list):
        if value and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
            return [json.dumps(value)]
        return [str(v) for v in value]
    return [str(value)]


def list_answer(answer: Any) -> str:
    """A document-QA List answer (released as a JSON string, or a list) as our rows keep it: the
    release's own JSON text, unchanged (what utils.py @22b9f27 L326/L468 reads and shows the judge);
    a list is written as :func:`docqa.list_answer_text` writes it."""
    items = json.loads(answer) if isinstance(answer, str) else answer
    if not isinstance(items, list):
        raise ReleaseRecordError(f"List answer is not a list: {answer!r}")
    return answer if isinstance(answer, str) else list_answer_text(items)


def split_prompt(kind: str, prompt: str) -> tuple[str, str]:
    """``(context, question)`` such that ``TEMPLATES[kind].format(context=..., question=...)`` is
    ``prompt``; ValueError if the prompt is not in that template."""
    rendered = prompts.render(kind, "\x00", "\x01")
    head, rest = rendered.split("\x00")
    middle, tail = rest.split("\x01") if "\x01" in rest else (None, rest)
    if not prompt.startswith(head) or not prompt.endswith(tail) or len(prompt) < len(head) + len(tail):
        raise ValueError(f"prompt is not in the official {kind} template")
    body = prompt[len(head):len(prompt) - len(tail)]
    if middle is None:  # the summary templates have no question
        return body, ""
    if middle not in body:
        raise ValueError(f"prompt lacks the official {kind} question line")
    context, question = body.rsplit(middle, 1)
    return context, question


def page_of(path: str, split_index: int = -1) -> tuple[str, str]:
    """``(doc id, page id)`` of a released page file, as ``data.py`` reads them: the doc id is the
    parent folder, the page id the text after ``page`` (the summary loaders split at the first
    ``page``, ``split_index=1``; the document-QA loaders at the last, ``-1``)."""
    return path.split("/")[-2], path.split("page")[split_index].split(".")[0]


def page_label(path: str, split_index: int) -> str:
    """The page item of ``data.py`` for a released page file."""
    return prompts.page_item(*page_of(path, split_index))


def _passages(ctxs: list) -> str:
    return "\n\n".join(prompts.passage(c["title"], c["text"]) for c in ctxs)


def _vrag(record: dict) -> tuple[str, list[str], dict]:
    context = _passages(_need(record, "ctxs"))
    prompt = prompts.render("vrag", context, IMAGE_PLACEHOLDER + _need(record, "question"))
    return prompt, [_need(record, "image")], {}


def _vh(record: dict) -> tuple[str, list[str], dict]:
    images = list(_need(record, "ctxs"))
    return prompts.render("vh", prompts.vh_context(len(images)), _need(record, "question")), images, {}


def _niah_context(record: dict) -> str:
    return "\n\n".join(p["text"] for p in _need(record, "ctxs"))


def _niah_text(record: dict) -> tuple[str, list[str], dict]:
    prompt = prompts.render("niah", _niah_context(record), _need(record, "question"))
    return prompt, list(_need(record, "image_list")), {}


def _niah_count(record: dict) -> tuple[str, list[str], dict]:
    images = list(_need(record, "image_list")) + list(_need(record, "needle_image_list"))
    return prompts.render("niah", _niah_context(record), _need(record, "question")), images, {}


def _niah_choice(record: dict) -> tuple[str, list[str], dict]:
    choices = list(_need(record, "choices_image"))
    question = _need(record, "question") + prompts.image_choices(len(choices))
    images = list(_need(record, "image_list")) + choices
    return prompts.render("niah_choice", _niah_context(record), question), images, {}


def _summary(kind: str):
    def assemble_summary(record: dict) -> tuple[str, list[str], dict]:
        images = list(_need(record, "image_list"))
        context = "\n\n".join(page_label(p, 1) for p in images)
        return prompts.render(kind, context), images, {}
    return assemble_summary


def _docqa(record: dict, protocol=None) -> tuple[str, list[str], dict]:
    """load_doc_qa: one page item per page (with its page id under protocol v1.0 only)."""
    images = list(_need(record, "page_list"))
    context = "\n\n".join(prompts.doc_page_item(*page_of(p), protocol) for p in images)
    question = prompts.doc_question(_need(record, "doc_name"), _need(record, "question"))
    return prompts.render("docqa", context, question), images, {"answer_format": record.get("answer_format"),
                                                        "doc_name": record["doc_name"]}


def _text_rag(record: dict) -> tuple[str, list[str], dict]:
    """load_text_rag: the passages, the question as text (``original_question``), no image."""
    return prompts.render("text_rag", _passages(_need(record, "ctxs")), _need(record, "original_question")), [], {}


def _vrag_occ(record: dict) -> tuple[str, list[str], dict]:
    """load_vrag_occlusion: the passages without the positive documents (by ``doc_id``)."""
    positives = {c["doc_id"] for c in _need(record, "positive_ctxs")}
    context = _passages([c for c in _need(record, "ctxs") if c["doc_id"] not in positives])
    return (prompts.render("vrag", context, IMAGE_PLACEHOLDER + _need(record, "question")), [_need(record, "image")],
            {"removed_positives": sorted(positives)})


def _text_doc(record: dict) -> tuple[str, list[str], dict]:
    """load_text_doc_qa: each page's text under its page label, no image."""
    pages, texts = list(_need(record, "page_list")), list(_need(record, "page_text_list"))
    if len(pages) != len(texts):
        raise ReleaseRecordError(f"{len(pages)} pages but {len(texts)} page texts")
    context = "\n\n".join(prompts.text_page_item(*page_of(p), t) for p, t in zip(pages, texts))
    question = prompts.doc_question(_need(record, "doc_name"), _need(record, "question"))
    return prompts.render("text_doc", context, question), [], {"answer_format": record.get("answer_format"),
                                                       "doc_name": record["doc_name"]}


ASSEMBLE = {"text_rag": _text_rag, "vrag_occ": _vrag_occ, "text_doc": _text_doc, "vrag": _vrag, "vh": _vh, "niah": _niah_text, "niah_count": _niah_count,
            "niah_choice": _niah_choice, "gov": _summary("gov"), "lexsum": _summary("lexsum"), "docqa": _docqa}


def gold(kind: str, record: dict) -> tuple[list[str], dict]:
    """Answers as our metrics read them, and what the release's form needs to be kept."""
    answer = _need(record, "summary") if kind in ("gov", "lexsum") else _need(record, "answer")
    if kind == "gov":
        answer = "\n\n".join(a["section_title"] + ":\n" + "\n".join(a["paragraphs"]) for a in answer)
    if kind == "niah_choice" and isinstance(answer, int):
        return [chr(ord("A") + answer)], {"answer_index": answer}
    if kind in ("docqa", "text_doc") and record.get("answer_format") == "List":
        # the release's JSON text itself: utils.py types its items by JSON (2.0 is a Float, "2.0" an Integer)
        return [list_answer(answer)], {}
    return answers_of(answer), {}


#: loaders whose prompt depends on the protocol (mmlbdata.official.protocol)
BY_PROTOCOL = {"docqa"}


def assemble(kind: str, record: dict, protocol=None) -> ReleaseRow:
    """One JSON-lines record as ``data.py``'s loader for ``kind`` makes it (under ``protocol``)."""
    try:
        prompt, images, meta = ASSEMBLE[kind](record, **({"protocol": protocol} if kind in BY_PROTOCOL else {}))
        answers, answer_meta = gold(kind, record)
    except (KeyError, TypeError, AttributeError, IndexError) as err:
        raise ReleaseRecordError(f"malformed record ({type(err).__name__}: {err})") from err
    return ReleaseRow(official_id=record.get("id"), prompt=prompt, images=images,
                      question=str(record.get("question", "")), answers=answers, meta={**meta, **answer_meta})


# -- ICL: one JSON object {domain: {exemplar_list, test_example}} ----------------------------------
def icl_row(domain: str, example: dict, rounds: list[list[dict]], choice: int) -> ReleaseRow:
    """A test example with the drawn exemplar rounds (each round already in its drawn order)."""
    exemplars = [item for one_round in rounds for item in one_round]
    context = "\n\n".join(prompts.icl_item(item["id"]) for item in exemplars)
    return ReleaseRow(
        official_id=example.get("id"), prompt=prompts.render("icl", context, IMAGE_PLACEHOLDER),
        images=[item["image"] for item in exemplars] + [example["image"]], question=IMAGE_PLACEHOLDER,
        answers=answers_of(example["answer"]),
        meta={"domain": domain, "exemplar_choice": choice, "exemplar_ids": [item["id"] for item in exemplars]})


def icl_rows(data: dict, *, paper: Optional[int], seed: int = OFFICIAL_SEED) -> Iterator[ReleaseRow]:
    """The ICL file's test examples with their exemplars drawn as the official load does when its
    map runs in-process (one seeded random sequence, no forked worker reseeding it)."""
    tests = [(domain, example) for domain, entry in data.items() for example in entry["test_example"]]
    rng = random.Random(seed)
    if paper is not None:
        rng.shuffle(tests)
        tests = tests[:min(paper, len(tests))]
    exemplars = {domain: copy.deepcopy(entry["exemplar_list"]) for domain, entry in data.items()}
    for index, (domain, example) in enumerate(tests):
        candidates = exemplars[domain]
        choice = rng.randrange(len(candidates)) if candidates else 0  # random.choice's own draw
        chosen = candidates[choice]
        for one_round in chosen:  # shuffled in place: a later draw of this candidate starts from here
            rng.shuffle(one_round)
        row = icl_row(domain, example, chosen, choice)
        row.meta.update(candidates=data[domain]["exemplar_list"], test_index=index)
        yield row


# -- files -> rows, with the paper's selection ----------------------------------------------------
def paper_ids(ids: list, count: int, seed: int = OFFICIAL_SEED) -> set:
    """``random.sample(sorted(set(ids)), min(count, n))`` after ``random.seed(seed)``."""
    try:
        keys = sorted(set(ids))
    except TypeError as err:  # the official sorted() would fail the same way
        raise ValueError(f"ids of mixed types cannot be sorted as the official sampling does: {err}") from err
    return set(random.Random(seed).sample(keys, min(count, len(keys))))


def paper_order(num_rows: int, count: int, seed: int = OFFICIAL_SEED) -> list[int]:
    """Row indices of ``Dataset.shuffle(seed=seed).select(range(min(n, count)))``: the same call."""
    from datasets import Dataset

    index = Dataset.from_dict({"row": list(range(num_rows))})
    return index.shuffle(seed=seed).select(range(min(num_rows, count)))["row"]


def _records(path: Path, kind: str, report: BuildReport) -> Iterator[tuple[int, dict, Span]]:
    """(line number, record, span) of the lines that fit ``kind``'s schema (mmlb_release_lines),
    checked here before any loader reads a field; a line that does not is reported (its field and
    why) and left out, of the rows and of the paper's draw alike, as if it were not in the file."""
    schema = LINE_SCHEMAS[kind]
    for line_no, record, span in read_jsonl_reported_spans(path, report):
        found = problem(record, schema)
        if found is None:
            yield line_no, record, span
        else:
            report.skip(path, f"line {line_no}", found.message, field=found.field or None)


#: the report line of a record dropped by the v1.1 filter, whichever source path it is read from
QUOTED_IMAGE_DROPPED = ('image path contains a double quote: dropped by load_vrag (MMLongBench v1.1, '
                        'data.py @22b9f27 L47-55, since bf8fbae; --protocol v1.0 keeps it)')


def has_quoted_image(record: dict) -> bool:
    """data.py ``load_vrag`` (v1.1, bf8fbae) drops a record when ``'"'`` is in any of its image
    paths (``sample["image"]`` is one path: its characters are tested one by one, the same)."""
    images = record.get("image")
    images = [images] if isinstance(images, str) else images if isinstance(images, list) else []
    return any(isinstance(p, str) and '"' in p for p in images)


def _loaded(path: Path, kind: str, report: BuildReport, protocol) -> Iterator[tuple[int, dict, Span]]:
    """The records the official loader keeps before drawing its subset: under protocol v1.1
    ``load_vrag`` first filters out images with a double quote (ViQuAE), reported as skipped."""
    for line_no, record, span in _records(path, kind, report):
        if kind == "vrag" and protocols.get(protocol).drop_quoted_images and has_quoted_image(record):
            report.skip(path, f"line {line_no}", QUOTED_IMAGE_DROPPED)
            continue
        yield line_no, record, span


def read_release_file(path: Path, kind: str, report: BuildReport, *, paper: Optional[int] = None,
                      seed: int = OFFICIAL_SEED, protocol=None) -> Iterator[tuple[int, ReleaseRow]]:
    """(line number, row) of one JSON-lines release file; malformed records reported and skipped.

    ``paper``: the official ``max_test_samples`` draw instead of every row; ``protocol``: the
    MMLongBench protocol whose loader is followed (``mmlbdata.official.protocol``, default v1.1).
    """
    selection = ReleaseFile("", "", kind, 0).selection
    lines: Optional[list[int]] = None
    if paper is not None and selection == "ids":
        # one pass over the file for the ids (and where each line lies), then only the drawn lines again
        found = [(n, r["id"], span) for n, r, span in _loaded(path, kind, report, protocol) if "id" in r]
        try:
            wanted = paper_ids([ident for _, ident, _ in found], paper, seed)
        except ValueError as err:
            raise ValueError(f"{path}: {err}") from err
        rows = read_spans(path, [(n, span) for n, ident, span in found if ident in wanted])
        if kind == "vrag_occ":  # load_vrag_occlusion keeps the first row of each drawn id
            rows = _first_per_id(rows)
    elif paper is not None:
        spans = [(n, span) for n, _, span in _records(path, kind, report)]
        order = paper_order(len(spans), paper, seed)
        lines = [spans[i][0] for i in order]
        rows = read_spans(path, sorted(spans[i] for i in order))  # file order; emitted in draw order below
    else:
        rows = ((n, r) for n, r, _ in _loaded(path, kind, report, protocol))
    built: dict[int, ReleaseRow] = {}
    for line_no, record in rows:
        try:
            row = assemble(kind, record, protocol)
        except ReleaseRecordError as err:
            report.skip(path, f"line {line_no}", str(err))
            continue
        if lines is None:
            yield line_no, row
        else:
            built[line_no] = row  # at most `paper` rows, emitted in the shuffled order below
    for line_no in lines or []:
        if line_no in built:
            yield line_no, built[line_no]


def _first_per_id(rows: Iterator[tuple[int, dict]]) -> Iterator[tuple[int, dict]]:
    seen = set()
    for line_no, record in rows:
        if record.get("id") not in seen:
            seen.add(record.get("id"))
            yield line_no, record


def read_icl_file(path: Path, report: BuildReport, *, paper: Optional[int] = None,
                  seed: int = OFFICIAL_SEED) -> Iterator[tuple[int, ReleaseRow]]:
    """(test index, row) of an ICL release file; a malformed file or example is reported."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
        if not isinstance(data, dict):
            raise ValueError("not a JSON object {domain: {exemplar_list, test_example}}")
        for row in icl_rows(_icl_fitting(path, data, report), paper=paper, seed=seed):
            yield row.meta["test_index"], row
    except (ValueError, KeyError, TypeError, IndexError) as err:
        report.skip(path, None, f"unreadable ICL release file: {type(err).__name__}: {err}")


_SURROGATE = "holds a lone surrogate escape (\\ud800-\\udfff): valid JSON, but no text"


def _icl_fitting(path: Path, data: dict, report: BuildReport) -> dict:
    """The ICL file with each domain and test example checked against its schema
    (mmlb_release_lines) before the draws: what does not fit is reported and left out."""
    fitting = {}
    for domain, entry in data.items():
        found = problem(entry, ICL_DOMAIN) or (Problem("exemplar_list", _SURROGATE)
                                               if unencodable(entry["exemplar_list"]) else None)
        if found is not None:
            report.skip(path, f"domain {domain}", found.message, field=found.field or None)
            continue
        tests = []
        for index, example in enumerate(entry["test_example"]):
            found = problem(example, ICL_TEST) or (Problem("", _SURROGATE) if unencodable(example) else None)
            if found is None:
                tests.append(example)
            else:
                report.skip(path, f"domain {domain} test example {index}", found.message, field=found.field or None)
        fitting[domain] = {**entry, "test_example": tests}
    return fitting


# -- our ids and the card's comparison of lengths -----------------------------------------------------
def base_id(row: ReleaseRow, number: int) -> str:
    """The official id as a string (``<domain>_<index>`` for ICL examples without one)."""
    return str(row.official_id) if row.official_id is not None else f"{row.meta.get('domain', 'row')}_{number}"


def unique_id(row: ReleaseRow, number: int, seen: set[str]) -> str:
    """:func:`base_id`; a repeated id gets ``#<record>`` so ids stay unique within a config (the
    builder reports every such rename: :class:`RenamedIds`)."""
    base = base_id(row, number)
    example_id = base if base not in seen else f"{base}#{number}"
    seen.add(example_id)
    return example_id


@dataclass
class RenamedIds:
    """The rows of one release file whose official id an earlier row already has: both rows are
    built (official releases repeat ids), the later one as ``<id>#<record>``, which predictions
    keyed by the official id never match; so each rename is reported with file and record."""

    file: str
    first: dict[str, str] = field(default_factory=dict)  # official id -> the record it first appeared at
    renamed: list[dict[str, str]] = field(default_factory=list)

    def add(self, official: str, example_id: str, record: str) -> None:
        if example_id == official:
            self.first.setdefault(official, record)
            return
        self.renamed.append({"official_id": official, "id": example_id, "file": self.file, "record": record,
                             "first_record": self.first.get(official, "")})

    def note(self, config: str) -> str:
        """The build report's line ("" when no id repeats)."""
        if not self.renamed:
            return ""
        shown = "; ".join(f"{r['record']} repeats id {r['official_id']!r} of {r['first_record']} -> "
                          f"{r['id']!r}" for r in self.renamed[:5])
        more = f" (and {len(self.renamed) - 5} more)" if len(self.renamed) > 5 else ""
        return (f"{config}: {len(self.renamed)} row(s) of {self.file} repeat an official id and are kept "
                f"under a new id (predictions keyed by the official id match the first row only; manifest "
                f"renamed_ids lists them): {shown}{more}")


@dataclass
class LengthTally:
    """How the official rows measure with our counter against their nominal length."""

    length: int
    rows: int = 0
    over: int = 0
    total: int = 0
    smallest: Optional[int] = None
    largest: Optional[int] = None

    def add(self, num_tokens: int) -> None:
        self.rows += 1
        self.over += num_tokens > self.length
        self.total += num_tokens
        self.smallest = num_tokens if self.smallest is None else min(self.smallest, num_tokens)
        self.largest = num_tokens if self.largest is None else max(self.largest, num_tokens)

    def summary(self) -> dict:
        mean = self.total / self.rows if self.rows else None
        return {"length": self.length, "rows": self.rows, "over_budget": self.over, "min_tokens": self.smallest,
                "mean_tokens": None if mean is None else round(mean, 1), "max_tokens": self.largest,
                "mean_ratio": None if mean is None else round(mean / self.length, 4)}

    def describe(self) -> str:
        if not self.rows:
            return "no row"
        s = self.summary()
        return (f"our counter gives {s['min_tokens']}..{s['max_tokens']} tokens (mean {s['mean_tokens']}, "
                f"{s['mean_ratio']:.3f} of {self.length}); {self.over} of {self.rows} rows over the length, "
                f"kept and flagged meta.over_budget")
