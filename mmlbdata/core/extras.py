"""One way to import an optional dependency and say which extra provides it.

Heavy or optional libraries (torch, transformers, vllm, ray, matplotlib, av, faiss, whisper,
rouge-score, openai) are imported inside the function that needs them. When one is missing, every
command says the same thing in one line: what needs it and the ``pip install`` that fixes it;
``mmlb`` prints that line and exits 2 instead of a traceback.
"""
from __future__ import annotations

import importlib
from types import ModuleType


class MissingExtraError(ImportError):
    """An optional dependency is not installed; the message names the extra to install."""

    def __init__(self, module: str, extra: str, feature: str, install: str = ""):
        self.module, self.extra, self.feature = module, extra, feature
        self.install = install or f"pip install 'mmlbdata[{extra}]'"
        super().__init__(f"{feature} needs {module!r}, which is not installed: {self.install}")


def require(module: str, extra: str, feature: str, install: str = "") -> ModuleType:
    """Import ``module`` or raise :class:`MissingExtraError` naming ``extra`` and ``feature``.

    ``require("matplotlib.pyplot", "eval", "the score plot")``. A module that is installed but
    fails to import for another reason keeps its own error (that is a broken install, not a
    missing extra). ``install`` replaces the suggested command where no extra provides the module
    (vLLM is installed by the user, matched to their CUDA).
    """
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as err:
        top = module.split(".")[0]
        if err.name and err.name.split(".")[0] != top:
            raise
        raise MissingExtraError(module, extra, feature, install) from err
