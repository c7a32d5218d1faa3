"""Old import paths of modules that moved into layer packages, kept working with a warning.

``import mmlbdata.tokens`` (or ``from mmlbdata.build import build_config``) still works: a finder
on ``sys.meta_path`` answers for the old name with the module at its new place, the very same
module object (so a ``monkeypatch`` of either name patches both), after a ``DeprecationWarning``
naming the new path. Nothing inside mmlbdata uses these names; remove an entry once its
deprecation period ends.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

#: old dotted name -> new dotted name
MOVED = {
    "mmlbdata.tokens": "mmlbdata.core.tokens",
    "mmlbdata.lengths": "mmlbdata.core.lengths",
    "mmlbdata.schema": "mmlbdata.core.schema",
    "mmlbdata.store": "mmlbdata.core.store",
    "mmlbdata.seeding": "mmlbdata.core.seeding",
    "mmlbdata.paths": "mmlbdata.core.paths",
    "mmlbdata.locks": "mmlbdata.core.locks",
    "mmlbdata.report": "mmlbdata.core.report",
    "mmlbdata.extras": "mmlbdata.core.extras",
    "mmlbdata.parallel": "mmlbdata.core.parallel",
    "mmlbdata.raycluster": "mmlbdata.core.raycluster",
    "mmlbdata.protocol": "mmlbdata.official.protocol",
    "mmlbdata.prompts": "mmlbdata.official.mmlongbench_prompts",
    "mmlbdata.readbench_prompts": "mmlbdata.official.readbench_prompts",
    "mmlbdata.evaluation.deviations": "mmlbdata.official.deviations",
    "mmlbdata.download": "mmlbdata.sources.download",
    "mmlbdata.archives": "mmlbdata.sources.archives",
    "mmlbdata.fetch": "mmlbdata.sources.fetch",
    "mmlbdata.registry": "mmlbdata.dataset.registry",
    "mmlbdata.build": "mmlbdata.dataset.build",
    "mmlbdata.ray_build": "mmlbdata.dataset.ray_build",
    "mmlbdata.writer": "mmlbdata.dataset.writer",
    "mmlbdata.stats": "mmlbdata.dataset.stats",
    "mmlbdata.card": "mmlbdata.dataset.card",
    "mmlbdata.hub": "mmlbdata.dataset.hub",
    "mmlbdata.paper_stats": "mmlbdata.dataset.paper_stats",
    "mmlbdata.demo": "mmlbdata.dataset.demo",
    "mmlbdata.docpack": "mmlbdata.dataset.docpack",
    "mmlbdata.prefetch": "mmlbdata.runner.prefetch",
    "mmlbdata.commands": "mmlbdata.cli",
    **{f"mmlbdata.commands.{name}": f"mmlbdata.cli.{name}" for name in (
        "_common", "build", "card", "demo", "eval", "export", "fetch", "list", "push", "run", "stats")},
}


class _Alias(importlib.abc.Loader):
    """Loads an old name as the module at its new place (imported once, shared by both names)."""

    def __init__(self, new: str):
        self.new = new

    def create_module(self, spec):
        module = importlib.import_module(self.new)
        self.own_spec = module.__spec__
        return module

    def exec_module(self, module) -> None:
        """Nothing to run (the module ran under its new name); importlib has just set the alias's
        spec on it, so its own is put back: it stays ``mmlbdata.core.tokens`` to itself."""
        module.__spec__ = self.own_spec

    # ``python -m <old name>`` (runpy asks the loader for the code and runs it as __main__)
    def _new_loader(self):
        return importlib.util.find_spec(self.new).loader

    def get_code(self, fullname):
        return self._new_loader().get_code(self.new)

    def get_source(self, fullname):
        return self._new_loader().get_source(self.new)

    def is_package(self, fullname) -> bool:
        return self._new_loader().is_package(self.new)


class MovedModuleFinder(importlib.abc.MetaPathFinder):
    """Finds the old names in :data:`MOVED` (and only those)."""

    def find_spec(self, fullname, path=None, target=None):
        new = MOVED.get(fullname)
        if new is None:
            if fullname.startswith("mmlbdata.commands."):  # not a second copy of a cli/ module
                raise ModuleNotFoundError(f"No module named {fullname!r} (mmlbdata.commands is now mmlbdata.cli)",
                                          name=fullname)
            return None
        # stacklevel 2: the import statement (warnings skips importlib's own frames)
        warnings.warn(f"{fullname} moved to {new}; import it from there (the old path will be removed)",
                      DeprecationWarning, stacklevel=2)
        spec = importlib.util.spec_from_loader(fullname, _Alias(new), is_package=fullname == "mmlbdata.commands")
        return spec


def install() -> None:
    """Put the finder first on ``sys.meta_path``, once. First, because an old package name
    (``mmlbdata.commands``) shares its new package's folder: the standard finder would load a
    second copy of ``cli/build.py`` as ``mmlbdata.commands.build``. It answers for old names only."""
    if not any(isinstance(finder, MovedModuleFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, MovedModuleFinder())
