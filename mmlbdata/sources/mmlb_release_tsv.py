"""MMLongBench's extended release: the VLMEvalKit TSVs (32K, 128K, 256K, 512K), read as VLMEvalKit reads them.

The authors publish ``vlmevalkit/MMLongBench_{32K,128K,256K,512K}.tsv`` on the Hub
(``ZhaoweiWang/MMLongBench``) with one image archive per length
(``vlmevalkit/MMLongBench_<L>_images.tar.gz``). VLMEvalKit's ``vlmeval/dataset/mmlongbench.py``
(PR #1592, commit 981e805d) reads them, and its ``scripts/build_mmlongbench_tsv.py`` shows how each
column is made from the JSON-lines release:

* ``question`` is the whole user prompt, already assembled with ``data.py``'s templates, images
  marked ``<image token>``; ``image_path`` a JSON list of image names relative to ``mmlb_image/``
  (the archive extracts to ``mmlb_image/`` or ``mmlb_image/<L>/``); no base64 ``image`` column is
  read (the class's ``dump_image`` reads ``image_path`` only);
* ``task`` / ``source_dataset`` name the dataset (``vrag``/``infoseek``, ``NIAH``/``vh_single``,
  ``summ``/``gov`` ...), ``question_id`` the JSON-lines ``id``, ``mmlb_subset`` the subset
  (``vrag_256_sr50``, ``NIAH_256_sr25`` ...);
* ``extra_info`` is the JSON-lines record less its prompt and images (``ctxs`` too): it keeps the
  typed ``answer`` (VLMEvalKit scores that, the ``answer`` column being its ``str()``), ``summary``,
  ``answer_format``, ``doc_name``, ``domain``.

This reader yields the rows :mod:`mmlbdata.sources.mmlb_release` yields for the JSON-lines files
(:class:`~mmlbdata.sources.mmlb_release.ReleaseRow`): the prompt as VLMEvalKit's ``build_prompt``
interleaves it (:func:`interleave`), the answers through the JSON-lines reader's :func:`gold`, the
reference ids kept. The ``sr50`` / ``sr25`` subsets are the TSVs' own rows: the build script takes
them as given ("the released VLMEvalKit TSVs are used as the public split ID/order reference") and
no script or seed that draws them is published, so they are read, never re-drawn.

Reading streams one TSV row at a time (Python's csv module, pandas' quoting), so memory stays flat
whatever the file size.
"""
from __future__ import annotations

import ast
import csv
import json
import re
from pathlib import Path
from typing import Any, Iterator, Optional

from mmlbdata.core.report import BuildReport
from mmlbdata.core.tokens import IMAGE_PLACEHOLDER
from mmlbdata.official import names
from mmlbdata.official import protocol as protocols
from mmlbdata.sources import mmlb_release as release
from mmlbdata.sources.lineschema import Schema, problem
from mmlbdata.sources.mmlb_release_lines import ICL_TEST, LINE_SCHEMAS
from mmlbdata.sources.records import _first_undecodable, lone_surrogate

SOURCE_KEY = "mmlb_release_tsv"
LAYOUT = ("MMLongBench's VLMEvalKit release: MMLongBench_{32K,128K,256K,512K}.tsv (at the root or under "
          "vlmevalkit/) + mmlb_image/ (the per-length image archives extracted, mmlb_image/<L>/ or mmlb_image/)")
#: our length -> the TSV's length label (DATASET_LENGTH of build_mmlongbench_tsv.py)
TSV_LENGTHS: dict[int, str] = {32768: "32K", 131072: "128K", 262144: "256K", 524288: "512K"}
#: the TSV columns build_mmlongbench_tsv.py's make_tsv_row writes, in order
COLUMNS = ("index", "question_id", "question", "answer", "image_path", "mmlb_subset", "task",
           "source_dataset", "question_type", "tags", "extra_info")
#: mmlongbench.py DATASET_SETS: the subset of each task per TSV
SUBSETS: dict[str, dict[str, str]] = {
    "32K": {t: f"{t}_32" for t in names.FOLDERS},
    "128K": {t: f"{t}_128" for t in names.FOLDERS},
    **{label: {"vrag": f"vrag_{n}_sr50", "NIAH": f"NIAH_{n}_sr25", "ICL": f"ICL_{n}_sr50",
               "summ": f"summ_{n}_sr50", "documentQA": f"documentQA_{n}_sr50"}
       for label, n in (("256K", 256), ("512K", 512))},
}
#: (task, source_dataset) of the TSV -> our dataset name (its key in mmlb_release.RELEASE_FILES)
DATASET_OF: dict[tuple[str, str], str] = {(d.folder, d.tsv_name): d.name for d in names.DATASETS}
TSV_DATASETS = frozenset(DATASET_OF.values())  # the ablation sets (triviaqa, occ_vrag, text_doc) are not in it
TSV_IMAGE_TOKEN = "<image token>"
#: the protocol (mmlbdata.official.protocol) of the TSVs' prompts: build_mmlongbench_tsv.py assembles documentQA as
#: data.py 22b9f27 does (``Document {doc_id:.15}: <image token>``, no page ids); the other tasks' prompts
#: are the same under both protocols
TSV_PROTOCOL = "v1.1"
_IMAGE_MARK = re.compile(r"(<image token>|<image>)")  # build_prompt's token_pattern


def tsv_name(length: int) -> str:
    """``MMLongBench_256K.tsv`` for 262144; ValueError for a length the release does not have."""
    if length not in TSV_LENGTHS:
        raise ValueError(f"the VLMEvalKit release has no {length}-token TSV (it has "
                         f"{', '.join(TSV_LENGTHS.values())})")
    return f"MMLongBench_{TSV_LENGTHS[length]}.tsv"


def tsv_path(root: Path, length: int) -> Path:
    """The TSV for ``length`` under ``root`` (at the root, or under ``vlmevalkit/`` as on the Hub)."""
    name = tsv_name(length)
    nested = root / "vlmevalkit" / name
    return nested if nested.is_file() else root / name


def image_root(root: Path, length: int, name: str) -> Path:
    """The folder image ``name`` lies under: ``mmlb_image/<L>`` when it holds the image, else
    ``mmlb_image``; tried per image, as mmlongbench.py ``_resolve_image_path`` tries the length folder
    first and then the base (a TSV whose names already start with ``<L>/`` resolves from the base)."""
    base = root / "mmlb_image"
    if length in TSV_LENGTHS:
        per_length = base / TSV_LENGTHS[length]
        if (per_length / name).is_file():
            return per_length
    return base


def interleave(text: str, num_images: int) -> tuple[str, Optional[str]]:
    """The prompt with our placeholder as VLMEvalKit's ``build_prompt`` places the images, and a note
    when it had to repair the markers: every ``<image token>`` / ``<image>`` takes the next image;
    markers past the last image are dropped; with no marker all images come first; images left
    over follow the text."""
    parts = _IMAGE_MARK.split(text)
    markers = sum(1 for part in parts if part in (TSV_IMAGE_TOKEN, "<image>"))
    out, used = [], 0
    for part in parts:
        if part in (TSV_IMAGE_TOKEN, "<image>"):
            if used < num_images:
                out.append(IMAGE_PLACEHOLDER)
                used += 1
        else:
            out.append(part)
    prompt = "".join(out)
    if markers == num_images:
        return prompt, None
    if used == 0 and num_images:
        return IMAGE_PLACEHOLDER * num_images + prompt, f"no image marker: the {num_images} images come first"
    if used < num_images:
        return prompt + IMAGE_PLACEHOLDER * (num_images - used), \
            f"{markers} markers for {num_images} images: the rest follow the text"
    return prompt, f"{markers} markers for {num_images} images: the extra markers are dropped"


def _image_names(value: str) -> list[str]:
    """``image_path``: a JSON list (build script) or a Python list literal (``str(list)``, which
    VLMEvalKit's toliststr reads too, with ``eval``; here with ``ast.literal_eval``), else one name."""
    value = (value or "").strip()
    if value.startswith("["):
        try:
            names = json.loads(value)
        except json.JSONDecodeError as not_json:
            try:
                names = ast.literal_eval(value)
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                raise not_json from None
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise release.ReleaseRecordError("image_path is not a list of names")
        return names
    return [value] if value else []


def _extra(value: str) -> dict:
    """``extra_info`` as mmlongbench.py ``_parse_extra_info`` reads it: a JSON object, else empty."""
    try:
        parsed = json.loads(value) if value and value.strip() else {}
    except (json.JSONDecodeError, RecursionError):  # _parse_extra_info: any failure reads as {}
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _typed_answer_problem(kind: str, extra: dict):
    """Where ``extra_info``'s typed answer breaks the JSON-lines release's schema for ``kind``
    (mmlb_release_lines: the answer field and the rules on it), or None. The ``answer`` column is a
    ``str()`` of it, always a string, and is taken as released."""
    name = "summary" if kind in ("gov", "lexsum") else "answer"
    if name not in extra or (kind == "gov" and isinstance(extra[name], str)):  # a joined summary
        return None
    schema = ICL_TEST if kind == "icl" else LINE_SCHEMAS[kind]
    answer_only = Schema({name: schema.fields[name]}, tuple(r for r in schema.rules if r.field == name))
    return problem(extra, answer_only)


def _answers(kind: str, record: dict[str, str], extra: dict) -> tuple[list[str], dict]:
    """The JSON-lines reader's ``gold`` on the typed answer that ``_score_one`` scores: ``extra_info``'s,
    else the ``answer`` column (for GovReport that column already joins the summary's sections)."""
    typed = _typed_answer_problem(kind, extra)
    if typed is not None:
        raise release.ReleaseRecordError(f"extra_info {typed.message}")
    gold_record = {**extra, "answer": extra.get("answer", record.get("answer", ""))}
    if kind in ("gov", "lexsum") and "summary" not in gold_record:
        gold_record["summary"] = record.get("answer", "")
    if kind == "gov" and isinstance(gold_record["summary"], str):
        return [gold_record["summary"]], {}
    return release.gold(kind, gold_record)


def tsv_row(dataset: str, record: dict[str, str]) -> release.ReleaseRow:
    """One TSV row of ``dataset`` as a release row; ReleaseRecordError when a column is unusable."""
    kind = release.RELEASE_FILES[dataset].kind
    images = _image_names(record.get("image_path", ""))
    prompt, repaired = interleave(record.get("question") or "", len(images))
    extra = _extra(record.get("extra_info", ""))
    if lone_surrogate(record.get("extra_info", ""), extra):
        raise release.ReleaseRecordError("extra_info holds a lone surrogate escape (\\ud800-\\udfff): no text")
    answers, answer_meta = _answers(kind, record, extra)
    meta: dict[str, Any] = {"tsv_index": record.get("index"), "mmlb_subset": record.get("mmlb_subset"),
                            **answer_meta}
    for key in ("answer_format", "doc_name", "domain"):
        if key in extra:
            meta[key] = extra[key]
    if repaired:
        meta["image_markers"] = repaired
    try:  # the JSON-lines reader's check: is the prompt in data.py's template for this dataset?
        release.split_prompt(kind, prompt)
    except ValueError as err:
        meta["template_mismatch"] = str(err)
    question = str(extra.get("question", "")).replace(TSV_IMAGE_TOKEN, IMAGE_PLACEHOLDER)
    return release.ReleaseRow(official_id=record.get("question_id"), prompt=prompt, images=images,
                              question=question, answers=answers, meta=meta)


def _tsv_records(path: Path, report: BuildReport) -> Iterator[tuple[int, dict[str, str]]]:
    """(row number from 1, columns) of a TSV written by pandas ``to_csv(sep='\\t')``."""
    csv.field_size_limit(2 ** 31 - 1)  # a 512K prompt is one field of ~20K characters and more
    # surrogateescape: a byte that is not UTF-8 costs its row only (reported), not the whole file
    with open(path, encoding="utf-8", errors="surrogateescape", newline="") as handle:
        reader = csv.reader(handle, delimiter="\t")
        header = next(reader, None)
        missing = [c for c in ("question_id", "question", "image_path", "task", "source_dataset")
                   if c not in (header or [])]
        if missing:
            raise ValueError(f"{path}: not an MMLongBench VLMEvalKit TSV (no column {', '.join(missing)})")
        for number, values in enumerate(reader, 1):
            if len(values) != len(header):
                report.skip(path, f"row {number}", f"{len(values)} fields, the header has {len(header)}")
                continue
            bad = next((column for column, value in zip(header, values)
                        if _first_undecodable(value) is not None), None)
            if bad is not None:
                report.skip(path, f"row {number}", f"not UTF-8: a byte in column {bad}")
                continue
            yield number, dict(zip(header, values))


def read_tsv(path: Path, dataset: str, report: BuildReport, protocol=None) -> Iterator[tuple[int, release.ReleaseRow]]:
    """(row number, row) of every TSV row of ``dataset``, in file order; bad rows reported and skipped.
    Under ``protocol`` v1.1 (the default) a VRAG row whose image path holds a double quote is
    dropped and reported, as ``load_vrag`` drops it from every file it loads (data.py @22b9f27 L47-55)."""
    drop_quoted = (release.RELEASE_FILES[dataset].kind == "vrag"
                   and protocols.get(protocol).drop_quoted_images)
    for number, record in _tsv_records(path, report):
        if DATASET_OF.get((record["task"], record["source_dataset"])) != dataset:
            continue
        try:
            row = tsv_row(dataset, record)
        except (release.ReleaseRecordError, ValueError, KeyError, TypeError, RecursionError) as err:
            report.skip(path, f"row {number}", f"malformed row ({type(err).__name__}: {err})")
            continue
        if drop_quoted and release.has_quoted_image({"image": row.images}):
            report.skip(path, f"row {number}", release.QUOTED_IMAGE_DROPPED)
            continue
        yield number, row


# -- the 32K / 128K TSVs against the JSON-lines release ------------------------------------------
def _digest(row: release.ReleaseRow) -> tuple[str, str, tuple[str, ...]]:
    """What must agree between the two forms of a row: the prompt, the images, the answers."""
    import hashlib

    prompt = hashlib.sha256(row.prompt.encode()).hexdigest()
    images = hashlib.sha256("\n".join(row.images).encode()).hexdigest()
    return prompt, images, tuple(row.answers)


def cross_check(tsv_file: Path, dataset: str, jsonl_rows: Iterator[release.ReleaseRow]) -> dict[str, int]:
    """Compare the TSV's rows of ``dataset`` with the JSON-lines release's rows, matched by official id
    (repeated ids in order, as build_mmlongbench_tsv.py's cursor matches them). Only digests are
    kept, so memory follows the TSV's row count, not its prompts."""
    waiting: dict[str, list] = {}
    for _number, row in read_tsv(tsv_file, dataset, BuildReport()):
        waiting.setdefault(str(row.official_id), []).append(_digest(row))
    counts = {"tsv_rows": sum(len(v) for v in waiting.values()), "matched": 0, "prompts_differ": 0,
              "images_differ": 0, "answers_differ": 0}
    for row in jsonl_rows:
        pending = waiting.get(str(row.official_id))
        if not pending:
            continue
        prompt, images, answers = pending.pop(0)
        ours = _digest(row)
        counts["matched"] += 1
        counts["prompts_differ"] += prompt != ours[0]
        counts["images_differ"] += images != ours[1]
        counts["answers_differ"] += answers != ours[2]
    counts["missing_from_jsonl"] = counts["tsv_rows"] - counts["matched"]
    return counts
