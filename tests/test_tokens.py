"""The unified token counter against the issue's reference values and an independent count."""
from __future__ import annotations

import io

import pytest
import sentencepiece as spm
from PIL import Image

from mmlbdata.core.tokens import (
    ImageHeaderError, ImageTokenRule, TextTokenizer, TokenCounter, TokenizerNotFoundError,
    find_tokenizer_model, image_size, image_tokens, smart_resize,
)


@pytest.mark.parametrize("size,tokens", [((640, 480), 391), ((1224, 1584), 2508)])
def test_reference_image_token_values(size, tokens):
    assert image_tokens(*size) == tokens


def test_smart_resize_rounds_to_multiples_of_28():
    assert smart_resize(480, 640) == (476, 644)  # 17.1 -> 17, 22.9 -> 23 patches of 28
    assert smart_resize(10, 10) == (56, 56)  # below min_pixels: scaled up to 4 tokens
    h, w = smart_resize(20000, 20000)
    assert h * w <= 16384 * 28 * 28 and h % 28 == 0 and w % 28 == 0
    assert image_tokens(20000, 20000) == (h // 28) * (w // 28) <= 16384


def test_rule_parameters_change_the_count():
    rule = ImageTokenRule(patch_size=16, merge_size=2, min_pixels=4 * 32 * 32, max_pixels=1024 * 32 * 32)
    assert image_tokens(640, 480, rule) == round(480 / 32) * round(640 / 32)
    small_max = ImageTokenRule(max_pixels=100 * 28 * 28)
    assert image_tokens(1224, 1584, small_max) <= 100


def test_image_size_reads_headers_of_real_jpegs(coco_mini):
    files = sorted(coco_mini.glob("*2017/*.jpg"))
    assert len(files) > 100
    for path in files:
        with Image.open(path) as img:
            assert image_size(path) == img.size


@pytest.mark.parametrize("fmt", ["PNG", "JPEG", "GIF", "WEBP", "BMP"])
def test_image_size_of_other_formats(fmt):
    buffer = io.BytesIO()
    Image.new("RGB", (123, 45), "red").save(buffer, format=fmt)
    assert image_size(buffer.getvalue()) == (123, 45)


def test_image_size_rejects_garbage():
    with pytest.raises(ImageHeaderError):
        image_size(b"this is not an image at all, not even close")
    with pytest.raises(ImageHeaderError):
        image_size(b"\xff\xd8\xff\xe0\x00\x10JFIF")  # JPEG cut before its frame header


def test_text_counts_match_sentencepiece(tokenizer_path, real_data):
    sp = spm.SentencePieceProcessor(model_file=str(tokenizer_path))
    text = (real_data / "text" / "wikitext2_raw_wiki.test.raw").read_text()[:20000]
    tok = TextTokenizer(tokenizer_path)
    assert tok.count(text) == len(sp.encode(text))
    parts = text.split("\n")[:50]
    assert tok.count_batch(parts) == [len(sp.encode(p)) for p in parts]
    assert tok.count("") == 0


def test_counter_removes_placeholders_and_adds_bos(tokenizer_path):
    sp = spm.SentencePieceProcessor(model_file=str(tokenizer_path))
    counter = TokenCounter(tokenizer_path)
    prompt = "Look at these:\n<image>\n<image>\nQuestion: which one is red?"
    expected_text = len(sp.encode(prompt.replace("<image>", ""))) + 1
    assert counter.text(prompt) == expected_text
    assert counter.example(prompt, [(640, 480), (1224, 1584)]) == expected_text + 391 + 2508
    assert TokenCounter(tokenizer_path, add_bos=False).text(prompt) == expected_text - 1


def test_tokenizer_lookup_order(tokenizer_path, monkeypatch, tmp_path):
    monkeypatch.setenv("MMLB_TOKENIZER", str(tokenizer_path))
    assert find_tokenizer_model() == tokenizer_path
    assert find_tokenizer_model(tokenizer_path) == tokenizer_path
    monkeypatch.setenv("MMLB_TOKENIZER", str(tmp_path / "missing.model"))
    with pytest.raises(TokenizerNotFoundError, match="missing.model"):
        find_tokenizer_model()


def test_offline_without_tokenizer_says_how_to_provide_it(monkeypatch, tmp_path):
    monkeypatch.delenv("MMLB_TOKENIZER", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    import huggingface_hub.constants as c

    monkeypatch.setattr(c, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(c, "HF_HUB_CACHE", str(tmp_path))
    with pytest.raises(TokenizerNotFoundError) as info:
        find_tokenizer_model()
    message = str(info.value)
    assert "MMLB_TOKENIZER" in message and "--tokenizer" in message


def test_tokenizer_survives_pickling(tokenizer_path):
    import pickle

    tok = TextTokenizer(tokenizer_path)
    assert pickle.loads(pickle.dumps(tok)).count("hello world") == tok.count("hello world")


def test_chunked_counting_is_exact(tokenizer_path, real_data):
    """Long texts are counted in pieces; the total must equal one sentencepiece call."""
    import random

    from mmlbdata.core import tokens

    sp = spm.SentencePieceProcessor(model_file=str(tokenizer_path))
    tok = TextTokenizer(tokenizer_path)
    text = (real_data / "text" / "wikitext2_raw_wiki.test.raw").read_text()[:300000]
    assert len(tokens.split_for_counting(text)) > 10
    assert tok.count(text) == len(sp.encode(text))
    rng = random.Random(0)
    alphabet = list("ab c\n\t  .,é日😀\u00a0\u3000\u200b1234'\"-")
    for trial in range(200):  # adversarial: runs of spaces, tabs, CJK, emoji, odd whitespace
        sample = "".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 400)))
        pieces = tokens.split_for_counting(sample, size=rng.choice([1, 3, 7, 20]))
        assert "".join(pieces) == sample
        first, *rest = pieces
        chunked = len(sp.encode(first)) + sum(len(tok._sp_continuation.encode(p)) for p in rest)
        assert chunked == len(sp.encode(sample)), repr(sample)
