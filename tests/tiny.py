"""A tiny randomly initialised LLaVA-style VLM built offline, to exercise the real runner
code path (processor, chat template, image features, generate) on CPU in tests and on a
GPU in the smoke script. Its outputs are noise; its shapes and plumbing are real.
"""
from __future__ import annotations

from pathlib import Path

_CORPUS = [
    "Answer: the quick brown fox jumps over the lazy dog.",
    "Question: what is in the image? yes no A B C D E 0 1 2 3 4 5 6 7 8 9",
    "Summary: label: The report finds that the needle is in image 2, row 1, column 3.",
]
_SPECIALS = ["<pad>", "<s>", "</s>", "<image>", "<|user|>", "<|assistant|>", "<|end|>"]
_TEMPLATE = (
    "{% for message in messages %}<|{{ message['role'] }}|>\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for c in message['content'] %}"
    "{% if c['type'] == 'image' %}<image>{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<|end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)


def build_tiny_vlm(out_dir: str | Path, hidden: int = 32, layers: int = 2, image_size: int = 28,
                   seed: int = 0) -> Path:
    """Write a LLaVA config/weights (CLIP vision tower, Llama text model) and a processor
    (byte-level BPE tokenizer trained on a few sentences, CLIP image processor) to
    ``out_dir``; loadable with ``AutoModelForImageTextToText``/``AutoProcessor``."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import (
        CLIPImageProcessor,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
        PreTrainedTokenizerFast,
    )

    out_dir = Path(out_dir)
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=_SPECIALS, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(_CORPUS, trainer)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>",
                                        pad_token="<pad>", padding_side="left",
                                        extra_special_tokens={"image_token": "<image>"})
    image_processor = CLIPImageProcessor(size={"shortest_edge": image_size},
                                         crop_size={"height": image_size, "width": image_size})
    processor = LlavaProcessor(image_processor=image_processor, tokenizer=tokenizer, chat_template=_TEMPLATE,
                               patch_size=14, vision_feature_select_strategy="default", image_token="<image>",
                               num_additional_image_tokens=1)
    config = LlavaConfig(
        text_config=dict(model_type="llama", vocab_size=tok.get_vocab_size(), hidden_size=hidden,
                         intermediate_size=2 * hidden, num_hidden_layers=layers, num_attention_heads=4,
                         num_key_value_heads=2, max_position_embeddings=32768,
                         bos_token_id=1, eos_token_id=2, pad_token_id=0),
        vision_config=dict(model_type="clip_vision_model", hidden_size=hidden, intermediate_size=2 * hidden,
                           num_hidden_layers=1, num_attention_heads=2, image_size=image_size, patch_size=14,
                           projection_dim=hidden),
        image_token_id=tokenizer.convert_tokens_to_ids("<image>"), vision_feature_layer=-1,
        vision_feature_select_strategy="default", projector_hidden_act="gelu")
    torch.manual_seed(seed)
    model = LlavaForConditionalGeneration(config).eval()
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir)
    processor.save_pretrained(out_dir)
    return out_dir
