"""Git mirrors of the benchmarks' and harnesses' own repositories, for tests that run their code
unchanged at a pinned commit (``git show COMMIT:file``; nothing of it is kept in this repository)."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Optional


def mirror_git(env: str, name: str) -> Optional[Path]:
    """The git directory of ``name`` (``owner+repo``): ``$env``, else a ``.mirror/<name>/repo`` in
    a folder above this checkout; None when there is none (the test then skips)."""
    value = os.environ.get(env)
    if value:
        return Path(value) if Path(value).is_dir() else None
    for folder in Path(__file__).resolve().parents:
        candidate = folder / ".mirror" / name / "repo"
        if candidate.is_dir():
            return candidate
    return None


def git_show(git_dir: Path, commit: str, path: str) -> bytes:
    """One file of the mirror at ``commit``, unchanged."""
    return subprocess.run(["git", f"--git-dir={git_dir}", "show", f"{commit}:{path}"], check=True,
                          capture_output=True).stdout


def show_or_skip(env: str, name: str, commit: str, path: str) -> bytes:
    """One file of mirror ``name`` at ``commit``; the calling test is skipped, with where to look,
    when the mirror or the file is not there."""
    import pytest

    git_dir = mirror_git(env, name)
    if git_dir is None:
        pytest.skip(f"{name} is not fetched (no .mirror/{name}/repo above the checkout; set {env})")
    try:
        return git_show(git_dir, commit, path)
    except (subprocess.CalledProcessError, FileNotFoundError) as err:
        pytest.skip(f"cannot read {path} at {commit[:7]} from {git_dir}: {err}")
