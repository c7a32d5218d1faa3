"""A small MemLens release in the official layout and record format, with real photos.

Written from the official README ("Data": the file names, ``release_images/``, the agent index)
and from what ``data.py`` / ``llm_judge.py`` / ``utils.py`` read of a record at fd4c8d7
(``question_id``, ``question_type``, ``question_subtype``, ``question``, ``answer``,
``question_date``, ``old_answer``, ``haystack_sessions`` in both session forms, ``haystack_dates``,
turns ``{role, content, images}`` with images as path strings or objects under ``file``/``path``,
``<image>`` marks in the text or not). The four lengths hold the same questions, the longer ones
with more haystack sessions, and all share ``release_images/``: as the real release.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

LENGTH_KEYS = ("32k", "64k", "128k", "256k")
#: (question_type, question_subtype, answer, old_answer), two per ability
QUESTIONS = [
    ("information_extraction", "entity", "a red umbrella", ""),
    ("information_extraction", "previnfo", "left of the door", ""),
    ("multi_session_reasoning", "counting", "3", ""),
    ("multi_session_reasoning", "entity_resolution", "Yes", ""),
    ("temporal_reasoning", "order_ranking", "bees, then ants", ""),
    ("temporal_reasoning", "duration_comparison", "the second trip", ""),
    ("knowledge_update", "", "brioche", "sourdough"),
    ("knowledge_update", "", "Lisbon", "Porto"),
    ("answer_refusal", "", "Insufficient information", ""),
    ("answer_refusal", "", "Insufficient information", ""),
]
AGENT_IDS = ["q000", "q003", "q006", "q008"]


def photos(data_root: Path, count: int) -> list[Path]:
    """``count`` real photos (sorted) from the shared data's hymenoptera set."""
    folder = Path(data_root) / "images" / "hymenoptera_val"
    found = sorted(p for p in folder.rglob("*.jpg"))
    return found[:count]


def _image_entry(name: str, form: int):
    """The image forms ``resolve_image_path`` reads: a plain path, ``file``, ``path`` with a URL beside."""
    if form == 0:
        return name
    if form == 1:
        return {"file": name, "image_url": "https://example.org/" + name}
    return {"path": name, "image_hf_url": "https://huggingface.co/datasets/xiyuRenBill/MEMLENS/" + name}


def _turns(q: int, s: int, images: list[str]) -> list[dict]:
    """One session's turns: a user turn with images (marks in place, or none), the assistant's reply,
    and every few sessions a text-only exchange or a stray mark with no image."""
    first = images[(q + s) % len(images)]
    second = images[(q + 2 * s + 1) % len(images)]
    if s % 3 == 0:
        user = {"role": "user", "content": f"Look at this <image> and this <image>, from outing {s}.",
                "images": [_image_entry(first, s % 3), _image_entry(second, (s + 1) % 3)]}
    elif s % 3 == 1:
        user = {"role": "user", "content": f"  Here is a photo from day {s}, question {q}.  ",
                "images": [_image_entry(first, 2)]}
    else:
        user = {"role": "user", "content": f"No photo today <image> (session {s}); {{braces}} stay as they are."}
    reply = {"role": "assistant", "content": f"Noted for session {s}. Anything else about question {q}?"}
    turns = [user, reply]
    if s % 4 == 3:
        turns.append({"role": "user", "content": "", "images": [first]})  # an image with no text
    return turns


def record(q: int, sessions: int, images: list[str]) -> dict:
    qtype, subtype, answer, old = QUESTIONS[q % len(QUESTIONS)]
    item = {
        "question_id": f"q{q:03d}", "question_type": qtype, "question": f"What did I show in question {q}?",
        "answer": answer, "question_date": f"2024/03/{q + 1:02d} (Sat) 10:00",
    }
    if subtype:
        item["question_subtype"] = subtype
    if old:
        item["question_content"] = {"old_answer": old} if q % 2 else None
        item["old_answer"] = old if q % 2 == 0 else None
        if item["question_content"] is None:
            del item["question_content"]
    if q % 2:  # dated sessions: the {"date", "session"} form
        item["haystack_sessions"] = [{"date": f"2024/01/{s + 1:02d} (Mon) 09:{s:02d}", "session": _turns(q, s, images)}
                                     for s in range(sessions)]
    else:  # lists of turns dated by haystack_dates (one date short: the last session is "unknown")
        item["haystack_sessions"] = [_turns(q, s, images) for s in range(sessions)]
        item["haystack_dates"] = [f"2024/02/{s + 1:02d} (Thu) 18:00" for s in range(sessions - 1)]
    return item


def write_release(root: Path, data_root: Path, num_images: int = 8) -> Path:
    """The release folder: four dataset files, the agent index, ``release_images/``."""
    root = Path(root)
    (root / "release_images").mkdir(parents=True, exist_ok=True)
    names = []
    for i, photo in enumerate(photos(data_root, num_images)):
        name = f"img_{i:04d}.jpg"
        shutil.copyfile(photo, root / "release_images" / name)
        # half the records name images under release_images/ (relative to the release), half bare
        names.append(name if i % 2 else f"release_images/{name}")
    for n, key in enumerate(LENGTH_KEYS):
        items = [record(q, 2 + 2 * n + q % 2, names) for q in range(len(QUESTIONS))]
        (root / f"dataset_{key}.json").write_text(json.dumps(items, indent=1 if n % 2 else None), encoding="utf-8")
    index = {"description": "question_ids of the memory-agent subset", "seed": 42,
             "per_type": {"information_extraction": 1}, "question_ids": AGENT_IDS}
    (root / "agent_subset_195.json").write_text(json.dumps(index, indent=2), encoding="utf-8")
    return root


#: the unusual records of :func:`write_unusual_release`: (question_id, what is unusual)
UNUSUAL = [
    ("u_url", "images named by URL: a plain string and a dict's file, marks in place"),
    ("u_url_dict_path", "an image named by URL under 'path', no marks in the text"),
    ("u_qdate_null", "question_date null (data.py writes 'Question Date: None')"),
    ("u_qdate_empty", "question_date '' (kept empty: item.get('question_date', 'unknown'))"),
    ("u_qdate_number", "question_date a number (written as its digits)"),
    ("u_dates_null", "a null entry in haystack_dates (session header 'Date: None')"),
    ("u_session_date_null", "a dated session whose date is null"),
    ("u_role_null", "a turn with role null and one without a role (chat: user; text: [Assistant])"),
    ("u_abstention", "question_type 'abstention' (the judge's information-extraction criteria)"),
    ("u_int_answer", "the answer the integer 7 (the official sub_em raises)"),
    ("u_float_answer", "the answer the number 2.5 (the official sub_em raises)"),
    ("u_zero_answer", "the answer the integer 0 (normalize_answer returns '' first: no crash)"),
    ("u_no_sessions", "no haystack_sessions (no context) and no question_date ('unknown')"),
    ("u_big_image", "a 1600x1200 photo (800x600 as the official runners send it)"),
]
#: the ids whose answer the official scorer raises on (eval_api.py drops them)
NUMBER_ANSWERS = ("u_int_answer", "u_float_answer")


def _unusual(question_id: str, names: list[str], urls: list[str], big: str) -> dict:
    """One unusual record (see :data:`UNUSUAL`), otherwise like :func:`record`."""
    item = record(0, 2, names)  # list-of-turns sessions dated by haystack_dates (one short)
    item.update(question_id=question_id, question=f"What happened in {question_id}?")
    turns = item["haystack_sessions"][0]
    if question_id == "u_url":
        turns[0].update(content="A <image> and a <image>.", images=[urls[0], {"file": urls[1], "image_url": urls[1]}])
    elif question_id == "u_url_dict_path":
        turns[1].update(images=[{"path": urls[1]}, names[1]])
    elif question_id == "u_qdate_null":
        item["question_date"] = None
    elif question_id == "u_qdate_empty":
        item["question_date"] = ""
    elif question_id == "u_qdate_number":
        item["question_date"] = 20240301
    elif question_id == "u_dates_null":
        item["haystack_dates"] = [None]
    elif question_id == "u_session_date_null":
        item["haystack_sessions"] = [{"date": None, "session": turns}, {"session": item["haystack_sessions"][1]}]
        del item["haystack_dates"]
    elif question_id == "u_role_null":
        turns[0]["role"] = None
        del turns[1]["role"]
    elif question_id == "u_abstention":
        item["question_type"] = "abstention"
    elif question_id == "u_int_answer":
        item["answer"] = 7
    elif question_id == "u_float_answer":
        item["answer"] = 2.5
    elif question_id == "u_zero_answer":
        item["answer"] = 0
    elif question_id == "u_no_sessions":
        for key in ("haystack_sessions", "haystack_dates", "question_date"):
            del item[key]
    elif question_id == "u_big_image":
        turns[0].update(content="A big one: <image>", images=[big])
    return item


def write_unusual_release(root: Path, data_root: Path, url_base: str) -> tuple[Path, dict[str, bytes]]:
    """A release in the official format whose ``dataset_32k.json`` holds the ten usual records and
    one of each :data:`UNUSUAL` record; the images named by URL point under ``url_base`` (a
    loopback server's). Returns the release and the URL files (path under ``url_base`` -> bytes)."""
    import io

    from PIL import Image

    root = write_release(root, data_root, num_images=4)
    served = {f"photo_{i}.jpg": photo.read_bytes() for i, photo in enumerate(photos(data_root, 6)[4:6])}
    urls = [url_base + name for name in served]
    with Image.open(photos(data_root, 1)[0]) as photo:
        big = io.BytesIO()
        photo.convert("RGB").resize((1600, 1200)).save(big, format="JPEG", quality=80)
    (root / "release_images" / "big_1600x1200.jpg").write_bytes(big.getvalue())
    names = [n for n in (f"release_images/img_{i:04d}.jpg" for i in range(4))]
    items = json.loads((root / "dataset_32k.json").read_text(encoding="utf-8"))
    items += [_unusual(qid, names, urls, "big_1600x1200.jpg") for qid, _why in UNUSUAL]
    (root / "dataset_32k.json").write_text(json.dumps(items), encoding="utf-8")
    return root, served
