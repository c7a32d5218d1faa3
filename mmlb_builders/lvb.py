"""LongVideoBench: multiple-choice questions over frames interleaved with subtitle lines.

Procedure (Wu et al., LongVideoBench, 2024; its reference loader):

* sample ``n = min(max_frames, int(duration))`` frames at indices ``int(T / n) * i`` with
  ``T = int(duration * fps)``, timestamps ``index / fps`` (:mod:`mmlbdata.media.video`);
* put the subtitle file's cues on the clip axis (shift by ``-starting_timestamp_for_subtitles``,
  keep ``[0, duration]``, null ends resolved; :mod:`mmlbdata.media.subtitles`);
* interleave frames and lines with the benchmark's rule (:mod:`mmlbdata.media.interleave`);
* prompt: the items one per line (frames as ``<image>``), ``Question: ...``, the options
  ``A. ...`` one per line, and the benchmark's answer instruction. ``answers`` = gold letter.

Configs: ``lvb_{val,test}_{64f,256f}`` (the originals; ``length`` is 0: no budget), their
``_frames`` (no subtitles) and ``lvb_{val,test}_subs`` (subtitles only) variants, and the
standardized ``lvb_{val,test}_{8k..128k}``, for which the core packer picks the number of
frames (sampled by the same rule, beyond 1 fps when the budget asks for it) so that frames
plus the subtitles they bring fill the budget by the invariant. A clip whose every frame
still leaves the budget unfilled gets larger frames (``frame_size_ladder``: 1024, 1280, 1536 px,
upscaled if need be); past the ladder it is reported and skipped (as Visual Haystack does).

Options (``--option KEY=VALUE``): ``frame_size`` (longest side of stored frames, default 768,
never upscaled), ``jpeg_quality`` (90), ``max_fps`` (1.0, the paper's cap), ``decode_threads``
(0 = FFmpeg's choice), ``null_end`` (``next``; ``original`` reproduces the reference loader's
``insert_subtitles_into_frames`` exactly: open ends, and cues neither dropped nor clipped),
``subtitles_full_track`` (subtitles-only variant: the reference loader's whole source track),
``text_items`` (``clean``: subtitle lines, question and options stripped, empty lines left out;
``official``: each exactly as released, as the reference loader's input list holds them; in both
a literal ``<image>`` in the text is written ``(image)`` so it is never read as a frame).
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterator, Sequence

from mmlbdata.core.lengths import BudgetError, fill
from mmlbdata.core.parallel import map_units
from mmlbdata.core.schema import make_example
from mmlbdata.core.tokens import IMAGE_PLACEHOLDER
from mmlbdata.media.interleave import Item, interleave
from mmlbdata.media.subtitles import Cue, SubtitleError, clip_cues, negative_cues, read_subtitles
from mmlbdata.media.video import (
    VideoError,
    VideoInfo,
    frame_indices,
    frame_timestamps,
    num_sampled,
    output_size,
    probe,
    store_frames,
)
from mmlbdata.sources.lvb import LAYOUT, LVBRecordError, LVBRow, annotation_path, read_annotations, release_file

from .base import MMLBBuilder, MMLBConfig, standard_configs

INSTRUCTION = "Answer with the option's letter from the given choices directly."
METRIC = "lvb_mc"
SPLITS = {"lvb_val": "val", "lvb_test": "test"}
VARIANTS = ("interleaved", "frames", "subtitles")
DEFAULT_FRAME_SIZE = 768  # longest side of a stored frame (never upscaled)
# Longest sides tried, in order, when a standardized length cannot be filled at frame_size.
FRAME_SIZE_LADDER = (1024, 1280, 1536)


TEXT_ITEMS = ("clean", "official")
# BuildReport counters: rows whose subtitle file has cues at negative times, and those cues
NEGATIVE_TIME_COUNTS = ("lvb_rows_negative_cue_times", "lvb_negative_cue_times")


def _clean(text: str, verbatim: bool = False) -> str:
    """A text line for the prompt: stripped (unless ``verbatim``), never a literal image placeholder."""
    return (text if verbatim else text.strip()).replace(IMAGE_PLACEHOLDER, "(image)")


def build_prompt(items: Sequence[Item], question: str, candidates: Sequence[str],
                 verbatim: bool = False) -> str:
    """LongVideoBench's input list joined one entry per line.

    The reference loader (``longvideobench_dataset.py``, ``__getitem__``) returns a list: the
    interleaved frames and subtitle texts, ``"Question: " + question``, ``". ".join([letter,
    candidate])`` per option, then the answer instruction; how a model joins it is left to the model,
    so one entry per line is this project's choice. ``items``: frame indices (rendered ``<image>``) and
    subtitle texts, as :func:`interleave` returns them. By default (``text_items=clean``) texts are
    stripped and empty subtitle lines left out (candidates may end in ``\\n`` in the release);
    ``verbatim`` (``text_items=official``) keeps every entry exactly as the loader's list holds it.
    """
    lines = [IMAGE_PLACEHOLDER if isinstance(item, int) else _clean(item, verbatim) for item in items]
    if not verbatim:
        lines = [line for line in lines if line]
    lines.append(f"Question: {_clean(question, verbatim)}")
    lines += [f"{chr(ord('A') + i)}. {_clean(c, verbatim)}" for i, c in enumerate(candidates)]
    lines.append(INSTRUCTION)
    return "\n".join(lines)


def _original_configs(split: str) -> list[MMLBConfig]:
    dataset = f"lvb_{split}"
    configs = []
    for frames in (64, 256):
        for suffix, variant in (("", "interleaved"), ("_frames", "frames")):
            configs.append(MMLBConfig(
                name=f"{dataset}_{frames}f{suffix}", dataset=dataset, metric=METRIC,
                sources=("lvb",), options={"max_frames": frames, "variant": variant},
                description=f"LongVideoBench {split}: {frames} frames, {variant}"))
    configs.append(MMLBConfig(
        name=f"{dataset}_subs", dataset=dataset, metric=METRIC, sources=("lvb",),
        options={"variant": "subtitles"}, description=f"LongVideoBench {split}: subtitles only"))
    return configs


class LongVideoBench(MMLBBuilder):
    """LongVideoBench val/test: originals, variants and standardized lengths."""

    DESCRIPTION = ("LongVideoBench: referring reasoning questions over long videos, as frames "
                   "interleaved with subtitles.")
    HOMEPAGE = "https://longvideobench.github.io/"
    LICENSE = "CC BY-NC-SA 4.0 (annotations); videos under their YouTube licences"
    CITATION = ("@article{wu2024longvideobench, title={LongVideoBench: A Benchmark for "
                "Long-context Interleaved Video-Language Understanding}, author={Wu, Haoning and "
                "Li, Dongxu and Chen, Bei and Li, Junnan}, year={2024}}")
    LIMIT_COUNTS_ROWS = True  # --limit caps the rows built (the progress bar's total)
    SOURCES = {"lvb": LAYOUT}
    BUILDER_CONFIGS = (
        _original_configs("val") + _original_configs("test")
        + standard_configs("lvb_val", metric=METRIC, sources=("lvb",), variant="interleaved",
                           description="LongVideoBench val, frames chosen to fill the budget")
        + standard_configs("lvb_test", metric=METRIC, sources=("lvb",), variant="interleaved",
                           description="LongVideoBench test, frames chosen to fill the budget")
    )

    @property
    def verbatim_text(self) -> bool:
        """``text_items=official``: subtitle lines, question and options exactly as released."""
        return self.option("text_items", "clean") == "official"

    # -- driving ---------------------------------------------------------------------------
    def generate(self) -> Iterator[dict]:
        root = self.source("lvb")
        split = SPLITS[self.config.dataset]
        variant = self.option("variant", "interleaved")
        if variant not in VARIANTS:
            raise ValueError(f"option variant must be one of {VARIANTS}, not {variant!r}")
        if self.option("text_items", "clean") not in TEXT_ITEMS:
            raise ValueError(f"{self.config.name}: option text_items must be one of {TEXT_ITEMS}, "
                             f"not {self.option('text_items')!r}")
        made = 0
        for row in self._prefetched(root, read_annotations(root, split, self.report), variant):
            if self.limit is not None and made >= self.limit:
                break
            try:
                example = self.example(root, row, variant)
            except (VideoError, SubtitleError, BudgetError, LVBRecordError) as err:
                self.report.skip(annotation_path(root, split), row.id, str(err))
                continue
            if example is not None:
                made += 1
                yield example
        self._note_negative_times()

    def _note_negative_times(self) -> None:
        """One note for the subtitle cues at negative times that :meth:`cues` met."""
        rows, cues = (self.report.counts[key] for key in NEGATIVE_TIME_COUNTS)
        if rows:
            kept = ("kept as LongVideoBench's loader keeps them" if self.option("null_end", "next") == "original"
                    else "clipped to the clip's start")
            self.report.note(f"{self.config.name}: {rows} row(s) read {cues} subtitle cue(s) starting or "
                             f"ending before 0 s in their subtitle file; {kept}")

    def _prefetched(self, root: Path, rows: Iterator[LVBRow], variant: str) -> Iterator[LVBRow]:
        """The rows, each once ``num_proc`` worker processes have decoded and stored its frames.

        Decoding dominates a LongVideoBench build (a video is decoded whole whenever its sampled
        frames are closer than the seek gap), so videos are decoded in parallel a few rows ahead
        while the rows are built here in order, finding every frame in the store: the output is
        the serial build's, byte for byte. A worker's failure is dropped: the build loop meets
        the same error and reports it.
        """
        if self.num_proc <= 1 or variant == "subtitles":
            yield from rows
            return
        # spawn: a forked decoder inherits the parent's codec threads; under --executor ray the
        # videos are Ray tasks instead (mmlbdata.core.parallel)
        units = ((root, row, variant) for row in rows)
        yield from map_units(_store_row_frames, units, num_proc=self.num_proc, start_method="spawn",
                             setup=(_set_worker_builder, (self.worker_arguments(),)))

    def worker_arguments(self) -> dict:
        """What a worker needs to make this builder again (the builder itself does not pickle)."""
        return {"cls": type(self), "config_name": self.config.name, "sources": self.sources, "seed": self.seed,
                "store": self.store, "counter": self.counter, "options": self.user_options}

    def cues(self, root: Path, row: LVBRow) -> list[Cue]:
        """The row's subtitle cues on the clip axis (see :mod:`mmlbdata.media.subtitles`)."""
        path = release_file(root, "subtitles", row.subtitle_path)
        raw = read_subtitles(path)
        negative = negative_cues(raw)
        if negative:  # reported once per build (generate); a prefetch worker's report is dropped
            rows_key, cues_key = NEGATIVE_TIME_COUNTS
            self.report.counts[rows_key] += 1
            self.report.counts[cues_key] += negative
        if self.option("subtitles_full_track", False):
            # The reference loader's subtitles-only mode reads the source video's whole track,
            # lines outside the clip included; reproduction only (only texts are used).
            return [Cue(cue.start, cue.start if cue.end is None else cue.end, cue.text)
                    for cue in raw]
        return clip_cues(raw, row.starting_timestamp_for_subtitles, row.duration,
                         null_end=self.option("null_end", "next"), source=str(path))

    # -- one example -----------------------------------------------------------------------
    def example(self, root: Path, row: LVBRow, variant: str) -> dict | None:
        cues = [] if variant == "frames" else self.cues(root, row)
        meta = {"video_id": row.video_id, "duration_group": row.duration_group,
                "duration": row.duration, "question_category": row.question_category,
                "topic_category": row.topic_category, "level": row.level,
                "position": list(row.position), "variant": variant,
                "starting_timestamp_for_subtitles": row.starting_timestamp_for_subtitles,
                "question_wo_referring_query": row.question_wo_referring_query,
                "candidates": list(row.candidates)}
        if variant == "subtitles":
            items, refs, indices, stamps = [cue.text for cue in cues], [], [], []
        else:
            sampled = self.frames(root, row, cues, variant, meta)
            if sampled is None:
                return None
            items, refs, indices, stamps = sampled
        prompt = build_prompt(items, row.question, row.candidates, self.verbatim_text)
        meta.update(text_items="official" if self.verbatim_text else "clean",
                    num_frames=len(refs), frame_indices=indices, frame_timestamps=[round(t, 4) for t in stamps],
                    num_subtitles=sum(isinstance(item, str) for item in items))
        letter = row.answer_letter
        return make_example(
            id=row.id, dataset=self.config.dataset, length=self.length or 0,
            num_tokens=self.counter.example(prompt, refs), prompt=prompt, images=refs,
            question=row.question, answers=[letter] if letter else [], metric=METRIC, meta=meta)

    def frames(self, root: Path, row: LVBRow, cues: Sequence[Cue], variant: str, meta: dict):
        """Sample, store and interleave the row's frames: (items, refs, indices, timestamps),
        or None when a standardized length cannot be filled (reported)."""
        video = release_file(root, "videos", row.video_path)
        info = probe(video)
        size = output_size(info.width, info.height, self.option("frame_size", DEFAULT_FRAME_SIZE))
        if self.length:
            chosen = self.choose_frames(row, info, cues, variant)
            if chosen is None:
                return None
            n, size, meta["next_num_tokens"] = chosen
        else:
            n = num_sampled(row.duration, int(self.option("max_frames", 64)),
                            float(self.option("max_fps", 1.0)))
        indices = frame_indices(row.duration, info.fps, n)
        stamps = frame_timestamps(indices, info.fps)
        refs = store_frames(self.store, video, indices, size=size,
                            quality=int(self.option("jpeg_quality", 90)),
                            threads=int(self.option("decode_threads", 0)), info=info)
        meta.update(fps=info.fps, frame_size=list(size))
        return self.items(stamps, cues, variant), refs, indices, stamps

    @staticmethod
    def items(stamps: Sequence[float], cues: Sequence[Cue], variant: str) -> list[Item]:
        if variant == "frames":
            return list(range(len(stamps)))
        return interleave(stamps, cues)

    def frame_size_ladder(self, info: VideoInfo) -> list[tuple[int, int]]:
        """Frame sizes to try, smallest first: the configured size, then larger longest sides
        (``frame_size_ladder`` option) for clips too short to fill the budget otherwise."""
        first = int(self.option("frame_size", DEFAULT_FRAME_SIZE) or max(info.width, info.height))
        sides = [first] + [s for s in self.option("frame_size_ladder", FRAME_SIZE_LADDER) if s > first]
        sizes = [output_size(info.width, info.height, first)]
        sizes += [output_size(info.width, info.height, side, upscale=True) for side in sides[1:]]
        return list(dict.fromkeys(sizes))

    def choose_frames(self, row: LVBRow, info: VideoInfo, cues: Sequence[Cue],
                      variant: str) -> tuple[int, tuple[int, int], int] | None:
        """(frame count, frame size, next_num_tokens) filling the budget.

        The core packer runs over 1..T frames, each count measured exactly (its frames' tokens
        plus the prompt with the lines they bring). If every frame of the clip at one size still
        leaves the budget unfilled, the next larger size is tried; past the last, the question
        is reported and skipped.
        """
        total = int(row.duration * info.fps)
        for size in self.frame_size_ladder(info):
            packed = self._pack_frames(row, info.fps, size, cues, variant, total)
            if not packed.exhausted:
                if not packed.items:
                    raise BudgetError(f"not even one frame fits {self.length} tokens "
                                      f"({packed.next_num_tokens} with one)")
                return len(packed.items), size, packed.next_num_tokens
        self.report.skip(self.source("lvb") / "videos" / row.video_path, row.id,
                         f"{self.config.name}: all {total} frames of the clip at {size[0]}x{size[1]} "
                         f"fill only {packed.num_tokens} of {self.length} tokens; question skipped")
        return None

    def _pack_frames(self, row, fps, size, cues, variant, total):
        per_frame = self.counter.image(*size)

        def measure(selection: list) -> int:
            n = len(selection)
            stamps = frame_timestamps(frame_indices(row.duration, fps, n), fps) if n else []
            items = self.items(stamps, cues, variant)
            return self.counter.text(build_prompt(items, row.question, row.candidates, self.verbatim_text)) \
                + n * per_frame

        return fill(range(total), self.length, measure, estimate=lambda _: per_frame + 1)


# -- frame prefetching workers (see LongVideoBench._prefetched) -------------------------------------
_WORKER_BUILDER: "LongVideoBench | None" = None


def _set_worker_builder(arguments: dict) -> None:
    global _WORKER_BUILDER
    arguments = dict(arguments)
    cls = arguments.pop("cls")
    _WORKER_BUILDER = cls(arguments.pop("config_name"), **arguments)


def _store_row_frames(unit: tuple[Path, LVBRow, str]) -> LVBRow:
    """Decode and store the frames :meth:`LongVideoBench.frames` will ask for (same choice);
    the row comes back once they are in the store. A failure is dropped: the build loop meets
    the same error and reports it."""
    root, row, variant = unit
    builder = _WORKER_BUILDER
    try:
        cues = [] if variant == "frames" else builder.cues(root, row)
        builder.frames(root, row, cues, variant, {})
    except Exception:  # noqa: BLE001 - reported by the build loop, which meets it again
        pass
    return row
