"""Shared fixtures: real sample data from ``MMLB_TEST_DATA`` (see ../shared/data/README.md)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest


def _test_data_root() -> Path | None:
    value = os.environ.get("MMLB_TEST_DATA")
    if value:
        return Path(value)
    guess = Path(__file__).resolve().parents[1].parent / "shared" / "data"
    return guess if guess.is_dir() else None


def _settle_environment() -> None:
    """Once, at session start: make ``MMLB_TEST_DATA`` absolute (tests change directory, and the
    README's command gives it relative), point the tokenizer at the sample, and keep every test off
    the network, so the README's one-line test command needs nothing else."""
    root = _test_data_root()
    if root is None:
        return
    root = root.expanduser().resolve()
    os.environ["MMLB_TEST_DATA"] = str(root)
    tokenizer = root / "llama2" / "tokenizer.model"
    if tokenizer.is_file():
        os.environ.setdefault("MMLB_TOKENIZER", str(tokenizer))
    for offline in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        os.environ.setdefault(offline, "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


_settle_environment()


@pytest.fixture(scope="session")
def real_data() -> Path:
    """Root of the real sample data (original release formats)."""
    root = _test_data_root()
    if root is None or not root.is_dir():
        pytest.fail("real sample data not found: set MMLB_TEST_DATA to the shared/data folder")
    return root


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
