"""MMLongBench's own evaluation code (EdinburghNLP/MMLongBench @22b9f27), checked out of the fetched
repository at test time and imported unchanged: ``arguments.py``, ``eval.py`` (its ``run_test``),
``data.py``, ``utils.py``, ``vlm_model/`` (the model wrappers) and ``configs/``.

The repository is found at ``$MMLB_OFFICIAL_REPO`` (a git directory), else where the ``fetch`` tool
puts it; tests that need it are skipped without it. Nothing of it is copied into the project.
Stubbed, because they cannot load here: torchvision on a CPU machine (tests/no_torchvision.py),
the document-QA judge's key (an unused placeholder: no judge is called), and
``vlm_model/qwen2_with_prefill/`` (subclasses of the Qwen2-VL models that keep the logits of the
last position only, to save memory; they import ``Qwen2VLCausalLMOutputWithPast``, which
transformers 5 no longer has): the transformers classes they extend stand in, which changes no
input, config or generation argument; and ``transformers.modeling_attn_mask_utils`` (gone in
transformers 5), which ``idefics.py`` imports for its Idefics2 vision-batching patch only.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import types
from pathlib import Path

from tests.mirrors import show_or_skip

COMMIT = "22b9f27d311b60b37a94607b7dde92becc6fc2bb"
MIRROR = "EdinburghNLP+MMLongBench"  # where the fetch tool puts it: .mirror/<owner+repo>/repo above the checkout
FILES = ("arguments.py", "eval.py", "data.py", "utils.py", "utils_prompt.py", "vlm_model/__init__.py",
         "vlm_model/model_utils.py", "vlm_model/qwen2_vl.py", "vlm_model/gemma3.py", "vlm_model/idefics.py",
         "vlm_model/llava_onevision.py")
#: the API runners and wrappers (tests/test_api_parity.py): checkout(dest, extra=API_FILES)
API_FILES = ("eval_api.py", "eval_api_batch.py", "vlm_model/openai_model.py", "vlm_model/gemini.py",
             "vlm_model/vllm_models.py", "scripts/eval_gpt4_summ.py")
CONFIGS = ("vrag_all.yaml", "vh_all.yaml", "mm_niah_text_all.yaml", "mm_niah_image_all.yaml", "icl_all.yaml",
           "summ_all.yaml", "docqa_all.yaml", "text_docqa_all.yaml", "text_rag_all.yaml")


def show(name: str) -> bytes:
    """One file of the official repository at :data:`COMMIT` (skips the test without the repo)."""
    return show_or_skip("MMLB_OFFICIAL_REPO", MIRROR, COMMIT, name)


def checkout(dest: Path, extra: tuple[str, ...] = ()) -> Path:
    """The official files (and ``extra`` ones) written under ``dest`` and importable from it
    (``vlm_model``, ``data``). Modules of those common names that an earlier test left (a stand-in
    ``vlm_model``, another copy's ``utils``) are forgotten first, so these files are the ones imported."""
    tops = {name.split("/")[0].removesuffix(".py") for name in FILES + extra}
    for loaded in [m for m in sys.modules if m.split(".")[0] in tops]:
        del sys.modules[loaded]
    for name in FILES + extra + tuple(f"configs/{c}" for c in CONFIGS):
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        (dest / name).write_bytes(show(name))
    if str(dest) not in sys.path:
        sys.path.insert(0, str(dest))
    _stub_prefill_models()
    return dest


def unload(dest: Path) -> None:
    """Forget the checkout: off sys.path, and its modules (``data``, ``utils``, ``vlm_model`` ...)
    out of sys.modules, so no later test imports them by those common names."""
    if str(dest) in sys.path:
        sys.path.remove(str(dest))
    for name, module in list(sys.modules.items()):
        where = getattr(module, "__file__", None) or ""
        if where.startswith(str(dest)) or name.startswith("vlm_model"):
            del sys.modules[name]


def _stub_prefill_models() -> None:
    """``vlm_model.qwen2_with_prefill``: the transformers classes its subclasses extend."""
    import transformers

    package = types.ModuleType("vlm_model.qwen2_with_prefill")
    package.__path__ = []
    qwen2 = types.ModuleType("vlm_model.qwen2_with_prefill.qwen2vl")
    qwen2.Qwen2VLForLogitsReducedGeneration = transformers.Qwen2VLForConditionalGeneration
    qwen25 = types.ModuleType("vlm_model.qwen2_with_prefill.qwen2_5vl")
    qwen25.Qwen2_5_VLForLogitsReducedGeneration = transformers.Qwen2_5_VLForConditionalGeneration
    sys.modules.update({package.__name__: package, qwen2.__name__: qwen2, qwen25.__name__: qwen25})
    if importlib.util.find_spec("transformers.modeling_attn_mask_utils") is None:
        masks = types.ModuleType("transformers.modeling_attn_mask_utils")

        def _prepare_4d_attention_mask(*args, **kwargs):
            raise RuntimeError("stub: the Idefics2 vision-batching patch does not run in these tests")

        masks._prepare_4d_attention_mask = _prepare_4d_attention_mask
        sys.modules[masks.__name__] = masks


def parse_arguments(root: Path, argv: list[str]) -> argparse.Namespace:
    """The official ``parse_arguments()`` on ``argv`` (it reads sys.argv and the --config yaml)."""
    import arguments

    saved, cwd = sys.argv, os.getcwd()
    sys.argv = ["eval.py", *argv]
    try:
        os.chdir(root)
        return arguments.parse_arguments()
    finally:
        sys.argv = saved
        os.chdir(cwd)
