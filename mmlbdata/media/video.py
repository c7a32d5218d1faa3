"""Sampled video frames, decoded with PyAV and stored as JPEGs in the content-addressed store.

Sampling follows LongVideoBench's loader: with ``T = int(duration * fps)`` frames in the clip
and ``n`` frames wanted, the frames are ``int(T / n) * i`` for ``i < n`` and their timestamps
``index / fps``; the benchmark takes ``n = min(max_frames, int(duration))`` (at most 1 fps).

Decoding is one forward pass that seeks (to the keyframe before the target) only across gaps
longer than ``seek_gap`` seconds, so sparse sampling of an hour-long video skips most of it
while 1 fps sampling never decodes a GOP twice. A frame index is recovered from the frame's
presentation time (``round(t * fps)``), which equals the decode-order index the original
loader used for constant-frame-rate video.

Stored frames are keyed by (video content digest, frame index, size, quality), so a frame is
decoded and encoded once however many configs or examples use it, and its size, hence its
token count, is known from the stream header without decoding anything.
"""
from __future__ import annotations

import io
import math
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Iterator, Sequence

from mmlbdata.core.extras import require
from mmlbdata.core.store import file_sha256

__all__ = [
    "VideoError",
    "VideoInfo",
    "probe",
    "num_sampled",
    "frame_indices",
    "frame_timestamps",
    "output_size",
    "decode_frames",
    "encode_jpeg",
    "store_frames",
]


class VideoError(ValueError):
    """A video that cannot be opened or decoded; the message names the file."""


@dataclass(frozen=True)
class VideoInfo:
    """What the stream header says: frame rate, pixel size, container duration (s)."""

    path: str
    fps: float
    width: int
    height: int
    duration: float | None


def _open(path: str | Path):
    av = require("av", "video", "video frame decoding (PyAV)")

    try:
        return av.open(str(path))
    except (av.error.FFmpegError, OSError) as err:
        raise VideoError(f"{path}: cannot open video: {err}") from None


def _video_stream(container, path):
    """The first real video stream (cover art in audio files is a one-picture 'video')."""
    from av.stream import Disposition

    for stream in container.streams.video:
        if not stream.disposition & Disposition.attached_pic:
            return stream
    raise VideoError(f"{path}: no video stream")


def _fps(stream, path) -> Fraction:
    rate = stream.average_rate or stream.guessed_rate or stream.base_rate
    if not rate or rate <= 0:
        raise VideoError(f"{path}: unknown frame rate")
    return Fraction(rate)


def probe(path: str | Path) -> VideoInfo:
    """Header facts of the first video stream (nothing decoded)."""
    with _open(path) as container:
        stream = _video_stream(container, path)
        fps = _fps(stream, path)
        width, height = stream.codec_context.width, stream.codec_context.height
        if not width or not height:
            raise VideoError(f"{path}: video stream has no frame size")
        duration = container.duration / 1_000_000 if container.duration else None
        return VideoInfo(str(path), float(fps), width, height, duration)


def num_sampled(duration: float, max_frames: int, max_fps: float = 1.0) -> int:
    """LongVideoBench's frame count: ``min(max_frames, int(duration))``, at least 1.

    ``max_fps`` generalises the benchmark's "at most 1 frame per second" (1.0 reproduces it).
    The original divides by zero for clips under 1 s; one frame is the sensible reading.
    """
    return max(1, min(int(max_frames), int(duration * max_fps)))


def frame_indices(duration: float, fps: float, n: int) -> list[int]:
    """``int(T / n) * i`` for ``i < n`` with ``T = int(duration * fps)`` (the original rule).

    ``n`` is capped at ``T`` so indices stay distinct.
    """
    total = int(duration * fps)
    if total < 1 or n < 1:
        raise ValueError(f"no frames to sample (duration={duration}, fps={fps}, n={n})")
    n = min(n, total)
    step = total // n
    return [step * i for i in range(n)]


def frame_timestamps(indices: Sequence[int], fps: float) -> list[float]:
    """``index / fps`` seconds for each sampled frame."""
    return [index / fps for index in indices]


def output_size(width: int, height: int, max_side: int | None, *,
                upscale: bool = False) -> tuple[int, int]:
    """Frame size with the longest side scaled to ``max_side``: only down unless ``upscale``
    (standardized lengths may need larger frames from a short clip)."""
    if not max_side or max(width, height) == max_side or (
            max(width, height) < max_side and not upscale):
        return width, height
    scale = max_side / max(width, height)
    return max(1, round(width * scale)), max(1, round(height * scale))


def _configure_threads(stream, threads: int) -> None:
    stream.thread_type = "AUTO"
    stream.codec_context.thread_count = threads  # 0: let FFmpeg choose


def decode_frames(path: str | Path, indices: Sequence[int], *, threads: int = 0,
                  seek_gap: float = 8.0, tail_tolerance: float = 2.0) -> Iterator[tuple]:
    """Yield ``(index, av.VideoFrame)`` for the sorted, distinct ``indices``.

    If the stream ends before a wanted frame but within ``tail_tolerance`` seconds of it
    (annotation durations are rounded), the last decoded frame stands in; further away is an
    error, as is any decoding failure.
    """
    av = require("av", "video", "video frame decoding (PyAV)")

    if any(b <= a for a, b in zip(indices, indices[1:])):
        raise ValueError("frame indices must be strictly increasing")
    if not indices:
        return
    with _open(path) as container:
        stream = _video_stream(container, path)
        fps = _fps(stream, path)
        _configure_threads(stream, threads)
        tb = stream.time_base
        start = stream.start_time or 0
        pending = list(indices)
        last = None
        position = -math.inf  # seconds of the last decoded frame
        sought = -math.inf  # target of the last seek: no new seek before reaching it
        try:
            while pending:
                target = pending[0] / fps
                if target - max(position, 0) > seek_gap:
                    container.seek(start + int(target / tb), stream=stream, backward=True)
                    position, sought = -math.inf, target
                for frame in container.decode(stream):
                    if frame.pts is None:
                        continue
                    last = frame
                    position = float((frame.pts - start) * tb)
                    index = round(position * fps)
                    while pending and index >= pending[0]:
                        yield pending.pop(0), frame
                    if not pending:
                        return
                    if position >= sought and pending[0] / fps - position > seek_gap:
                        break  # jump ahead with a seek (sparse keyframes cannot loop)
                else:
                    break  # end of stream
        except av.error.FFmpegError as err:
            raise VideoError(f"{path}: decoding failed: {err}") from None
        _fill_tail(path, pending, last, position, fps, tail_tolerance)
        for index in pending:
            yield index, last


def _fill_tail(path, pending, last, position, fps, tolerance) -> None:
    """Raise unless the missing frames are within ``tolerance`` s of the last decoded one."""
    if not pending:
        return
    if last is None:
        raise VideoError(f"{path}: no decodable video frame")
    missing = pending[-1] / float(fps) - position
    if missing > tolerance:
        raise VideoError(f"{path}: stream ends at {position:.2f}s, frame {pending[-1]} "
                         f"({pending[-1] / float(fps):.2f}s) is missing")


def encode_jpeg(frame, size: tuple[int, int], quality: int = 90) -> bytes:
    """One frame scaled to ``size`` (area filter) as baseline JPEG bytes."""
    width, height = size
    image = frame.reformat(width=width, height=height, format="rgb24",
                           interpolation="AREA").to_image()
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=quality)
    return buffer.getvalue()


class _LazyDecoder:
    """Decodes frames only when the store misses one; indices are requested in order."""

    def __init__(self, path, indices, threads):
        self._args = (path, list(indices), threads)
        self._frames = None

    def frame(self, index):
        if self._frames is None:
            path, indices, threads = self._args
            self._frames = decode_frames(path, indices, threads=threads)
        for got, frame in self._frames:
            if got == index:
                return frame
        raise VideoError(f"{self._args[0]}: frame {index} was not decoded")


def store_frames(store, path: str | Path, indices: Sequence[int], *, max_side: int | None = None,
                 size: tuple[int, int] | None = None, quality: int = 90, threads: int = 0,
                 info: VideoInfo | None = None) -> list:
    """Store the sampled frames as JPEGs and return their ImageRefs, in ``indices`` order.

    The frame size is ``size`` if given, else the stream's scaled down to ``max_side``.
    Frames already in the store (same video bytes, index, size, quality) are not decoded.
    """
    if size is None:
        info = info or probe(path)
        size = output_size(info.width, info.height, max_side)
    digest = file_sha256(path)  # frames are keyed on content; many questions share a video
    decoder = _LazyDecoder(path, indices, threads)
    refs = []
    for index in indices:
        key = f"video:{digest}:f{index}:{size[0]}x{size[1]}:q{quality}"
        refs.append(store.cached(key, lambda i=index: (encode_jpeg(decoder.frame(i), size,
                                                                   quality), "jpg")))
    return refs
