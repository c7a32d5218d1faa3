"""MemLens: multi-session multimodal conversations at 32K-256K, built from the official release.

The release already holds every length (``dataset_{32k,64k,128k,256k}.json``, the same 789
questions with more haystack sessions at longer lengths), so this recipe packs nothing: it reads
each record (``mmlbdata.sources.memlens``), keeps its conversation as released and counts it with
the unified counter beside the file's nominal length. A row holds:

* ``sessions``: the conversation as released: sessions with their dates, turns with their roles
  and text (``<image>`` marks as released), each turn's images as indices into ``images``; what
  ``mmlbdata.runner.conversation`` turns into the chat ``build_messages`` sends;
* ``prompt``: the flattened single prompt of the official text mode (``build_context`` into
  ``USER_TEMPLATE``), one ``<image>`` per entry of ``images``;
* ``question_date``, ``question_type`` (the ability), ``answers`` (the reference answer), and in
  ``meta`` the subtype, the old answer of knowledge updates and where the row comes from.

``num_tokens`` is the unified count (every image at its stored size, as in every family);
``meta.num_tokens_at_800px`` counts the images as MemLens's official runners send them, shrunk to
fit 800 px (their ``--max_image_size`` default, :mod:`mmlbdata.official.memlens_run`).

Images go through the content-addressed store, so the four lengths (and the agent subset) share
one copy of each image in the output. An image named by URL is the file ``mmlb fetch
memlens:url_images`` fetched; a record whose URL image was not fetched is skipped and reported.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator, Optional

from datasets import Features, List, Value

from mmlbdata.core.lengths import length_tokens
from mmlbdata.core.schema import FEATURES, make_example
from mmlbdata.core.store import BadImageError, ImageRef
from mmlbdata.core.tokens import IMAGE_PLACEHOLDER
from mmlbdata.evaluation.memlens_judge import task_key
from mmlbdata.official import memlens_prompts as prompts
from mmlbdata.official import memlens_run
from mmlbdata.sources import memlens as source
from mmlbdata.sources.mmlb_release import LengthTally

from .base import MMLBBuilder, MMLBConfig, MissingSourceError

METRIC = "memlens_judge"
SUBSETS = ("all", "agent")
#: the row's columns beyond the common schema
FEATURES_MEMLENS = Features({
    **FEATURES,
    "sessions": List({"date": Value("string"),
                      "turns": List({"role": Value("string"), "content": Value("string"),
                                     "images": List(Value("int64"))})}),
    "question_date": Value("string"),
    "question_type": Value("string"),
})


class _Images:
    """The row's images in order of appearance, and the store's references to them."""

    def __init__(self) -> None:
        self.refs: list[ImageRef] = []
        self.missing: list[str] = []
        self.unfetched: list[str] = []  # URLs without the file `mmlb fetch memlens:url_images` puts


def _flat_turn(role: str, text: str, count: int) -> tuple[str, bool]:
    """One turn as ``build_context`` writes it (labels off): the role prefix, images as ``<image> ``
    before a text without marks, the marks kept in place otherwise. Returns the line and whether the
    text's marks disagreed with its images (then the surplus marks are dropped and the missing ones
    put before the text, so the prompt keeps one mark per image)."""
    prefix = prompts.ROLE_PREFIX["user" if role == "user" else "assistant"]
    marks = text.count(prompts.IMAGE_MARK)
    mismatch = bool(count) and marks not in (0, count)
    if not count:
        text = text.replace(prompts.IMAGE_MARK, "")
    elif marks == 0 or mismatch:
        kept = min(marks, count)
        pieces = text.split(prompts.IMAGE_MARK)
        text = "".join(p + (prompts.IMAGE_MARK if i < kept else "") for i, p in enumerate(pieces[:-1])) + pieces[-1]
        prefix += (prompts.IMAGE_MARK + " ") * (count - kept)
    text = text.strip()
    return prefix + text + "\n" if text else prefix + "\n", mismatch


def flat_context(sessions: list[dict]) -> tuple[str, int]:
    """The conversation as ``build_context`` flattens it; the number of turns whose marks disagreed."""
    parts, mismatches = [], 0
    for number, session in enumerate(sessions, 1):
        parts.append("\n" + prompts.SESSION_HEADER.format(index=number, date=session["date"]) + "\n")
        for turn in session["turns"]:
            line, mismatch = _flat_turn(turn["role"], turn["content"], len(turn["images"]))
            parts.append(line)
            mismatches += mismatch
    return "".join(parts), mismatches


class MemLens(MMLBBuilder):
    """``memlens_{32k,64k,128k,256k}``; ``--option subset=agent`` keeps the 195 agent questions."""

    DESCRIPTION = ("MemLens: long-horizon multimodal conversational memory (789 questions, five abilities) "
                   "at 32K-256K, from the official release.")
    HOMEPAGE = "https://github.com/xrenaf/MEMLENS"
    LICENSE = "CC-BY-4.0 (data); images keep their source sites' licences"
    CITATION = ("@inproceedings{ren2026memlens, title={{MemLens}: Benchmarking Multimodal Long-Context Conversational "
                "Memory in Vision-Language Models}, author={Ren, Xiyu and others}, booktitle={NeurIPS Datasets and "
                "Benchmarks Track}, year={2026}}")
    SOURCES = {source.SOURCE_KEY: source.LAYOUT}
    FEATURES = FEATURES_MEMLENS
    BUILDER_CONFIGS = [
        MMLBConfig(name=f"memlens_{key}", dataset="memlens", length=length_tokens(key), metric=METRIC,
                   sources=(source.SOURCE_KEY,), options={"length_key": key},
                   description=f"MemLens at {key.upper()} (dataset_{key}.json; --option subset=agent: the 195 "
                               f"memory-agent questions)")
        for key in source.LENGTH_KEYS
    ]

    def generate(self) -> Iterator[dict[str, Any]]:
        root = self.source(source.SOURCE_KEY)
        name = source.dataset_file(self.option("length_key"))
        path = root / name
        if not path.is_file():
            raise MissingSourceError(f"the MemLens release under {root} has no {name} (needed by {self.config.name})")
        keep = self._subset(root)
        tally, sent = LengthTally(self.length), LengthTally(self.length)
        seen, unusual = set(), {"mismatch": 0, "missing": 0}
        for record in source.read_release_file(path, self.report):
            if self.limit is not None and tally.rows >= self.limit:
                break
            if keep is not None and record.question_id not in keep:
                continue
            if record.question_id in seen:
                self.report.skip(path, f"item {record.index}", f"question_id {record.question_id} repeated",
                                 field="question_id")
                continue
            example = self._example(root, name, record)
            if example is None:
                continue
            seen.add(record.question_id)
            for key in unusual:
                unusual[key] += bool(example.pop(f"_{key}"))
            tally.add(example["num_tokens"])
            sent.add(example.pop("_num_tokens_at_800px"))
            yield example
        self._finish(name, keep, tally, sent, unusual)

    def _subset(self, root: Path) -> Optional[set[str]]:
        subset = str(self.option("subset", "all"))
        if subset not in SUBSETS:
            raise ValueError(f"option subset must be one of {', '.join(SUBSETS)}, not {subset!r}")
        if subset == "all":
            return None
        index = root / source.AGENT_SUBSET_FILE
        if not index.is_file():
            raise MissingSourceError(f"--option subset=agent needs {index} (the release's agent subset index)")
        return set(source.agent_subset(index))

    def _finish(self, name: str, keep: Optional[set[str]], tally: LengthTally, sent: LengthTally,
                unusual: dict[str, int]) -> None:
        self.manifest_extra.update(provenance="official release", release_file=name,
                                   subset="all" if keep is None else "agent", official_lengths=tally.summary(),
                                   official_lengths_at_800px=sent.summary())
        self.report.note(f"{self.config.name}: {name}; {tally.describe()}")
        if sent.rows:
            s = sent.summary()
            self.report.note(f"{self.config.name}: with images shrunk to fit {memlens_run.MAX_IMAGE_SIZE} px, as the "
                             f"official runners send them: {s['min_tokens']}..{s['max_tokens']} tokens (mean "
                             f"{s['mean_tokens']}), {sent.over} of {sent.rows} rows over the length "
                             "(meta.num_tokens_at_800px)")
        if keep is not None and tally.rows != len(keep) and self.limit is None:
            self.report.note(f"{self.config.name}: the agent subset lists {len(keep)} question ids, "
                             f"{tally.rows} found in {name}")
        if unusual["missing"]:
            self.report.note(f"{self.config.name}: {unusual['missing']} rows refer to images the release does not "
                             "hold; dropped from their turns as the official loader drops them (meta.missing_images)")
        if unusual["mismatch"]:
            self.report.note(f"{self.config.name}: {unusual['mismatch']} rows with turns whose <image> marks "
                             "disagree with their images (meta.mark_mismatch_turns); the flattened prompt keeps one "
                             "mark per image")

    def _turn_images(self, root: Path, names: tuple[str, ...], images: _Images) -> list[int]:
        """The store references of one turn's images (indices into the row's list); an image the
        release does not hold is dropped, as ``resolve_image_path`` drops it; a URL not fetched is
        noted (the record is then skipped: the official run sends the URL's image)."""
        indices = []
        for name in names:
            found = source.image_path(root, name)
            if found is None:
                (images.unfetched if source.is_url(name) else images.missing).append(name)
                continue
            indices.append(len(images.refs))
            images.refs.append(self.store.ref_inside(found[0], found[1], what="image"))
        return indices

    def _conversation(self, root: Path, record: source.MemLensRecord) -> tuple[list[dict], _Images]:
        images = _Images()
        sessions = [{"date": s.date,
                     "turns": [{"role": t.role, "content": t.content,
                                "images": self._turn_images(root, t.images, images)} for t in s.turns]}
                    for s in record.sessions]
        return sessions, images

    def _example(self, root: Path, name: str, record: source.MemLensRecord) -> Optional[dict[str, Any]]:
        where = f"item {record.index}"
        try:
            sessions, images = self._conversation(root, record)
        except (BadImageError, OSError) as err:
            self.report.skip(root / name, where, f"image unusable, record skipped: {err}")
            return None
        if images.unfetched:
            self.report.skip(root / name, where, f"{len(images.unfetched)} image URL(s) not fetched, e.g. "
                                                 f"{images.unfetched[0][:200]} (`mmlb fetch memlens:url_images` "
                                                 f"puts them in {source.URL_IMAGE_FOLDER}/)", field="images")
            return None
        context, mismatch = flat_context(sessions)
        prompt = prompts.user_prompt(context, record.question, record.question_date)
        if prompt.count(IMAGE_PLACEHOLDER) != len(images.refs):
            extra = prompt.count(IMAGE_PLACEHOLDER) - len(images.refs)
            self.report.skip(root / name, where, f"question or date holds {extra} {IMAGE_PLACEHOLDER} mark(s) "
                                                 "with no image", field="question")
            return None
        text_tokens = self.counter.text(prompt)
        num_tokens = text_tokens + self.counter.images(images.refs)
        at_800px = text_tokens + self.counter.images(memlens_run.sent_size(r.width, r.height) for r in images.refs)
        meta = {"question_id": record.question_id, "question_subtype": record.question_subtype,
                "old_answer": record.old_answer, "category": record.question_type, "release_file": name,
                "task_key": task_key(record.question_type, record.question_subtype, record.answer),
                "release_index": record.index, "provenance": "official release",
                "over_budget": num_tokens > self.length, "num_tokens_at_800px": at_800px,
                "missing_images": len(images.missing),
                **({"mark_mismatch_turns": mismatch} if mismatch else {}),
                **({"answer_value": record.answer_value} if record.answer_value is not None else {})}
        example = make_example(id=record.question_id, dataset="memlens", length=self.length, num_tokens=num_tokens,
                               prompt=prompt, images=images.refs, question=record.question, answers=[record.answer],
                               metric=self.config.metric, meta=meta, sessions=sessions,
                               question_date=record.question_date, question_type=record.question_type)
        example.update(_mismatch=mismatch, _missing=len(images.missing), _num_tokens_at_800px=at_800px)
        return example
