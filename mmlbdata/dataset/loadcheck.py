"""Does every config of a built folder load with the installed ``datasets``? (``mmlb build``'s last check)

A folder is read by one ``datasets`` builder for all its configs, inferred from the first config
its README lists, and every config then casts its rows to the features its README records. Both
are ``datasets``' decisions, so they are checked with ``datasets`` itself, not re-derived here: each
config is opened as a user opens it (``load_dataset(folder, config, split="test",
streaming=True)``), its features must be the recorded ones, and its first row is read with the
images left undecoded, each image file present and its header readable. A config that fails says
why in one line. Streaming shares the in-memory load's builder choice, data files and cast, and
reads no more than a row: the check costs about a second per config, not a copy of the folder.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Optional


def load_problems(folder: os.PathLike, configs: Optional[list[str]] = None) -> dict[str, str]:
    """config -> why it does not load, for ``configs`` (default: every config the README lists)."""
    import datasets

    folder = Path(folder)
    names = configs if configs is not None else readme_configs(folder)
    problems = {}
    level = datasets.logging.get_verbosity()
    # quiet: "params were ignored" (decode_num_threads before 5.2), the parquet builder's logged cast errors
    datasets.logging.set_verbosity(datasets.logging.CRITICAL)
    try:
        for name in names:
            try:
                problem = _first_row_problem(folder, name)
            except Exception as err:  # whatever datasets raises is the answer
                problem = f"{type(err).__name__}: {_first_line(err)}"
            if problem:
                problems[name] = problem
    finally:
        datasets.logging.set_verbosity(level)
    return problems


def readme_configs(folder: Path) -> list[str]:
    """The config names the folder's README lists (what ``load_dataset`` offers)."""
    from mmlbdata.dataset.card import folder_front_matter

    meta = folder_front_matter(folder)
    return [entry["config_name"] for entry in meta.get("configs") or [] if isinstance(entry, dict)]


def _first_row_problem(folder: Path, name: str) -> Optional[str]:
    import datasets
    from PIL import Image

    from mmlbdata.dataset.card import config_features

    stream = datasets.load_dataset(str(folder), name, split="test", streaming=True)
    builder = f"datasets' {stream.info.builder_name} builder"
    expected = config_features(folder, name)
    if stream.features != expected:
        missing = sorted(set(expected) - set(stream.features or {}))
        extra = sorted(set(stream.features or {}) - set(expected))
        return f"{builder} gives other columns (missing {missing}, unexpected {extra})"
    try:
        row = next(iter(stream.decode(False)), None)
    except Exception as err:
        return f"{builder}: {type(err).__name__}: {_first_line(err)}"
    if row is None:
        return "no row"
    for image in _images(row, expected):
        path = image.get("path")
        if image.get("bytes") is None and not (path and os.path.isfile(path)):
            return f"image file missing: {path}"
    first = next(iter(_images(row, expected)), None)
    if first is not None and first.get("bytes") is None:
        with Image.open(first["path"]) as opened:  # the header only
            opened.size
    return None


def _images(row: dict, features) -> list[dict]:
    """The undecoded image values of a row: ``{"bytes", "path"}`` each."""
    from datasets import Image, LargeList, List, Sequence

    found = []
    for column, feature in features.items():
        value = row.get(column)
        if isinstance(feature, Image) and value:
            found.append(value)
        elif isinstance(feature, (List, LargeList, Sequence)) and isinstance(feature.feature, Image):
            found += [v for v in value or [] if v]
    return found


def _first_line(err: BaseException) -> str:
    text = str(err).strip() or repr(err)
    cause = err.__cause__ or err.__context__
    if cause is not None and type(err).__name__ == "DatasetGenerationError":
        text = f"{text} ({type(cause).__name__}: {str(cause).strip().splitlines()[0] if str(cause).strip() else ''})"
    lines = text.splitlines()
    if len(lines) > 1 and lines[-1].startswith("because"):  # datasets' CastError: the schemas, then why
        return f"{lines[0]} {lines[-1]}"[:300]
    return lines[0][:300]
