"""An exported lmms-eval task read as lmms-eval reads it (its YAML with ``include`` merged and the
``!function`` hooks of its ``utils.py`` resolved), so tests call the hooks an lmms-eval run calls."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

import yaml

from mmlbdata.core.paths import resolve_inside


class _TaskLoader(yaml.SafeLoader):
    """Reads lmms-eval YAML: ``!function module.name`` resolved against the task folder."""


def load_task_yaml(path: Path, *, task_root: Optional[Path] = None, _seen: tuple = ()) -> dict:
    """An exported task's YAML with its ``include`` merged and ``!function`` hooks resolved,
    as lmms-eval reads it.

    A task folder may come from elsewhere, and a ``!function`` hook is code that runs: every
    ``include`` and hook file must lie inside ``task_root`` (default: the YAML's folder), and an
    include cycle is an error (UnsafePathError / ValueError naming the file).
    """
    import importlib.util

    path = Path(path)
    task_root = Path(task_root) if task_root is not None else path.parent
    if path.resolve() in _seen:
        raise ValueError(f"{path}: include cycle ({' -> '.join(str(p) for p in _seen)})")

    def function(loader: yaml.Loader, node: yaml.Node):
        module_name, _, attr = loader.construct_scalar(node).rpartition(".")
        source = resolve_inside(task_root, os.path.relpath(path.parent / f"{module_name}.py", task_root),
                                what=f"!function module in {path}")
        spec = importlib.util.spec_from_file_location(f"_mmlb_task_{module_name}", source)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return getattr(module, attr)

    loader = type("Loader", (_TaskLoader,), {})
    loader.add_constructor("!function", function)
    data = yaml.load(path.read_text(), Loader=loader)
    if "include" in data:
        include = resolve_inside(task_root, os.path.relpath(path.parent / str(data.pop("include")), task_root),
                                 what=f"include of {path}")
        base = load_task_yaml(include, task_root=task_root, _seen=_seen + (path.resolve(),))
        data = {**base, **data}
    return data
