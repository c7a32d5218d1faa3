"""Model profiles: what MMLongBench's own wrapper (``vlm_model/<family>.py`` @22b9f27) does for a
model family, done by the transformers backend so a run feeds the model the paper's inputs.

A profile is picked from the model name as ``vlm_model/__init__.py``'s ``load_LLM`` picks a
wrapper (the same substrings, in the same order), or named with ``mmlb run --profile``. It sets:

- the processor: ``use_fast=True``, family options (Idefics3 ``do_resize=False``,
  ``do_image_splitting``), left padding and left truncation, pad = EOS when there is none;
- the model config: Qwen2.5-VL's ``max_position_embeddings = 32768`` and, with ``use_yarn``,
  YaRN rope scaling (factor 4 from 32,768 positions, mrope sections [16, 24, 24]);
- the messages: the prompt split at each ``<image>`` (empty text pieces kept), the answer prefix
  as an assistant turn continued with ``continue_final_message=True``, in the family's form;
- the vision preprocessing: how images are opened, converted and resized before the processor
  (qwen-vl-utils ``process_vision_info`` for Qwen, transformers ``load_image`` for Idefics and
  Gemma 3, ``image_resize`` where the wrapper applies it);
- the generation arguments: ``generation_max_length`` new tokens, at least ``generation_min_length``,
  greedy unless ``do_sample``, stop ids = the generation config's EOS ids (+ newline tokens with
  ``stop_newline``); the seed ``eval.py`` sets before each dataset (``set_seed(args.seed)``, 42).

Requests are prepared one at a time, as the official DataLoader does (batch size 1). Families
whose wrapper is not reproduced here run on the generic path, and the run says so.
"""
from __future__ import annotations

import io
import re
from dataclasses import dataclass, field
from typing import Optional

#: the newline pieces the wrappers add to the stop ids with --stop_newline
NEWLINE_TOKENS = ("\n", "Ċ", "ĊĊ", "<0x0A>")

#: load_LLM's name tests in its order (lower-cased last path part): first match wins; None: the
#: family's wrapper is not reproduced here (the generic path runs)
SELECTION = (
    (("qwen2-vl", "qwen2.5-vl", "qvq-"), "qwen_vl"),
    (("qwen-vl",), None),
    (("llama-3.2",), None),
    (("deepseek-vl2",), None),
    (("idefics",), "idefics"),
    (("phi-4",), None),
    (("phi-3",), None),
    (("v2pe",), None),
    (("internvl",), None),
    (("pixtral",), None),
    (("nvila",), None),
    (("llava-onevision",), "llava_onevision"),
    (("gemma-3",), "gemma3"),
    (("minicpm",), None),
    (("ovis2",), None),
    (("qwen2.5",), None),  # a text-only Qwen2.5 LLM (text_only_model.py)
    (("mplug-owl3",), None),
)
#: the official wrapper file each family name of SELECTION stands for
WRAPPERS = {"qwen2-vl": "qwen2_vl.py", "qwen-vl": "qwen_vl.py", "llama-3.2": "mllama.py",
            "deepseek-vl2": "deepseek_vl2.py", "idefics": "idefics.py", "phi-4": "phi4.py", "phi-3": "phi3.py",
            "v2pe": "internv2pe.py", "internvl": "internvl.py", "pixtral": "pixtral.py", "nvila": "nvila.py",
            "llava-onevision": "llava_onevision.py", "gemma-3": "gemma3.py", "minicpm": "minicpm.py",
            "ovis2": "ovis2.py", "qwen2.5": "text_only_model.py", "mplug-owl3": "mplug_owl3.py"}


@dataclass(frozen=True)
class ProfileOptions:
    """The official command line's model options (arguments.py), as ``mmlb run`` passes them."""
    use_yarn: bool = False
    image_resize: Optional[float] = None
    do_image_splitting: Optional[bool] = None
    stop_newline: bool = False
    do_sample: bool = False
    temperature: float = 1.0
    top_p: float = 1.0
    #: --generation_min_length: min_new_tokens of every generate call
    generation_min_length: int = 0
    #: --seed: eval.py's run_test calls set_seed(args.seed) before each dataset (HFBackend: each config)
    seed: int = 42


@dataclass
class Profile:
    """One family's settings; subclasses override the steps that differ."""
    name: str
    wrapper: str
    options: ProfileOptions = field(default_factory=ProfileOptions)
    model_name: str = ""
    #: the assistant turn: a plain string (Qwen) or a list with one text item (Gemma 3, Idefics)
    assistant_as_list: bool = True
    #: the image content item: {"type": "image"} plus, when set, the image under this key
    image_key: Optional[str] = None
    #: the loaded model's dtype (HFBackend sets it; LLaVA-OneVision casts its inputs to it)
    dtype: object = None

    # -- loading ---------------------------------------------------------------------------
    def processor_kwargs(self) -> dict:
        return {"use_fast": True}

    def prepare_processor(self, processor) -> None:
        tokenizer = processor.tokenizer
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        tokenizer.truncation_side = "left"
        tokenizer.padding_side = "left"

    def prepare_config(self, config) -> None:
        """Config changes made before the weights load (none by default)."""

    # -- one request -------------------------------------------------------------------------
    def messages(self, content: list[dict], images: list, prefix: str,
                 turns: Optional[list[dict]] = None) -> list[dict]:
        """The official ``format_chat``: text pieces and images in prompt order (an empty text
        piece before, between and after images, as ``re.split('(<image>)', ...)`` leaves them),
        then the answer prefix as the assistant's turn. ``turns``: a multi-turn chat (a MemLens
        row, runner/conversation.py) sent as its turns instead (:meth:`conversation`)."""
        if turns is not None:
            return self.conversation(turns, images, prefix)
        items: list[dict] = []
        for item in content:
            if item["type"] == "image":
                if not items or items[-1]["type"] == "image":
                    items.append({"type": "text", "text": ""})
                image = {"type": "image"}
                if self.image_key:
                    image[self.image_key] = images[item["index"]]
                items.append(image)
            elif items and items[-1]["type"] == "text":
                items[-1] = {"type": "text", "text": items[-1]["text"] + item["text"]}
            else:
                items.append({"type": "text", "text": item["text"]})
        if not items or items[-1]["type"] == "image":
            items.append({"type": "text", "text": ""})
        answer = [{"type": "text", "text": prefix}] if self.assistant_as_list else prefix
        return [{"role": "user", "content": items}, {"role": "assistant", "content": answer}]

    def conversation(self, turns: list[dict], images: list, prefix: str) -> list[dict]:
        """A chat's turns in the family's form, each turn's text and images in order (``format_chat``
        shapes one MMLongBench prompt, not a conversation), then the answer prefix as the
        assistant's turn, continued as for a single prompt."""
        def item(part: dict) -> dict:
            if part["type"] != "image":
                return {"type": "text", "text": part["text"]}
            return {"type": "image", self.image_key: images[part["index"]]} if self.image_key else {"type": "image"}

        chat = [{"role": turn["role"], "content": [item(part) for part in turn["content"]]} for turn in turns]
        answer = [{"type": "text", "text": prefix}] if self.assistant_as_list else prefix
        return chat + [{"role": "assistant", "content": answer}]

    def open_images(self, values: list) -> list:
        """The images as PIL objects, as the wrapper opens its image files (subclasses convert)."""
        from PIL import Image

        from mmlbdata.runner.chat import image_bytes

        return [Image.open(io.BytesIO(image_bytes(v))) for v in values]

    def inputs(self, processor, content: list[dict], images: list, prefix: str,
               turns: Optional[list[dict]] = None):
        raise NotImplementedError

    # -- generation --------------------------------------------------------------------------
    def stop_token_ids(self, generation_config, tokenizer) -> list[int]:
        """The generation config's EOS ids, plus the newline tokens with ``stop_newline``."""
        eos = generation_config.eos_token_id
        ids = list(eos) if isinstance(eos, (list, tuple)) else [eos]
        if self.options.stop_newline:
            newline = {tokenizer.convert_tokens_to_ids(t) for t in NEWLINE_TOKENS}
            ids = sorted(i for i in set(ids) | newline if i is not None and i != tokenizer.unk_token_id)
        return ids

    def generate_kwargs(self, max_new_tokens: int, stop_ids: list[int], pad_token_id: int) -> dict:
        sample = self.options.do_sample
        return {"max_new_tokens": max_new_tokens, "min_new_tokens": self.options.generation_min_length,
                "do_sample": sample,
                "temperature": self.options.temperature if sample else None,
                "top_p": self.options.top_p if sample else None, "top_k": None,
                "eos_token_id": stop_ids, "pad_token_id": pad_token_id,
                "return_dict_in_generate": True, "output_scores": False}

    def describe(self) -> str:
        extra = ", YaRN" if self.options.use_yarn else ""
        return f"{self.name} (MMLongBench vlm_model/{self.wrapper} @22b9f27{extra})"


def resize_by(images: list, factor: float) -> list:
    """``--image_resize``: each side times ``factor`` (truncated), Lanczos."""
    from PIL import Image

    return [img.resize((int(img.size[0] * factor), int(img.size[1] * factor)), Image.Resampling.LANCZOS)
            for img in images]


@dataclass
class QwenVLProfile(Profile):
    """qwen2_vl.py: Qwen2-VL, Qwen2.5-VL, QVQ."""
    assistant_as_list: bool = False
    image_key: Optional[str] = "image"

    def prepare_config(self, config) -> None:
        """Qwen2.5: 32,768 positions; YaRN with ``use_yarn``. The wrapper sets both on the config
        object, which transformers 4.49 (its pin) read flat; transformers 5 reads them from
        ``text_config``, so they are set there (``rope_parameters``: the same YaRN values)."""
        text = getattr(config, "text_config", config)
        if self.name == "qwen2_5_vl":
            text.max_position_embeddings = 32768
        if self.options.use_yarn:
            theta = (text.rope_parameters or {}).get("rope_theta")
            text.rope_parameters = {"rope_type": "yarn", "mrope_section": [16, 24, 24], "factor": 4.0,
                                    "original_max_position_embeddings": 32768, "rope_theta": theta}

    def inputs(self, processor, content: list[dict], images: list, prefix: str,
               turns: Optional[list[dict]] = None):
        from qwen_vl_utils import process_vision_info

        messages = self.messages(content, self.open_images(images), prefix, turns)
        text = processor.apply_chat_template(messages, tokenize=False, continue_final_message=True)
        image_inputs, video_inputs = process_vision_info(messages)
        return processor(text=[text], images=image_inputs, videos=video_inputs, padding=True, return_tensors="pt")


@dataclass
class IdeficsProfile(Profile):
    """idefics.py: Idefics2, Idefics3, Mantis (Idefics3 without the processor's up-resize)."""

    def processor_kwargs(self) -> dict:
        kwargs = super().processor_kwargs()
        if self.options.do_image_splitting is not None:
            kwargs["do_image_splitting"] = self.options.do_image_splitting
        if "idefics3" in self.model_name.lower():
            kwargs["do_resize"] = False
        return kwargs

    def inputs(self, processor, content: list[dict], images: list, prefix: str,
               turns: Optional[list[dict]] = None):
        from transformers.image_utils import load_image

        text = processor.apply_chat_template(self.messages(content, images, prefix, turns), tokenize=False,
                                             continue_final_message=True)
        pictures = [load_image(img) for img in self.open_images(images)]
        if self.options.image_resize is not None:
            pictures = resize_by(pictures, self.options.image_resize)
        return processor(text=text, images=pictures, return_tensors="pt")


@dataclass
class Gemma3Profile(Profile):
    """gemma3.py: the chat template tokenises, images inside the messages. The wrapper puts each
    image's path there, which the processor opens with transformers' ``load_image``: EXIF orientation
    applied, ``convert("RGB")`` (an alpha channel dropped, the stored colours kept). A PIL image
    there is used as it is, so the profile opens the images the same way first."""
    image_key: Optional[str] = "image"

    def open_images(self, values: list) -> list:
        from transformers.image_utils import load_image

        return [load_image(img) for img in super().open_images(values)]

    def inputs(self, processor, content: list[dict], images: list, prefix: str,
               turns: Optional[list[dict]] = None):
        messages = self.messages(content, self.open_images(images), prefix, turns)
        return processor.apply_chat_template(messages, tokenize=True, continue_final_message=True,
                                             return_dict=True, return_tensors="pt")


@dataclass
class LlavaOnevisionProfile(Profile):
    """llava_onevision.py: at most 4 crops of 384 px per image (4 x image_resize^2 with
    ``--image-resize``), images converted to RGB as opened, inputs cast to the model's dtype."""

    def prepare_processor(self, processor) -> None:
        super().prepare_processor(processor)
        resize = self.options.image_resize
        crops = max(int(4 * resize * resize), 1) if resize is not None else 4
        grid = processor.image_processor.image_grid_pinpoints
        processor.image_processor.image_grid_pinpoints = [[w, h] for w, h in grid if (w // 384) * (h // 384) <= crops]

    def inputs(self, processor, content: list[dict], images: list, prefix: str,
               turns: Optional[list[dict]] = None):
        text = processor.apply_chat_template(self.messages(content, images, prefix, turns), tokenize=False,
                                             continue_final_message=True)
        pictures = [img.convert("RGB") for img in self.open_images(images)]
        inputs = processor(text=text, images=pictures, padding=True, return_tensors="pt")
        return inputs.to(self.dtype) if self.dtype is not None else inputs


PROFILES = {"qwen2_vl": (QwenVLProfile, "qwen2_vl.py"), "qwen2_5_vl": (QwenVLProfile, "qwen2_vl.py"),
            "idefics": (IdeficsProfile, "idefics.py"), "gemma3": (Gemma3Profile, "gemma3.py"),
            "llava_onevision": (LlavaOnevisionProfile, "llava_onevision.py")}


def official_family(model_name: str) -> Optional[str]:
    """The first of load_LLM's name tests that ``model_name`` passes (None: no wrapper)."""
    lower = model_name.rstrip("/").lower().split("/")[-1]
    for needles, _ in SELECTION:
        for needle in needles:
            if needle in lower:
                return needles[0]
    return None


def profile_name_for(model_name: str) -> Optional[str]:
    """The profile load_LLM's choice maps to, or None (generic path)."""
    family = official_family(model_name)
    name = dict((needles[0], profile) for needles, profile in SELECTION).get(family) if family else None
    if name == "qwen_vl":  # the wrapper tells Qwen2.5 apart by "Qwen2.5" in the name
        return "qwen2_5_vl" if re.search(r"qwen2\.5", model_name, re.IGNORECASE) else "qwen2_vl"
    return name


def make_profile(name: str, model_name: str, options: ProfileOptions | None = None) -> Profile:
    if name not in PROFILES:
        raise ValueError(f"unknown profile {name!r} (known: {', '.join(sorted(PROFILES))}, generic)")
    cls, wrapper = PROFILES[name]
    return cls(name=name, wrapper=wrapper, options=options or ProfileOptions(), model_name=model_name)


def resolve_profile(model_name: str, requested: str = "auto",
                    options: ProfileOptions | None = None) -> tuple[Optional[Profile], str]:
    """(profile or None, a line saying what runs): ``requested`` is a profile name, ``generic``
    or ``auto`` (picked from the model name)."""
    if requested == "generic":
        return None, "generic (asked for with --model-profile generic)"
    if requested != "auto":
        return make_profile(requested, model_name, options), ""
    name = profile_name_for(model_name)
    if name:
        return make_profile(name, model_name, options), ""
    family = official_family(model_name)
    if family:
        return None, (f"generic: MMLongBench runs this model with vlm_model/{WRAPPERS[family]}, which this "
                      f"runner does not reproduce (see docs/runner.md)")
    return None, "generic (no MMLongBench wrapper matches the model name)"
