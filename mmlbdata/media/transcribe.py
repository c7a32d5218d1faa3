"""Speech -> subtitles in the release's Whisper JSON shape, for videos that have none.

Two backends behind one interface (``Transcriber``: 16 kHz mono float32 audio -> segments):
- ``openai-whisper``: the reference implementation the LongVideoBench card names; the paper used
  ``large-v3`` (the default model name here);
- ``faster-whisper``: CTranslate2 re-implementation, several times faster on CPU; accepts a
  model name or a local CTranslate2 model folder (offline use).

Audio is decoded with PyAV for both backends, so neither needs an ``ffmpeg`` binary (which
openai-whisper would otherwise call through a subprocess). Output files are a JSON list of
``{"timestamp": [start, end], "text": ...}``, the shape :mod:`mmlbdata.media.subtitles` reads.
"""
from __future__ import annotations

import argparse
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, NamedTuple, Sequence

__all__ = ["Segment", "TranscriptionError", "load_audio", "load_backend", "BACKENDS",
           "to_release_json", "transcribe_file", "transcribe_missing", "main"]

log = logging.getLogger(__name__)
SAMPLE_RATE = 16_000
VIDEO_SUFFIXES = (".mp4", ".mkv", ".webm", ".mov", ".avi", ".m4v")


class TranscriptionError(RuntimeError):
    """Audio that cannot be decoded or a backend that cannot be loaded."""


class Segment(NamedTuple):
    start: float
    end: float
    text: str


Transcriber = Callable[["object"], list]  # np.ndarray (float32, 16 kHz mono) -> [Segment]


def load_audio(path: str | Path, sample_rate: int = SAMPLE_RATE):
    """The first audio stream as mono float32 in [-1, 1] at ``sample_rate`` (PyAV resampler)."""
    import av
    import numpy as np

    try:
        container = av.open(str(path))
    except (av.error.FFmpegError, OSError) as err:
        raise TranscriptionError(f"{path}: cannot open: {err}") from None
    with container:
        if not container.streams.audio:
            raise TranscriptionError(f"{path}: no audio stream")
        resampler = av.AudioResampler(format="flt", layout="mono", rate=sample_rate)
        chunks = []
        try:
            for frame in container.decode(container.streams.audio[0]):
                chunks.extend(out.to_ndarray().reshape(-1) for out in resampler.resample(frame))
            chunks.extend(out.to_ndarray().reshape(-1) for out in resampler.resample(None))
        except av.error.FFmpegError as err:
            raise TranscriptionError(f"{path}: audio decoding failed: {err}") from None
    if not chunks:
        return np.zeros(0, dtype=np.float32)
    return np.concatenate(chunks).astype(np.float32, copy=False)


def _faster_whisper(model: str, device: str, language: str | None, compute_type: str | None,
                    beam_size: int, threads: int) -> Transcriber:
    try:
        from faster_whisper import WhisperModel
    except ImportError as err:
        raise TranscriptionError("faster-whisper is not installed: pip install "
                                 "'mmlbdata[transcribe]'") from err
    compute_type = compute_type or ("int8" if device == "cpu" else "float16")
    engine = WhisperModel(model, device=device, compute_type=compute_type, cpu_threads=threads)

    def run(audio) -> list[Segment]:
        segments, _ = engine.transcribe(audio, language=language, beam_size=beam_size)
        return [Segment(s.start, s.end, s.text) for s in segments]

    return run


def _openai_whisper(model: str, device: str, language: str | None, compute_type: str | None,
                    beam_size: int, threads: int) -> Transcriber:
    try:
        import whisper
    except ImportError as err:
        raise TranscriptionError("openai-whisper is not installed: pip install "
                                 "'mmlbdata[transcribe]'") from err
    engine = whisper.load_model(model, device=device)
    options = {"language": language, "beam_size": beam_size, "fp16": device != "cpu",
               "verbose": None}

    def run(audio) -> list[Segment]:
        result = engine.transcribe(audio, **options)
        return [Segment(s["start"], s["end"], s["text"]) for s in result["segments"]]

    return run


BACKENDS = {"openai-whisper": _openai_whisper, "faster-whisper": _faster_whisper}


def load_backend(name: str = "openai-whisper", model: str = "large-v3", *, device: str = "cpu",
                 language: str | None = None, compute_type: str | None = None,
                 beam_size: int = 5, threads: int = 0) -> Transcriber:
    """A transcriber; ``model`` is a model name or (faster-whisper) a local model folder."""
    if name not in BACKENDS:
        raise ValueError(f"unknown backend {name!r}; choose from {sorted(BACKENDS)}")
    return BACKENDS[name](model, device, language, compute_type, beam_size, threads)


def to_release_json(segments: Sequence[Segment]) -> list[dict]:
    """Segments as the release's ``{"timestamp": [start, end], "text": ...}`` list."""
    return [{"timestamp": [round(float(s.start), 3), round(float(s.end), 3)],
             "text": s.text.strip()} for s in segments if s.text.strip()]


def transcribe_file(path: str | Path, transcriber: Transcriber) -> list[dict]:
    """One media file -> release-shaped subtitle list."""
    return to_release_json(transcriber(load_audio(path)))


@dataclass
class _Outcome:
    written: list
    skipped: list
    failed: list


def transcribe_missing(videos: str | Path, subtitles: str | Path, transcriber: Transcriber, *,
                       suffix: str = "_en.json") -> _Outcome:
    """Write ``subtitles/<stem><suffix>`` for every video that has no subtitle file yet."""
    videos, subtitles = Path(videos), Path(subtitles)
    subtitles.mkdir(parents=True, exist_ok=True)
    outcome = _Outcome([], [], [])
    for video in sorted(p for p in videos.iterdir() if p.suffix.lower() in VIDEO_SUFFIXES):
        target = subtitles / f"{video.stem}{suffix}"
        if target.exists():
            outcome.skipped.append(video.name)
            continue
        try:
            cues = transcribe_file(video, transcriber)
        except TranscriptionError as err:
            log.warning("%s", err)
            outcome.failed.append({"video": video.name, "error": str(err)})
            continue
        tmp = target.with_suffix(".json.partial")
        tmp.write_text(json.dumps(cues, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        tmp.replace(target)
        outcome.written.append(target.name)
    return outcome


def main(argv: Sequence[str] | None = None) -> int:
    """``python scripts/transcribe.py videos/ subtitles/ --backend faster-whisper``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("videos")
    parser.add_argument("subtitles")
    parser.add_argument("--backend", choices=sorted(BACKENDS), default="openai-whisper")
    parser.add_argument("--model", default="large-v3", help="model name or local folder")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--language", default=None)
    parser.add_argument("--beam-size", type=int, default=5)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    transcriber = load_backend(args.backend, args.model, device=args.device,
                               language=args.language, beam_size=args.beam_size)
    outcome = transcribe_missing(args.videos, args.subtitles, transcriber)
    print(f"written {len(outcome.written)}, skipped {len(outcome.skipped)}, "
          f"failed {len(outcome.failed)}")
    return 1 if outcome.failed else 0
