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


@pytest.fixture(autouse=True)
def _own_datasets_cache(tmp_path_factory, monkeypatch):
    """Each test its own ``datasets`` Arrow cache. ``load_dataset(folder)`` keys that cache by the
    folder's *name*, config and README, not its location: a files-layout row holds absolute image
    paths, so a cache left by an identical build in another test's (since deleted) ``out`` folder
    would point at files that are gone."""
    import datasets.config

    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path_factory.mktemp("hf_datasets_cache"))
