"""The architecture ARCHITECTURE.md draws is the one the imports have.

The contracts live in pyproject.toml (``[tool.importlinter]``): layers import only downwards
(cli > exports | runner > evaluation > dataset > sources > media | retrieval | official > core),
mmlbdata never imports builders, recipes never import each other, and no package has an import
circle. ``lint-imports`` checks them statically (lazy imports inside functions count too).
"""
from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_are_kept():
    done = subprocess.run([sys.executable, "-m", "importlinter.cli", "--config", str(ROOT / "pyproject.toml")],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "BROKEN" not in done.stdout


def test_every_layer_is_drawn_in_architecture_md():
    """The layers of the contract, top to bottom, are the layers ARCHITECTURE.md lists."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    [layers] = [c["layers"] for c in config["contracts"] if c["type"] == "layers"]
    drawn = (ROOT / "ARCHITECTURE.md").read_text()
    for layer in layers:
        for package in layer.split("|"):
            assert f"mmlbdata/{package.strip()}/" in drawn, package


def test_the_cli_entry_point_is_where_it_was():
    """``mmlb = mmlbdata.cli:main`` (pyproject) still names a callable."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from mmlbdata.cli import main
    assert callable(main)
