"""MemLens's release (xrenaf/MEMLENS, Hub dataset ``xiyuRenBill/MEMLENS``), read as its ``data.py`` reads it.

Layout (the official README, "Data")::

    dataset_32k.json  dataset_64k.json  dataset_128k.json  dataset_256k.json
    agent_subset_195.json      the question ids of the memory-agent subset
    release_images/            every image the four files refer to, shared by them

Each ``dataset_*.json`` is one JSON array (or ``{"data": [...]}``, which ``load_data`` also takes) of
the same 789 questions, the longer lengths with more haystack sessions. The files are large (the
256K one 778 MB), so they are read one record at a time (:func:`..jsonstream.iter_array_items`) and
every record is checked against :data:`RECORD` before use: a bad record is skipped and reported
with its file, index, field and reason, the rest of the file is read on.

A record holds what ``data.py`` and ``llm_judge.py`` read: ``question_id``, ``question_type``
(the paper's five are :data:`QUESTION_TYPES`), ``question_subtype``, ``question``, ``answer``,
``question_date``, ``old_answer`` (knowledge updates; also read from ``question_content.old_answer``)
and ``haystack_sessions``: a list of sessions, each a list of turns (its date then in
``haystack_dates``) or an object ``{"date", "session": [turns]}``; a turn is ``{"role",
"content", "images"}``, the text marking images with ``<image>``, each image a path string or an
object naming it under ``file``/``path``/``file_path``/``img_file`` (``utils.resolve_image_path``).

Every record the official loader reads is read, as it reads it; only a record it cannot read (it
would crash ``load_data``: a turn's text that is not a string, sessions that are not lists) or one
without an id or a reference answer is skipped. So, as ``data.py`` does:

* a date or question is text however it was released: ``question_date``, each ``haystack_dates``
  entry and each session ``date`` are written as Python writes the value into the prompt (a null
  ``Question Date: None``, a number its digits, ``""`` stays empty); a missing one is ``unknown``
  (a missing question ``""``);
* a turn whose ``role`` is not ``"assistant"`` is a user turn in the chat (``build_messages``) and
  ``[Assistant]: `` in the flattened text (``build_context`` tests for ``"user"``): a null or missing
  role is kept as ``""``, which both read so;
* any ``question_type`` is kept (the judge scores one outside the five with the information
  extraction criteria, ``get_task_key``'s default); a null one is ``""``;
* an image named by an ``http(s)`` URL is the image at that URL (``resolve_image_path``: "URLs
  pass through", and the official wrappers download it): ``mmlb fetch memlens:url_images`` stores
  each under ``url_images/`` (:func:`url_image_specs`), where the build finds it;
* an answer released as a number is kept (``answer_value``): its text is the reference, and the
  official scorer's crash on it is reproduced by ``mmlb eval --parity official`` only.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Optional

from mmlbdata.core.report import BuildReport
from mmlbdata.official import memlens_prompts as prompts
from mmlbdata.sources.jsonstream import iter_array_items
from mmlbdata.sources.lineschema import NULL, Field, Problem, Schema, problem

SOURCE_KEY = "memlens"
LAYOUT = ("MemLens release (Hub xiyuRenBill/MEMLENS): dataset_{32k,64k,128k,256k}.json + agent_subset_195.json "
          "+ release_images/ (image paths in the JSON are relative to the release folder or to release_images/)")
LENGTH_KEYS = ("32k", "64k", "128k", "256k")
IMAGE_FOLDER = "release_images"
AGENT_SUBSET_FILE = "agent_subset_195.json"
#: where ``mmlb fetch memlens:url_images`` puts the images the release names by URL (inside the release)
URL_IMAGE_FOLDER = "url_images"
URL_SCHEMES = ("http://", "https://")
#: the five abilities (``question_type``), in the paper's order; any other is read too
QUESTION_TYPES = ("information_extraction", "multi_session_reasoning", "temporal_reasoning", "knowledge_update",
                  "answer_refusal")
#: the keys utils.resolve_image_path reads an image's path from, in its order
IMAGE_KEYS = ("file", "path", "file_path", "img_file")

#: any JSON value: a field data.py only writes into the prompt with str.format / an f-string
ANY = Field((str, int, float, bool, NULL, list, dict), required=False)
TURN = Schema({
    "role": ANY,
    "content": Field((str,), required=False),
    "images": Field((list, NULL), required=False, items=Field((str, dict, NULL))),
})
RECORD = Schema({
    "question_id": Field((str, int)),
    "question_type": Field((str, NULL)),
    "question_subtype": Field((str, NULL), required=False),
    "question": ANY,
    "answer": Field((str, int, float)),
    "question_date": ANY,
    "old_answer": Field((str, NULL), required=False),
    "question_content": Field((dict,), required=False, keys={"old_answer": Field((str, NULL), required=False)}),
    "haystack_sessions": Field((list,), required=False, items=Field((list, dict))),
    "haystack_dates": Field((list,), required=False),
})


def dataset_file(length_key: str) -> str:
    """``dataset_32k.json`` ... the release file of one length."""
    return f"dataset_{length_key.lower()}.json"


def as_text(value: Any) -> str:
    """A released value as ``data.py`` writes it into the prompt (``str.format``, f-strings): a
    string as it is, anything else as Python's ``str()`` (None -> ``None``, 3 -> ``3``)."""
    return value if isinstance(value, str) else str(value)


@dataclass(frozen=True)
class Turn:
    role: str  # as released ("user", "assistant", ...); missing, null or not a string: ""
    content: str
    images: tuple[str, ...]  # the path of each image as released (None/URL/unnamed entries: "")


@dataclass(frozen=True)
class Session:
    date: str
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class MemLensRecord:
    index: int  # position in the file's array (0-based)
    question_id: str
    question_type: str
    question_subtype: str
    question: str
    answer: str
    question_date: str
    old_answer: str
    sessions: tuple[Session, ...] = field(default=())
    #: the answer as released when it is not a string (a number): the official scorer's input
    answer_value: Any = None


def image_name(info: Any) -> str:
    """The path ``utils.resolve_image_path`` reads from one image entry ("" when none)."""
    if isinstance(info, str):
        return info
    if isinstance(info, dict):
        name = next((info[k] for k in IMAGE_KEYS if info.get(k)), None)
        if isinstance(name, list) and name:
            name = name[0]
        return name if isinstance(name, str) else ""
    return ""


def _session_problem(index: int, session: Any) -> Optional[Problem]:
    where = f"haystack_sessions[{index}]"
    turns = session
    if isinstance(session, dict):
        turns = session.get("session", [])
        if not isinstance(turns, list):
            return Problem(f"{where}.session", f"expected a list, got {type(turns).__name__}")
        where += ".session"
    for number, turn in enumerate(turns):
        found = problem(turn, TURN)
        if found:
            return Problem(f"{where}[{number}]" + (f".{found.field}" if found.field else ""), found.reason)
    return None


def record_problem(record: Any) -> Optional[Problem]:
    """The first way ``record`` breaks :data:`RECORD` or the session/turn shapes, or None."""
    found = problem(record, RECORD)
    if found:
        return found
    for index, session in enumerate(record.get("haystack_sessions") or []):
        found = _session_problem(index, session)
        if found:
            return found
    return None


def _turn(raw: dict) -> Turn:
    role = raw.get("role")
    return Turn(role=role if isinstance(role, str) else "", content=raw.get("content") or "",
                images=tuple(image_name(info) for info in (raw.get("images") or [])))


def _sessions(record: dict) -> tuple[Session, ...]:
    """Both session forms of ``build_context``: a dict with its own date, or a list of turns dated
    by ``haystack_dates`` (``unknown`` past its end); dates as it writes them (:func:`as_text`)."""
    dates = record.get("haystack_dates") or []
    out = []
    for i, session in enumerate(record.get("haystack_sessions") or []):
        if isinstance(session, dict):
            date, turns = session.get("date", prompts.UNKNOWN), session.get("session", [])
        else:
            date, turns = (dates[i] if i < len(dates) else prompts.UNKNOWN), session
        out.append(Session(date=as_text(date), turns=tuple(_turn(t) for t in turns)))
    return tuple(out)


def to_record(index: int, raw: dict) -> MemLensRecord:
    """A checked raw record as a :class:`MemLensRecord`: ``old_answer`` as ``llm_judge``'s metadata
    reads it (the field, else ``question_content.old_answer``)."""
    old = raw.get("old_answer") or (raw.get("question_content") or {}).get("old_answer") or ""
    answer = raw["answer"]
    return MemLensRecord(index=index, question_id=str(raw["question_id"]), question_type=raw["question_type"] or "",
                         question_subtype=raw.get("question_subtype") or "", question=as_text(raw.get("question", "")),
                         answer=as_text(answer), question_date=as_text(raw.get("question_date", prompts.UNKNOWN)),
                         old_answer=old, sessions=_sessions(raw),
                         answer_value=None if isinstance(answer, str) else answer)


def read_release_file(path: Path, report: BuildReport) -> Iterator[MemLensRecord]:
    """The records of one ``dataset_*.json``, in file order, one in memory at a time; a record that
    breaks the schema is reported (file, ``item N``, field, reason) and skipped."""
    path = Path(path)
    for index, raw in enumerate(iter_array_items(path)):
        found = record_problem(raw)
        if found:
            report.skip(path, f"item {index}", found.message, field=found.field or None)
            continue
        yield to_record(index, raw)


def agent_subset(path: Path) -> list[str]:
    """The question ids of ``agent_subset_195.json``: the file is an index (README: the ids with
    the per-type breakdown and how they were drawn); its ids are read from a top-level list or
    from the object's ``question_ids`` list. UNVERIFIED against the released file (not reachable
    here): any other shape is an error naming the file."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    ids = data.get("question_ids") if isinstance(data, dict) else data
    if not isinstance(ids, list) or not all(isinstance(i, (str, int)) for i in ids):
        raise ValueError(f"{path}: expected a list of question ids, or an object with a 'question_ids' list")
    return [str(i) for i in ids]


def is_url(name: str) -> bool:
    """Whether an image name is a URL, which ``resolve_image_path`` passes through unchecked."""
    return name.startswith(URL_SCHEMES)


def url_image_name(url: str) -> str:
    """The file an image URL is fetched into, under :data:`URL_IMAGE_FOLDER`: the URL's sha256."""
    return hashlib.sha256(url.encode("utf-8")).hexdigest()


def image_path(root: Path, name: str) -> Optional[tuple[Path, str]]:
    """Where an image named in the release lies, as ``(folder, name inside it)``: ``resolve_image_path``
    tries the path itself, then under ``--image_dir``; here the release folder, then its
    ``release_images/``; a URL, where ``mmlb fetch memlens:url_images`` put it. None: not there (the
    official loader then drops a file it cannot find; a URL it sends as it is)."""
    if not name:
        return None
    if is_url(name):
        folder = root / URL_IMAGE_FOLDER
        return (folder, url_image_name(name)) if (folder / url_image_name(name)).is_file() else None
    for folder in (root, root / IMAGE_FOLDER):
        if (folder / name).is_file():
            return folder, name
    return None


def image_urls(root: Path) -> list[str]:
    """Every image URL the release's dataset files name (the files present), sorted."""
    from mmlbdata.core.report import BuildReport

    urls: set[str] = set()
    for key in LENGTH_KEYS:
        path = Path(root) / dataset_file(key)
        if path.is_file():
            for record in read_release_file(path, BuildReport()):
                urls.update(name for session in record.sessions for turn in session.turns
                            for name in turn.images if is_url(name))
    return sorted(urls)


def url_image_specs(root: Path, dest: Optional[Path] = None) -> list:
    """The images the release names by URL, as download specs into ``url_images/`` (the follow-up
    step of the registry's ``memlens:url_images`` part). FileNotFoundError: no release there."""
    from mmlbdata.sources.download import FileSpec

    root = Path(root)
    if not any((root / dataset_file(key)).is_file() for key in LENGTH_KEYS):
        raise FileNotFoundError(f"no MemLens release under {root} (expected dataset_*.json): place it first")
    folder = Path(dest or root / URL_IMAGE_FOLDER)
    return [FileSpec(url=url, dest=folder / url_image_name(url)) for url in image_urls(root)]
