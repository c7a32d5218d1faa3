"""MMLongBench's own release layout, which its official ``data.py`` loads unchanged.

Layout (``mmlb export DIR --format mmlongbench --out REL``)::

    REL/mmlb_data/<category>/<file named as in scripts/generate_configs.py>   (--test_file_root)
    REL/mmlb_image/<xx>/<sha256>.<ext>                                          (--image_file_root)

Each row becomes the record the official loader of its task kind reads (``mmlbdata.sources.
mmlb_release`` holds the loaders' assembly): Visual Haystack ``ctxs`` = the image list; VRAG the
passages back as ``{"title", "text"}`` and ``image``; MM-NIAH the context as one ``ctxs`` text with
``image_list`` (+ ``needle_image_list`` or ``choices_image``); summaries and document QA page files
``<xx>/<sha256>/<doc_id>/page<N>.<ext>`` from which the loader prints ``Document <doc_id:.15> (page
N)`` (document QA under protocol v1.1: ``Document <doc_id:.15>``); document QA the bare question (the loader adds "Based on Document ..."), ``doc_name`` and
``answer_format`` in the release's names (``Integer``, ``Float``, ``String``, ``List`` as a JSON
string, ``None``); ICL one JSON object ``{domain: {exemplar_list, test_example}}`` with one domain per
row whose single candidate holds one exemplar per round, so the loader's random draws cannot reorder
it. Answers take the release's types (multiple-choice index, class number, count list).

Every record is checked by assembling it again as the official loader does: a row whose official
prompt would differ from ours is still written, and counted in the warning logged for its config.
Rows also keep ``prompt``, ``num_tokens``, ``length``, ``metric`` and ``meta`` (a JSON string, so
the loader's JSON reader sees one type per column). Datasets the release does not have keep the
names ``<category>/<dataset>_K<n>.jsonl``.
"""
from __future__ import annotations

import ast
import json
import logging
import re
from pathlib import Path
from typing import Optional, Sequence

from mmlbdata.core.paths import resolve_inside
from mmlbdata.core.tokens import IMAGE_PLACEHOLDER
from mmlbdata.dataset.writer import read_manifest
from mmlbdata.exports import content_name, image_extension, iter_rows, selected_configs, write_image
from mmlbdata.official import mmlongbench_prompts as prompts
from mmlbdata.official import names
from mmlbdata.sources import mmlb_release as release
from mmlbdata.sources.docqa import LONG_FORMAT, list_answer_text

logger = logging.getLogger("mmlbdata")

#: family -> the release's folder for it (datasets the release does not name)
CATEGORY = {d.family: d.folder for d in names.DATASETS}
# the page id is there under MMLongBench protocol v1.0 only (mmlbdata.official.protocol)
PAGE_ITEM = re.compile(r"Document (.{0,15}?)(?: \(page ([^)]*)\))?: " + re.escape(IMAGE_PLACEHOLDER) + r"$", re.DOTALL)
PAGE_LABEL = re.compile(r" \(page [^)]*\)(?=: " + re.escape(IMAGE_PLACEHOLDER) + ")")
CHOICES = re.compile(r"(\n[A-Z]\. " + re.escape(IMAGE_PLACEHOLDER) + r")+$")


class ExportMismatch(ValueError):
    """A row the official loader would read back differently."""


def _meta(row: dict) -> dict:
    return json.loads(row["meta"] or "{}")


def _answer(answers: list[str]):
    return answers[0] if len(answers) == 1 else answers


def _release_answer(row: dict, kind: str):
    """The gold answer in the type the official post-processing compares with."""
    answers = row["answers"] or [""]
    if row["metric"] in ("count_acc", "soft_acc"):
        return json.loads(answers[0])
    if kind == "niah_choice":
        return ord(answers[0].strip()[:1] or "A") - ord("A")
    if row["metric"] == "cls_acc":
        return int(answers[0])
    return _answer(answers)


# -- records per task kind -------------------------------------------------------------------------
def _vh_record(row: dict, images: list[str], context: str, question: str) -> dict:
    return {"question": question, "answer": _answer(row["answers"]), "ctxs": images}


def _vrag_record(row: dict, images: list[str], context: str, question: str) -> dict:
    passages = []
    for item in context.split("\n\n" + prompts.PASSAGE.split("{")[0]):
        item = item[len(prompts.PASSAGE.split("{")[0]):] if not passages else item
        title, _, text = item.partition("): ")
        passages.append({"title": title, "text": text})
    return {"question": question[len(IMAGE_PLACEHOLDER):], "answer": list(row["answers"]),
            "image": images[0] if images else "", "ctxs": passages}


def _niah_record(kind: str):
    def record(row: dict, images: list[str], context: str, question: str) -> dict:
        in_context = context.count(IMAGE_PLACEHOLDER)
        out = {"question": question, "answer": _release_answer(row, kind), "ctxs": [{"text": context}],
               "image_list": images[:in_context]}
        if kind == "niah_count":
            out["needle_image_list"] = images[in_context:]
        if kind == "niah_choice":
            match = CHOICES.search(question)
            choices = match.group(0).count(IMAGE_PLACEHOLDER) if match else 0
            out.update(question=question[:match.start()] if match else question, choices_image=images[in_context:],
                       image_list=images[:in_context])
            if len(images) - in_context != choices:
                raise ExportMismatch(f"{choices} choices but {len(images) - in_context} images after the context")
        return out
    return record


def _summary_record(kind: str):
    def record(row: dict, images: list[str], context: str, question: str) -> dict:
        return {"image_list": images, "summary": _gov_sections(row["answers"][0]) if kind == "gov"
                else row["answers"][0]}
    return record


def _gov_sections(answer: str) -> list[dict]:
    """GovReport's ``summary`` list whose official join (title + ":\\n" + lines) gives ``answer``."""
    sections = []
    for block in answer.split("\n\n"):
        title, sep, body = block.partition(":\n")
        if not sep:
            raise ExportMismatch("the summary has a section without a 'title:' line")
        sections.append({"section_title": title, "paragraphs": body.split("\n")})
    return sections


def release_list_text(answer: str) -> str:
    """A List gold as the release writes it: our rows' JSON text as is; a Python literal (rows
    built before they kept JSON) or a bare item as the JSON a source reader writes now."""
    try:
        if isinstance(json.loads(answer), list):
            return answer
    except ValueError:
        pass
    return list_answer_text(ast.literal_eval(answer) if answer.startswith("[") else [answer])


def _docqa_record(row: dict, images: list[str], context: str, question: str) -> dict:
    meta = _meta(row)
    doc_name = str(meta.get("doc_id") or meta.get("doc_name") or "")
    prefix = prompts.DOC_QUESTION.format(doc_id=doc_name)
    bare = question[len(prefix):] if question.startswith(prefix) else question
    answer_format = LONG_FORMAT.get(str(meta.get("answer_format")), "String")
    answer = row["answers"][0] if row["answers"] else ""
    if answer_format == "List":
        answer = release_list_text(meta.get("answer_json", answer))
    return {"question": bare, "answer": answer, "answer_format": answer_format, "doc_name": doc_name,
            "page_list": images}


RECORDS = {"vh": _vh_record, "vrag": _vrag_record, "niah": _niah_record("niah"),
           "niah_count": _niah_record("niah_count"), "niah_choice": _niah_record("niah_choice"),
           "gov": _summary_record("gov"), "lexsum": _summary_record("lexsum"), "docqa": _docqa_record}


# -- images ----------------------------------------------------------------------------------------
def _page_names(row: dict, context: str) -> Optional[list[tuple[str, str]]]:
    """``(doc_id, page)`` per image, from the prompt's page items, else from ``meta.pages``."""
    items = [PAGE_ITEM.search(part) for part in context.split("\n\n")] if context else []
    meta = _meta(row)
    docs = [str(d) for d, _ in meta.get("pages") or []]
    if items and all(items) and len(items) == len(row["images"]):
        if len(docs) != len(items):
            docs = [m.group(1) for m in items]
        indexes = [str(p) for _, p in meta.get("pages") or []]
        indexes = indexes if len(indexes) == len(items) else [str(i) for i in range(len(items))]
        return [(doc if doc[:15] == m.group(1) else m.group(1), m.group(2) if m.group(2) is not None else index)
                for doc, m, index in zip(docs, items, indexes)]
    pages = meta.get("pages")
    if isinstance(pages, list) and len(pages) == len(row["images"]):
        return [(str(doc), str(page)) for doc, page in pages]
    return None


def _store_images(image_root: Path, row: dict, pages: Optional[list[tuple[str, str]]]) -> list[str]:
    if pages is None:
        return [write_image(image_root, img["bytes"], img.get("path") or "") for img in row["images"]]
    paths = []
    for img, (doc, page) in zip(row["images"], pages):
        # content-addressed folder, then <doc_id>/page<N>: the loader reads both from the path
        digest = content_name(img["bytes"]).split("/")[1].split(".")[0]
        relative = f"{digest[:2]}/{digest}/{doc.replace('/', '_')}/page{page}.{image_extension(img['bytes'])}"
        paths.append(write_image(image_root, img["bytes"], relative=relative))
    return paths


# -- one row -> one record, checked ----------------------------------------------------------------
def official_record(row: dict, kind: str, image_root: Path, protocol=None) -> tuple[dict, Optional[str]]:
    """The release record of ``row`` and, when the official loader of ``protocol`` (the one the
    row was built under) would not rebuild the row's prompt and images from it exactly, what differs."""
    try:
        context, question = release.split_prompt(kind, row["prompt"])
    except ValueError as err:
        context, question, problem = "", row["question"], str(err)
    else:
        problem = None
    doc_kind = kind in ("gov", "lexsum", "docqa")
    images = _store_images(image_root, row, _page_names(row, context) if doc_kind else None)
    try:
        record = {"id": row["id"], **RECORDS[kind](row, images, context, question)}
    except (ExportMismatch, ValueError, SyntaxError) as err:
        return {"id": row["id"], "question": row["question"], "answer": _answer(row["answers"])}, str(err)
    if problem is None:
        problem = _check(record, kind, row, images, protocol)
    return record, problem


def _check(record: dict, kind: str, row: dict, images: list[str], protocol=None) -> Optional[str]:
    try:
        again = release.assemble(kind, record, protocol)
    except release.ReleaseRecordError as err:
        return str(err)
    if again.prompt != row["prompt"]:
        if PAGE_LABEL.sub("", again.prompt) == row["prompt"]:
            return ("the prompts differ only by the '(page N)' of each page item, which data.py @26197d2 prints "
                    "and this row (like the data.py variant with an LLM judge) does not")
        return "the official loader assembles a different prompt"
    if again.images != images:
        return "the official loader orders the images differently"
    return None


def icl_entry(row: dict, image_root: Path) -> tuple[dict, Optional[str]]:
    """``{exemplar_list, test_example}`` for one row: one candidate, one exemplar per round."""
    images = _store_images(image_root, row, None)
    try:
        context, _question = release.split_prompt("icl", row["prompt"])
        labels = [item.split("\nlabel: ", 1)[1] for item in context.split("\n\n")]
    except (ValueError, IndexError) as err:
        return {}, f"not an ICL prompt: {err}"
    if len(labels) + 1 != len(images):
        return {}, f"{len(labels)} labels for {len(images)} images"
    rounds = [[{"image": image, "id": _label(label)}] for image, label in zip(images, labels)]
    test = {"id": row["id"], "image": images[-1], "answer": _release_answer(row, "icl")}
    entry = {"exemplar_list": [rounds], "test_example": [test]}
    again = release.icl_row(row["id"], test, rounds, 0)
    problem = None if (again.prompt, again.images) == (row["prompt"], images) else \
        "the official loader assembles a different prompt"
    return entry, problem


def _label(text: str):
    return int(text) if text.isdigit() else text


# -- files -----------------------------------------------------------------------------------------
def release_name(config: str, manifest: dict) -> str:
    """The file's path under mmlb_data/: the release's own name when the release has the dataset."""
    length = manifest.get("length")
    spec = release.RELEASE_FILES.get(manifest.get("dataset") or "")
    if spec is not None and spec.pattern and length:
        return spec.path(length)
    category = CATEGORY.get(manifest.get("family", ""), manifest.get("family") or "mmlb")
    stem = f"{manifest.get('dataset') or config}_K{length // 1024}" if length else config
    return f"{category}/{stem}.jsonl"


def _kind(manifest: dict, row: dict) -> Optional[str]:
    """The official loader kind of the config's rows (None: written in the generic shape)."""
    spec = release.RELEASE_FILES.get(manifest.get("dataset") or row.get("dataset") or "")
    return spec.kind if spec is not None and (spec.kind in RECORDS or spec.kind == "icl") else None


def _generic_record(row: dict, images: list[str]) -> dict:
    """Datasets the release does not have: the text between images, and the images."""
    return {"id": row["id"], "question": row["question"], "answer": _answer(row["answers"]),
            "ctxs": [{"text": segment} for segment in row["prompt"].split(IMAGE_PLACEHOLDER)], "image_list": images}


def _with_ours(record: dict, row: dict) -> dict:
    record.update(prompt=row["prompt"], num_tokens=row["num_tokens"], length=row["length"], metric=row["metric"],
                  meta=row["meta"] or "{}")
    return record


def _write_atomic(path: Path, text_chunks) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        for chunk in text_chunks:
            handle.write(chunk)
    tmp.replace(path)


def export_jsonl(folder: Path, out: Path, *, configs: Optional[Sequence[str]] = None) -> list[Path]:
    folder, out = Path(folder), Path(out)
    image_root = out / "mmlb_image"
    written = []
    for name in selected_configs(folder, configs):
        manifest = read_manifest(folder, name) or {}
        path = resolve_inside(out / "mmlb_data", release_name(name, manifest), what="export file")
        problems: list[str] = []
        kind = _kind(manifest, {"dataset": manifest.get("dataset")})
        if kind == "icl":
            _write_atomic(path, [_icl_file(folder, name, image_root, problems)])
        else:
            _write_atomic(path, _jsonl_lines(folder, name, kind, image_root, problems, manifest.get("protocol")))
        if problems:
            logger.warning("%s: %d row(s) the official loader would read differently (first: %s)",
                           name, len(problems), problems[0])
        written.append(path)
    return written


def _jsonl_lines(folder: Path, name: str, kind: Optional[str], image_root: Path, problems: list[str],
                 protocol=None):
    for row in iter_rows(folder, name):
        if kind is None:
            record = _generic_record(row, _store_images(image_root, row, None))
        else:
            record, problem = official_record(row, kind, image_root, protocol)
            if problem:
                problems.append(f"{row['id']}: {problem}")
        yield json.dumps(_with_ours(record, row), ensure_ascii=False) + "\n"


def _icl_file(folder: Path, name: str, image_root: Path, problems: list[str]) -> str:
    """One JSON object for the whole config, as the release's ICL files (one domain per row)."""
    data = {}
    for row in iter_rows(folder, name):
        entry, problem = icl_entry(row, image_root)
        if problem:
            problems.append(f"{row['id']}: {problem}")
            continue
        entry["test_example"][0] = _with_ours(entry["test_example"][0], row)
        data[row["id"]] = entry
    return json.dumps(data, ensure_ascii=False)
