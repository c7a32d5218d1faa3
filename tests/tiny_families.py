"""Tiny randomly initialised models of the real architectures the runner's profiles serve
(Qwen2-VL, Qwen2.5-VL, Gemma 3, Idefics3, LLaVA-OneVision), built offline from transformers configs.

Each has a synthetic byte-level BPE tokenizer that carries the family's real special tokens
(``<|im_start|>``, ``<|image_pad|>``, ``<start_of_image>``, ``<fake_token_around_image>``,
``<row_1_col_1>`` ...), the family's processor with its real image-processor defaults (sizes
shrunk where the default would make a CPU test slow, said per family), a chat template in the
family's turn format, and a generation config whose ``eos_token_id`` lists the tokens the real
instruct checkpoints list. Outputs are noise; inputs, token ids and shapes are the family's.
The folder name matters: MMLongBench picks its wrapper from the model name (``Qwen2.5-VL-tiny``).
"""
from __future__ import annotations

from pathlib import Path

_CORPUS = [
    "Answer: the quick brown fox jumps over the lazy dog. Yes No",
    "Question: what is in the image? yes no A B C D E 0 1 2 3 4 5 6 7 8 9 Document Title",
    "Summary: label: The report finds that the needle is in image 2, row 1, column 3.\n\n",
    "You are given a set of images. Please answer the question based on the given documents.",
]

# -- chat templates: each family's turn markup, written for these tiny models ---------------------
_QWEN_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for c in message['content'] %}"
    "{% if c['type'] == 'image' or 'image' in c %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
_GEMMA_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}"
    "{% set role = 'model' if message['role'] == 'assistant' else message['role'] %}"
    "<start_of_turn>{{ role }}\n"
    "{% if message['content'] is string %}{{ message['content'] | trim }}"
    "{% else %}{% for c in message['content'] %}"
    "{% if c['type'] == 'image' %}<start_of_image>{% elif c['type'] == 'text' %}{{ c['text'] | trim }}{% endif %}"
    "{% endfor %}{% endif %}<end_of_turn>\n{% endfor %}"
    "{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)
_IDEFICS_TEMPLATE = (
    "<|begin_of_text|>{% for message in messages %}{{ message['role'] | capitalize }}"
    "{% if message['content'][0]['type'] == 'image' %}{{ ':' }}{% else %}{{ ': ' }}{% endif %}"
    "{% for line in message['content'] %}{% if line['type'] == 'text' %}{{ line['text'] }}"
    "{% elif line['type'] == 'image' %}{{ '<image>' }}{% endif %}{% endfor %}<end_of_utterance>\n{% endfor %}"
    "{% if add_generation_prompt %}{{ 'Assistant:' }}{% endif %}"
)


def _tokenizer(specials: list[str], vocab_size: int = 600, **kwargs):
    """A byte-level BPE tokenizer trained on a few sentences, ``specials`` first (ids 0..n-1)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(_CORPUS, trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, **kwargs)


def _save(out_dir: Path, model, processor, eos: list[int], pad: int, bos: int | None = None) -> Path:
    from transformers import GenerationConfig

    out_dir.mkdir(parents=True, exist_ok=True)
    model.generation_config = GenerationConfig(eos_token_id=eos, pad_token_id=pad, bos_token_id=bos)
    model.save_pretrained(out_dir)
    processor.save_pretrained(out_dir)
    return out_dir


def _text(vocab: int, hidden: int, layers: int, **extra) -> dict:
    return dict(vocab_size=vocab, hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=layers,
                num_attention_heads=4, num_key_value_heads=2, **extra)


class _QwenProcessorFiles:
    """A Qwen2-VL processor's files (tokenizer, image processor, chat template, processor class),
    written without building the processor: transformers 5 builds one only with a video
    processor, which needs torchvision (absent on CPU machines; ``AutoProcessor`` loads the
    folder wherever torchvision is)."""

    def __init__(self, image_processor, tokenizer):
        self.image_processor, self.tokenizer = image_processor, tokenizer

    def save_pretrained(self, out_dir: Path) -> None:
        import json

        self.tokenizer.save_pretrained(out_dir)
        self.image_processor.save_pretrained(out_dir)
        (Path(out_dir) / "chat_template.jinja").write_text(_QWEN_TEMPLATE, encoding="utf-8")
        (Path(out_dir) / "processor_config.json").write_text(json.dumps({"processor_class": "Qwen2VLProcessor"}))


QWEN_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>",
                 "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>"]


def build_tiny_qwen_vl(out_dir: str | Path, version: str = "2.5", hidden: int = 64, layers: int = 2,
                       heads: int = 4, vision_depth: int = 2, seed: int = 0) -> Path:
    """Qwen2-VL (``version="2"``) or Qwen2.5-VL (``"2.5"``): the real image processor (patch 14,
    merge 2, min/max pixels as released), mrope sections [16, 24, 24] scaled to the head
    (``hidden / heads = 128``, as released, keeps them: what YaRN's sections assume)."""
    import torch
    from transformers import (
        Qwen2_5_VLConfig,
        Qwen2_5_VLForConditionalGeneration,
        Qwen2VLConfig,
        Qwen2VLForConditionalGeneration,
        Qwen2VLImageProcessor,
    )

    tokenizer = _tokenizer(QWEN_SPECIALS, eos_token="<|im_end|>", pad_token="<|endoftext|>", padding_side="left",
                           extra_special_tokens={"image_token": "<|image_pad|>", "video_token": "<|video_pad|>",
                                                 "vision_bos_token": "<|vision_start|>",
                                                 "vision_eos_token": "<|vision_end|>"})
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in QWEN_SPECIALS}
    image_processor = Qwen2VLImageProcessor(min_pixels=56 * 56, max_pixels=28 * 28 * 1280, patch_size=14,
                                            merge_size=2, temporal_patch_size=2)
    processor = _QwenProcessorFiles(image_processor, tokenizer)
    half = hidden // heads // 2  # mrope sections split half the head 2:3:3, as [16, 24, 24] splits 64
    rope = {"rope_type": "default", "rope_theta": 1000000.0, "mrope_section": [half // 4, 3 * half // 8, 3 * half // 8]}
    text = _text(len(tokenizer), hidden, layers, max_position_embeddings=128000, rope_parameters=rope,
                 bos_token_id=ids["<|endoftext|>"], eos_token_id=ids["<|im_end|>"])
    text["num_attention_heads"] = heads
    common = dict(image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
                  vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"])
    if version == "2.5":
        vision = dict(depth=vision_depth, hidden_size=64, intermediate_size=128, num_heads=4, out_hidden_size=hidden,
                      patch_size=14, spatial_merge_size=2, temporal_patch_size=2, window_size=112,
                      fullatt_block_indexes=[vision_depth - 1])
        config, cls = Qwen2_5_VLConfig(text_config=text, vision_config=vision, **common), \
            Qwen2_5_VLForConditionalGeneration
    else:
        vision = dict(depth=vision_depth, embed_dim=64, hidden_size=hidden, num_heads=4, mlp_ratio=2, patch_size=14,
                      spatial_merge_size=2, temporal_patch_size=2)
        config, cls = Qwen2VLConfig(text_config=text, vision_config=vision, **common), Qwen2VLForConditionalGeneration
    torch.manual_seed(seed)
    model = cls(config).eval()
    return _save(Path(out_dir), model, processor, eos=[ids["<|im_end|>"], ids["<|endoftext|>"]],
                 pad=ids["<|endoftext|>"], bos=ids["<|endoftext|>"])


GEMMA_SPECIALS = ["<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>", "<start_of_image>",
                  "<end_of_image>", "<image_soft_token>"]


def build_tiny_gemma3(out_dir: str | Path, hidden: int = 64, layers: int = 2, image_size: int = 56,
                      tokens_per_image: int = 4, seed: int = 0) -> Path:
    """Gemma 3: SigLIP tower and the pan-and-scan-off image processor (Gemma 3 resizes every
    image to one square); the square is ``image_size`` (896 released) and each image is
    ``tokens_per_image`` soft tokens (256 released) so a 32K row stays small on CPU."""
    import torch
    from transformers import Gemma3Config, Gemma3ForConditionalGeneration, Gemma3ImageProcessor, Gemma3Processor

    tokenizer = _tokenizer(GEMMA_SPECIALS, bos_token="<bos>", eos_token="<eos>", pad_token="<pad>",
                           unk_token="<unk>", padding_side="left",
                           extra_special_tokens={"image_token": "<image_soft_token>", "boi_token": "<start_of_image>",
                                                 "eoi_token": "<end_of_image>"})
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in GEMMA_SPECIALS}
    image_processor = Gemma3ImageProcessor(size={"height": image_size, "width": image_size}, do_pan_and_scan=False,
                                           image_mean=[0.5, 0.5, 0.5], image_std=[0.5, 0.5, 0.5])
    processor = Gemma3Processor(image_processor=image_processor, tokenizer=tokenizer, chat_template=_GEMMA_TEMPLATE,
                                image_seq_length=tokens_per_image)
    config = Gemma3Config(
        text_config=_text(len(tokenizer), hidden, layers, head_dim=16, max_position_embeddings=131072,
                          sliding_window=64, bos_token_id=ids["<bos>"], eos_token_id=ids["<eos>"],
                          pad_token_id=ids["<pad>"]),
        vision_config=dict(hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=1,
                           num_attention_heads=4, image_size=image_size, patch_size=14),
        mm_tokens_per_image=tokens_per_image, boi_token_index=ids["<start_of_image>"],
        eoi_token_index=ids["<end_of_image>"], image_token_index=ids["<image_soft_token>"])
    torch.manual_seed(seed)
    model = Gemma3ForConditionalGeneration(config).eval()
    return _save(Path(out_dir), model, processor, eos=[ids["<eos>"], ids["<end_of_turn>"]], pad=ids["<pad>"],
                 bos=ids["<bos>"])


IDEFICS_SPECIALS = (["<|begin_of_text|>", "<|end_of_text|>", "<|finetune_right_pad_id|>", "<end_of_utterance>",
                     "<fake_token_around_image>", "<image>", "<global-img>"]
                    + [f"<row_{r}_col_{c}>" for r in range(1, 7) for c in range(1, 7)])


def build_tiny_idefics3(out_dir: str | Path, hidden: int = 64, layers: int = 2, tile: int = 224, seed: int = 0) -> Path:
    """Idefics3 (Llama 3 text, SigLIP tiles, pixel shuffle 2): tiles of ``tile`` px (364
    released), so each tile is (tile/14)^2/4 image tokens; the image processor splits into
    tiles and adds the global image as released."""
    import torch
    from transformers import (
        Idefics3Config,
        Idefics3ForConditionalGeneration,
        Idefics3ImageProcessor,
        Idefics3Processor,
    )

    tokenizer = _tokenizer(IDEFICS_SPECIALS, bos_token="<|begin_of_text|>", eos_token="<|end_of_text|>",
                           pad_token="<|finetune_right_pad_id|>", padding_side="left",
                           extra_special_tokens={"image_token": "<image>"})
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in IDEFICS_SPECIALS}
    image_processor = Idefics3ImageProcessor(size={"longest_edge": 4 * tile}, max_image_size={"longest_edge": tile},
                                             image_mean=[0.5, 0.5, 0.5], image_std=[0.5, 0.5, 0.5])
    seq_len = (tile // 14) ** 2 // 4
    processor = Idefics3Processor(image_processor=image_processor, tokenizer=tokenizer, image_seq_len=seq_len,
                                  chat_template=_IDEFICS_TEMPLATE)
    config = Idefics3Config(
        text_config=dict(model_type="llama", **_text(len(tokenizer), hidden, layers, max_position_embeddings=131072,
                                                     bos_token_id=ids["<|begin_of_text|>"],
                                                     eos_token_id=ids["<|end_of_text|>"],
                                                     pad_token_id=ids["<|finetune_right_pad_id|>"])),
        vision_config=dict(hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=1, num_attention_heads=4,
                           image_size=tile, patch_size=14),
        image_token_id=ids["<image>"], scale_factor=2)
    torch.manual_seed(seed)
    model = Idefics3ForConditionalGeneration(config).eval()
    return _save(Path(out_dir), model, processor, eos=[ids["<end_of_utterance>"], ids["<|end_of_text|>"]],
                 pad=ids["<|finetune_right_pad_id|>"], bos=ids["<|begin_of_text|>"])


_LLAVA_OV_TEMPLATE = _QWEN_TEMPLATE.replace("<|vision_start|><|image_pad|><|vision_end|>", "<image>\n")


def build_tiny_llava_onevision(out_dir: str | Path, hidden: int = 64, layers: int = 2, seed: int = 0) -> Path:
    """LLaVA-OneVision (Qwen2 text, SigLIP at 384 px, anyres up to 6x6 crops as released):
    729 image tokens per crop, the released grid pinpoints and normalisation."""
    import json

    import torch
    from transformers import LlavaOnevisionConfig, LlavaOnevisionForConditionalGeneration, LlavaOnevisionImageProcessor

    specials = QWEN_SPECIALS + ["<image>", "<video>"]
    tokenizer = _tokenizer(specials, eos_token="<|im_end|>", pad_token="<|endoftext|>", padding_side="left",
                           extra_special_tokens={"image_token": "<image>", "video_token": "<video>"})
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in specials}
    config = LlavaOnevisionConfig(
        text_config=dict(model_type="qwen2", **_text(len(tokenizer), hidden, layers, max_position_embeddings=32768,
                                                      bos_token_id=ids["<|endoftext|>"],
                                                      eos_token_id=ids["<|im_end|>"])),
        vision_config=dict(model_type="siglip_vision_model", hidden_size=hidden, intermediate_size=2 * hidden,
                           num_hidden_layers=1, num_attention_heads=4, image_size=384, patch_size=14),
        image_token_index=ids["<image>"], video_token_index=ids["<video>"])
    torch.manual_seed(seed)
    model = LlavaOnevisionForConditionalGeneration(config).eval()

    class Files:  # the processor's files: building it needs a video processor (torchvision)
        def save_pretrained(self, out: Path) -> None:
            tokenizer.save_pretrained(out)
            LlavaOnevisionImageProcessor().save_pretrained(out)
            (Path(out) / "chat_template.jinja").write_text(_LLAVA_OV_TEMPLATE, encoding="utf-8")
            (Path(out) / "processor_config.json").write_text(json.dumps({
                "processor_class": "LlavaOnevisionProcessor", "num_image_tokens": 729,
                "vision_feature_select_strategy": "full", "image_token": "<image>", "video_token": "<video>",
                "vision_aspect_ratio": "anyres_max_9"}))

    return _save(Path(out_dir), model, Files(), eos=[ids["<|im_end|>"], ids["<|endoftext|>"]],
                 pad=ids["<|endoftext|>"], bos=ids["<|endoftext|>"])


#: profile name -> (builder, folder name MMLongBench's load_LLM recognises)
TINY_BUILDERS = {
    "qwen2_vl": (lambda out, **kw: build_tiny_qwen_vl(out, version="2", **kw), "Qwen2-VL-tiny"),
    "qwen2_5_vl": (lambda out, **kw: build_tiny_qwen_vl(out, version="2.5", **kw), "Qwen2.5-VL-tiny"),
    "gemma3": (build_tiny_gemma3, "gemma-3-tiny"),
    "idefics": (build_tiny_idefics3, "Idefics3-tiny"),
    "llava_onevision": (build_tiny_llava_onevision, "llava-onevision-tiny"),
}


def build_tiny(profile: str, parent: str | Path, **kwargs) -> Path:
    """The tiny model of ``profile`` in ``parent/<a name its family's wrapper is picked by>``."""
    build, name = TINY_BUILDERS[profile]
    return build(Path(parent) / name, **kwargs)
