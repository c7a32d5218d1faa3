"""The architecture ARCHITECTURE.md draws is the one the imports have.

The contracts live in pyproject.toml (``[tool.importlinter]``): layers import only downwards
(cli > exports | runner > evaluation > dataset > sources > media | retrieval | official > core),
mmlbdata never imports builders, recipes never import each other, and no package has an import
circle. ``lint-imports`` checks them statically (lazy imports inside functions count too).
"""
from __future__ import annotations

import os
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


@pytest.mark.parametrize("old, new, name", [
    ("mmlbdata.tokens", "mmlbdata.core.tokens", "TokenCounter"),
    ("mmlbdata.build", "mmlbdata.dataset.build", "build_config"),
    ("mmlbdata.commands.build", "mmlbdata.cli.build", "register"),
    ("mmlbdata.evaluation.deviations", "mmlbdata.official.deviations", "render_markdown"),
])
def test_old_import_paths_warn_and_give_the_same_module(old, new, name):
    """Users' imports from before the layer packages keep working (one module object, a warning)."""
    import importlib

    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=new.replace(".", r"\.")):
        module = importlib.import_module(old)
    assert module is importlib.import_module(new)
    assert getattr(module, name) is getattr(importlib.import_module(new), name)
    assert module.__spec__.name == new  # the module still knows its own (new) name


def test_the_cli_entry_point_is_where_it_was():
    """``mmlb = mmlbdata.cli:main`` (pyproject) still names a callable."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from mmlbdata.cli import main
    assert callable(main)


def _python(code_or_args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, *code_or_args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=120)


def test_the_warning_points_at_the_users_import_and_shows_by_default(tmp_path):
    """Python shows a DeprecationWarning by default only when it is attributed to __main__: it must
    name the user's file and line, not importlib's or ours."""
    script = tmp_path / "user_script.py"
    script.write_text("x = 1\nimport mmlbdata.tokens\n")
    done = _python([str(script)], tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"{script}:2: DeprecationWarning: mmlbdata.tokens moved to mmlbdata.core.tokens" in done.stderr


def test_python_dash_m_runs_a_moved_module(tmp_path):
    """``python -m mmlbdata.evaluation.deviations`` (documented before the move) still prints the table."""
    done = _python(["-m", "mmlbdata.evaluation.deviations"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("| metric | input | official | default | why |")


def test_an_unlisted_name_under_the_old_cli_package_is_not_a_second_copy():
    """``mmlbdata.commands`` shares cli/'s folder: a name the table does not list is refused rather
    than loaded again under a second name."""
    with pytest.raises(ModuleNotFoundError, match="mmlbdata.cli"):
        import mmlbdata.commands.__main__  # noqa: F401


@pytest.mark.parametrize("old_form", [{"executor": "ray"}, {"executor": "local"}, {"ray_address": "auto"}])
def test_the_old_executor_spelling_names_the_new_one(tmp_path, old_form):
    """The build is handed its executor (it imports none); the string form fails at once, saying how."""
    from mmlbdata.dataset.build import build_configs

    with pytest.raises(TypeError, match=r"RayExecutor\(address\)"):
        build_configs(["vh_single_8k"], {}, tmp_path / "out", **old_form)
    assert not (tmp_path / "out").exists()
