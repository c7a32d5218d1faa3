"""Shared fixtures: the real sample data, and each test's own Hugging Face caches.

The sample data (original release formats; tests/sample_data.json lists every file and its origin)
is looked up in this order: ``MMLB_TEST_DATA`` when set (it must exist), else ``../shared/data``
beside the clone, else ``tests/sample_data/`` once ``python -m tests.fetch_sample_data`` has
fetched it. Without any, the tests that read it skip, each saying so in one line.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.fetch_sample_data import COMMAND as FETCH_COMMAND
from tests.fetch_sample_data import DEFAULT_DEST as FETCHED
from tests.fetch_sample_data import is_complete

BESIDE = Path(__file__).resolve().parents[1].parent / "shared" / "data"
ABSENT = f"sample data absent: run `{FETCH_COMMAND}` (or set MMLB_TEST_DATA)"


def _test_data_root() -> Path | None:
    """Where the sample data is (see the module docstring); None when nowhere."""
    value = os.environ.get("MMLB_TEST_DATA")
    if value:
        return Path(value).expanduser().resolve()
    if BESIDE.is_dir():
        return BESIDE
    return FETCHED if is_complete(FETCHED) else None


def _settle_environment() -> None:
    """Once, at session start: make ``MMLB_TEST_DATA`` absolute (tests change directory) and name
    the folder found, point the tokenizer at the sample, and keep every test off the network, so
    the README's test command needs nothing else."""
    for offline in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        os.environ.setdefault(offline, "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    root = _test_data_root()
    if root is None:
        return
    os.environ["MMLB_TEST_DATA"] = str(root)
    tokenizer = root / "llama2" / "tokenizer.model"
    if tokenizer.is_file():
        os.environ.setdefault("MMLB_TOKENIZER", str(tokenizer))


_settle_environment()


def require_sample_data() -> Path:
    """The sample data's root, or the calling test skipped (data absent) or failed (an
    ``MMLB_TEST_DATA`` that names no folder: asked for, so not silently skipped), in one line."""
    root = _test_data_root()
    if root is None:
        pytest.skip(ABSENT)
    if not root.is_dir():
        pytest.fail(f"MMLB_TEST_DATA={os.environ.get('MMLB_TEST_DATA')}: no such folder", pytrace=False)
    return root


def pytest_report_header(config) -> str:
    root = _test_data_root()
    return f"sample data: {root}" if root is not None else ABSENT


@pytest.fixture(scope="session")
def real_data() -> Path:
    """Root of the real sample data (original release formats)."""
    return require_sample_data()


@pytest.fixture(scope="session")
def tokenizer_path(real_data: Path) -> Path:
    """The real Llama-2 SentencePiece model."""
    path = real_data / "llama2" / "tokenizer.model"
    assert path.is_file(), f"missing {path}"
    return path


@pytest.fixture(scope="session")
def coco_mini(real_data: Path) -> Path:
    """159 real COCO 2017 images with their annotation files (release layout)."""
    return real_data / "coco_mini"


@pytest.fixture(scope="session")
def counter(tokenizer_path: Path):
    """The unified token counter with the real Llama-2 tokenizer (shared by the whole session)."""
    from mmlbdata.core.tokens import TokenCounter

    return TokenCounter(tokenizer_path)


CACHE_VARIABLES = ("HF_HOME", "HF_HUB_CACHE", "HF_DATASETS_CACHE", "HF_XET_CACHE", "HF_ASSETS_CACHE")


@pytest.fixture(autouse=True)
def _own_caches(tmp_path_factory, monkeypatch):
    """Each test its own Hugging Face caches, whatever the caller exported (a cluster's shared
    ``HF_HOME`` / ``HF_DATASETS_CACHE`` / ``HF_HUB_CACHE``): the variables for the processes a test
    starts, ``datasets``' and ``huggingface_hub``'s resolved paths for this one. ``load_dataset(folder)``
    keys its Arrow cache by the folder's *name*, config and README, not its location (a files-layout
    row holds absolute image paths, so an identical build in another test's deleted folder would
    be read); a Hub client's downloads of one repository from an earlier test would be served
    from a shared cache, and the requests a test expects would never reach its loopback Hub."""
    import datasets.config
    import huggingface_hub.constants

    home = tmp_path_factory.mktemp("hf_home")
    paths = {"HF_HOME": home, "HF_HUB_CACHE": home / "hub", "HF_DATASETS_CACHE": home / "datasets",
             "HF_XET_CACHE": home / "xet", "HF_ASSETS_CACHE": home / "assets"}
    for variable in CACHE_VARIABLES:
        monkeypatch.setenv(variable, str(paths[variable]))
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", paths["HF_DATASETS_CACHE"])
    monkeypatch.setattr(datasets.config, "HF_CACHE_HOME", str(home))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HOME", str(home))
    for constant in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        monkeypatch.setattr(huggingface_hub.constants, constant, str(paths["HF_HUB_CACHE"]))
