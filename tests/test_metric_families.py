"""The metric registry and its families: one explicit list, no import circle between them."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import mmlbdata.evaluation.metrics as metrics_pkg
from mmlbdata.evaluation.metrics import families, metric_names

METRICS_DIR = Path(metrics_pkg.__file__).parent
PACKAGE = "mmlbdata.evaluation.metrics"


def _imported_modules(path: Path, package: str) -> set[str]:
    """Absolute names of every module ``path`` imports (function-level imports included)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            parts = package.split(".")
            base = parts[:len(parts) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            names.update(f"{module}.{alias.name}" for alias in node.names)
            names.add(module)
    return names


def _sibling_modules() -> set[str]:
    return {f"{PACKAGE}.{p.stem}" for p in METRICS_DIR.glob("*.py") if p.stem != "__init__"}


def test_registry_imports_no_metric_family():
    imported = _imported_modules(METRICS_DIR / "registry.py", PACKAGE)
    assert not imported & _sibling_modules(), "registry.py must not import a metric module (they import it)"


def test_every_registering_module_is_in_the_families_list():
    listed = {module.__name__ for module in families.FAMILIES}
    registering = {f"{PACKAGE}.{p.stem}" for p in METRICS_DIR.glob("*.py")
                   if p.stem != "registry" and "\n@register(" in p.read_text(encoding="utf-8")}
    assert registering and registering == listed


def test_a_lookup_through_the_registry_module_alone_sees_every_metric():
    """A fresh interpreter importing only ``registry`` (as the lmms-eval hooks do) finds them all."""
    code = ("from mmlbdata.evaluation.metrics.registry import metric_names, get_metric\n"
            "print(','.join(metric_names())); get_metric('readbench_mc')")
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert shown.strip().split(",") == metric_names()
