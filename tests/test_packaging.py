"""The wheel is enough: built with ``pip wheel``, installed into a fresh venv outside the checkout,
``mmlb build`` and ``mmlb card`` work there (the card templates are package data)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

CHECKOUT = Path(__file__).resolve().parents[1]


def _run(command: list, cwd: Path, env: dict) -> str:
    done = subprocess.run([str(c) for c in command], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{command}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def _build_wheel(tmp_path: Path) -> Path:
    """``pip wheel --no-deps`` of a copy of the checkout (no build/ or egg-info left in it)."""
    source = tmp_path / "source"
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "build", "dist", ".git")
    for name in ("mmlbdata", "mmlb_builders"):
        shutil.copytree(CHECKOUT / name, source / name, ignore=ignore)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(CHECKOUT / name, source / name)
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
          tmp_path / "wheels", source], tmp_path, dict(os.environ))
    return next((tmp_path / "wheels").glob("mmlbdata-*.whl"))


def _fresh_venv(tmp_path: Path, wheel: Path) -> Path:
    """A venv holding the wheel; the dependencies come from this interpreter's site-packages
    through a plain ``.pth`` path (not processed as a site dir, so the editable checkout the
    dev environment may hold is not visible there)."""
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", venv], tmp_path, dict(os.environ))
    python = venv / "bin" / "python"
    site = Path(_run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], tmp_path,
                     dict(os.environ)).strip())
    (site / "_dev_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _run([sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "-q", wheel], tmp_path,
         dict(os.environ))
    return venv


def test_installed_wheel_builds_and_renders_a_card_outside_the_checkout(tmp_path, coco_mini, tokenizer_path):
    wheel = _build_wheel(tmp_path)
    names = zipfile.ZipFile(wheel).namelist()
    assert {"mmlbdata/dataset/cards/_base.md.jinja", "mmlbdata/dataset/cards/mmlongbench.md.jinja",
            "mmlbdata/evaluation/papers/mmlongbench.yaml", "mmlbdata/evaluation/papers/readbench.yaml"} <= set(names)
    venv = _fresh_venv(tmp_path, wheel)
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MMLB_CARDS_DIR", "VIRTUAL_ENV")}
    where = _run([venv / "bin" / "python", "-c", "import mmlbdata, mmlb_builders; print(mmlbdata.__file__); "
                  "print(mmlb_builders.__file__)"], work, env).split()
    assert all(Path(p).is_relative_to(venv) for p in where), where
    _run([venv / "bin" / "mmlb", "build", "vh_single_8k", "--source", f"coco={coco_mini}", "--out", "built",
          "--limit", "1", "--tokenizer", tokenizer_path, "--cache-dir", "cache", "--no-progress"], work, env)
    _run([venv / "bin" / "mmlb", "card", "built", "--no-plot"], work, env)
    card = (work / "built" / "README.md").read_text()
    assert "pretty_name: MMLongBench" in card and "`vh_single_8k`" in card
