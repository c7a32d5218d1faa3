"""A model profile sends a MemLens row as its conversation. ``HFBackend.prepare`` handed a profile
the row's content alone, which the profile wrapped as one user turn: with ``--model-profile auto``
(the default) a Qwen2.5-VL run of MemLens lost the system message, the assistant turns and the
turn boundaries that the generic path (and the OpenAI/vLLM backends) send."""
from __future__ import annotations

import io
import sys
import threading
from pathlib import Path

import pytest

pytest.importorskip("transformers")

from PIL import Image  # noqa: E402

from mmlbdata.runner.conversation import chat_messages, content_of  # noqa: E402
from mmlbdata.runner.core import Request  # noqa: E402
from mmlbdata.runner.profiles import make_profile  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
import no_torchvision  # noqa: E402

ROW = {"question": "What animal was in the photo?", "question_date": "2024/01/03 (Wed) 09:00",
       "sessions": [{"date": "2024/01/02 (Tue) 10:00",
                     "turns": [{"role": "user", "content": "Look <image> at this", "images": [0]},
                               {"role": "assistant", "content": "A cat on a mat.", "images": []}]}]}


def _png() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (56, 56), (200, 30, 30)).save(buffer, format="PNG")
    return buffer.getvalue()


def test_profile_messages_keep_the_turns():
    turns = chat_messages(ROW, label_images=True)
    profile = make_profile("qwen2_5_vl", "Qwen2.5-VL-7B-Instruct")
    sent = profile.messages(content_of(turns), ["IMG"], "", turns)
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "user", "assistant"]
    assert {"type": "image", "image": "IMG"} in sent[1]["content"]
    assert {"type": "text", "text": "[Image 1]"} in sent[1]["content"]
    assert sent[-1] == {"role": "assistant", "content": ""}  # the prefix, continued as for one prompt


def test_hf_backend_gives_the_profile_the_conversation(tmp_path):
    from mmlbdata.runner.hf import HFBackend
    from tests.tiny_families import build_tiny
    from transformers import AutoProcessor

    no_torchvision.install()
    model_dir = build_tiny("qwen2_5_vl", tmp_path)
    profile = make_profile("qwen2_5_vl", str(model_dir))
    backend = HFBackend.__new__(HFBackend)  # the processor and profile only: no weights loaded
    backend.processor = AutoProcessor.from_pretrained(model_dir, **profile.processor_kwargs())
    profile.prepare_processor(backend.processor)
    backend.profile, backend._owner, backend._local = profile, threading.get_ident(), threading.local()
    turns = chat_messages(ROW, label_images=True)
    request = Request(id="q0", config="memlens_32k", metric="memlens_judge", content=content_of(turns),
                      images=[{"bytes": _png(), "path": None}], messages=turns)
    prepared = backend.prepare([request])
    text = backend.processor.tokenizer.decode(prepared.inputs[0]["input_ids"][0])
    assert text.count("<|im_start|>assistant") == 2 and "<|im_start|>system" in text
    assert text.index("A cat on a mat.") < text.index("What animal was in the photo?")
