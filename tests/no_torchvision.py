"""What Qwen2-VL needs of torchvision on a CPU machine without it, stood in for images only.

PyPI's torchvision wheels are CUDA builds that do not load beside the CPU torch of this project's
CI. Two things need it that images never use: transformers 5 builds every Qwen2-VL processor with
a video processor (``Qwen2VLVideoProcessor`` requires torchvision) and qwen-vl-utils imports
torchvision at module level for its video readers. :func:`install` (a no-op where torchvision
imports) gives the processor a placeholder video processor and qwen-vl-utils a placeholder module
for the length of its import; image preprocessing then runs the packages' own code unchanged.
"""
from __future__ import annotations

import importlib
import sys
import types

from transformers.utils import PushToHubMixin


def torchvision_loads() -> bool:
    try:
        import torchvision  # noqa: F401
    except Exception:  # noqa: BLE001 - a CUDA wheel raises RuntimeError, not ImportError
        sys.modules.pop("torchvision", None)
        return False
    return True


class NoVideoProcessor(PushToHubMixin):
    """Stands in for the video processor: serialises to nothing, fails if a video is processed."""

    def __init__(self, *args, **kwargs):
        pass

    def to_dict(self) -> dict:
        return {}

    def __call__(self, *args, **kwargs):
        raise RuntimeError("videos need torchvision, which is not installed here")


class _AutoNoVideo:
    """``AutoVideoProcessor`` where it cannot load: every folder's video processor is none."""

    @classmethod
    def from_pretrained(cls, *args, **kwargs) -> NoVideoProcessor:
        return NoVideoProcessor()


def _placeholder_torchvision() -> types.ModuleType:
    module = types.ModuleType("torchvision")
    module.__version__ = "0.0.0"
    module.io = types.ModuleType("torchvision.io")
    module.transforms = types.ModuleType("torchvision.transforms")
    module.transforms.InterpolationMode = types.SimpleNamespace(BICUBIC="bicubic")
    return module


def install() -> None:
    """Make Qwen2-VL processors and qwen-vl-utils importable for images without torchvision."""
    if torchvision_loads():
        return
    import transformers.processing_utils as processing_utils
    video_processing_auto = importlib.import_module("transformers.models.auto.video_processing_auto")

    mixin = processing_utils.ProcessorMixin
    if not getattr(mixin.check_argument_for_proper_class, "_no_video", False):
        check = mixin.check_argument_for_proper_class

        def check_argument(self, name, arg):
            return NoVideoProcessor if isinstance(arg, NoVideoProcessor) else check(self, name, arg)

        check_argument._no_video = True
        mixin.check_argument_for_proper_class = check_argument
        video_processing_auto.AutoVideoProcessor.from_pretrained = _AutoNoVideo.from_pretrained
    if "qwen_vl_utils" not in sys.modules:
        placeholder = _placeholder_torchvision()
        sys.modules.update({"torchvision": placeholder, "torchvision.io": placeholder.io,
                            "torchvision.transforms": placeholder.transforms})
        try:
            importlib.import_module("qwen_vl_utils")
        finally:
            for name in ("torchvision", "torchvision.io", "torchvision.transforms"):
                sys.modules.pop(name, None)
