"""Frame sampling, seeking decoder and frame storage on the real sample videos."""
from __future__ import annotations

import pytest

av = pytest.importorskip("av")
import numpy as np  # noqa: E402
from PIL import Image  # noqa: E402

from mmlbdata.media import video as video_mod  # noqa: E402
from mmlbdata.media.video import (VideoError, decode_frames, frame_indices, frame_timestamps,  # noqa: E402
                                  num_sampled, output_size, probe, store_frames)
from mmlbdata.core.store import ImageStore  # noqa: E402
from mmlbdata.core.tokens import image_size  # noqa: E402


@pytest.fixture(scope="module")
def tears(real_data):
    return real_data / "video" / "tears-of-steel-battle-clip-medium.webm"


def reference_frames(path, wanted):
    """The wanted frames by a plain sequential decode, counted in decode order."""
    wanted, out = set(wanted), {}
    with av.open(str(path)) as c:
        for index, frame in enumerate(c.decode(video=0)):
            if index in wanted:
                out[index] = frame.to_ndarray(format="rgb24")
    return out


SPARSE = frame_indices(70.5, 24.0, 9)  # step 188 frames = 7.8 s: seeks across keyframes
STORED = [0, 500, 1000]


@pytest.fixture(scope="module")
def tears_frames(tears):
    return reference_frames(tears, SPARSE + STORED)


def test_sampling_rule():
    assert num_sampled(6.166, 64) == 6 and num_sampled(3600.5, 256) == 256
    assert num_sampled(0.4, 64) == 1  # the original divides by zero here
    assert num_sampled(70.5, 256, max_fps=4) == 256 and num_sampled(70.5, 256, max_fps=2) == 141
    # T = int(70.5 * 24) = 1692, n = 64 -> step int(1692 / 64) = 26
    idx = frame_indices(70.5, 24.0, 64)
    assert idx[:3] == [0, 26, 52] and idx[-1] == 26 * 63 and len(idx) == 64
    assert frame_timestamps([0, 26, 48], 24.0) == [0.0, 26 / 24, 2.0]
    assert frame_indices(0.2, 10.0, 5) == [0, 1]  # capped at T = 2 frames
    with pytest.raises(ValueError):
        frame_indices(0.01, 10.0, 1)


def test_output_size():
    assert output_size(800, 332, 768) == (768, 319)
    assert output_size(640, 480, 768) == (640, 480)  # never upscaled
    assert output_size(1080, 1920, 768) == (432, 768)
    assert output_size(800, 332, None) == (800, 332)
    assert output_size(640, 480, 1024, upscale=True) == (1024, 768)


def test_probe(tears, real_data):
    info = probe(tears)
    assert (info.fps, info.width, info.height) == (24.0, 800, 332)
    assert info.duration == pytest.approx(70.542)
    assert probe(real_data / "video" / "friday.mp4").fps == 30.0


@pytest.mark.parametrize("seek_gap", [0.5, 8.0])  # 8 s: one sequential pass
def test_decoded_frames_match_sequential_decode(tears, tears_frames, seek_gap):
    """Seeking (sparse keyframes in this VP8 clip) lands on exactly the wanted frames."""
    got = list(decode_frames(tears, SPARSE, seek_gap=seek_gap, threads=2))
    assert [i for i, _ in got] == SPARSE
    for index, frame in got:
        assert np.array_equal(frame.to_ndarray(format="rgb24"), tears_frames[index]), index


def test_decode_errors(tmp_path, real_data):
    bad = tmp_path / "bad.mp4"
    bad.write_bytes(b"not a video at all" * 100)
    with pytest.raises(VideoError, match="bad.mp4: cannot open video"):
        list(decode_frames(bad, [0]))
    with pytest.raises(VideoError, match="frame 600 .* is missing"):
        list(decode_frames(real_data / "video" / "friday.mp4", [0, 600]))
    with pytest.raises(VideoError, match="no video stream"):
        probe(real_data / "video" / "paulallen.mp3")
    with pytest.raises(ValueError):
        list(decode_frames(real_data / "video" / "friday.mp4", [3, 1]))


def test_store_frames_content_addressed_and_cached(tears, tears_frames, tmp_path, monkeypatch):
    store = ImageStore(tmp_path / "store")
    indices = STORED
    refs = store_frames(store, tears, indices, max_side=400)
    assert [(r.width, r.height) for r in refs] == [(400, 166)] * 3
    assert all(image_size(r.path) == (400, 166) for r in refs)
    for ref, index in zip(refs, indices):
        expected = Image.fromarray(tears_frames[index]).resize((400, 166), Image.BOX)
        diff = np.abs(np.asarray(Image.open(ref.path), float) - np.asarray(expected, float)).mean()
        assert diff < 4, (index, diff)
    # a second run finds every frame in the store: nothing is decoded
    monkeypatch.setattr(video_mod, "decode_frames", lambda *a, **k: pytest.fail("decoded again"))
    assert store_frames(store, tears, indices, max_side=400) == refs
    assert len(list((tmp_path / "store" / "objects").rglob("*.jpg"))) == 3
