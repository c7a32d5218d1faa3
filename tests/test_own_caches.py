"""The tests never depend on the caller's Hugging Face caches (conftest's ``_own_caches``).

On a cluster with a small home, ``HF_HOME``, ``HF_HUB_CACHE`` and ``HF_DATASETS_CACHE`` are
commonly exported to one shared folder. ``HF_DATASETS_CACHE`` and ``HF_HUB_CACHE`` win over the
``HF_HOME`` a loopback-Hub client is given, so files an earlier test (or an earlier run) downloaded
from a repository of the same name were served from the shared cache, and the requests a test
expects never reached its server.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# a loopback-Hub test that counts the requests its server receives
HUB_TESTS = ["tests/test_partitions.py::test_streaming_from_the_hub_fetches_the_images_of_the_rows_read"]


def test_a_hub_test_passes_twice_with_every_cache_exported_to_one_shared_folder(tmp_path):
    shared = tmp_path / "shared-cache"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HOME": str(shared), "HF_HUB_CACHE": str(shared),
           "HF_DATASETS_CACHE": str(shared)}
    for run in (1, 2):  # the second run finds the first one's downloads in the shared folder, if any went there
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *HUB_TESTS],
                              cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, f"run {run}:\n{done.stdout[-3000:]}"
    assert not shared.exists() or not any(shared.iterdir())  # and nothing was written there


def test_each_test_has_its_own_caches(tmp_path):
    import datasets.config
    import huggingface_hub.constants

    for variable in ("HF_HOME", "HF_HUB_CACHE", "HF_DATASETS_CACHE"):
        assert Path(os.environ[variable]).is_relative_to(Path(os.environ["HF_HOME"])), variable
    assert Path(datasets.config.HF_DATASETS_CACHE) == Path(os.environ["HF_DATASETS_CACHE"])
    assert Path(huggingface_hub.constants.HF_HUB_CACHE) == Path(os.environ["HF_HUB_CACHE"])
    assert "hf_home" in Path(os.environ["HF_HOME"]).name  # a per-test folder, not the caller's
