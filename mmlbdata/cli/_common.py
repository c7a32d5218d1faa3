"""Argument helpers shared by subcommands."""
from __future__ import annotations

import argparse
import os
import re
import shlex
import sys
from pathlib import Path
from typing import Optional, Sequence


def key_value(text: str) -> tuple[str, str]:
    """``KEY=VALUE`` (for --source and --option)."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), value.strip()


def positive_int(text: str) -> int:
    """An integer >= 1 (for --limit: 0 or a negative count would build nothing, or everything)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value} (leave --limit out for no cap)")
    return value


def parse_option_value(value: str):
    """Options arrive as strings; numbers and booleans are converted."""
    lowered = value.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    for cast in (int, float):
        try:
            return cast(value)
        except ValueError:
            pass
    return value


def tokenizer_or_message(path: Optional[str], argv: Optional[Sequence[str]] = None) -> Optional[str]:
    """Check once, before any config is built, that the Llama-2 tokenizer can be found and loaded.

    Returns None when it can, else prints the one actionable message and returns it, so a command
    stops at once instead of failing every config with the same error. ``argv``: the command's
    arguments after ``mmlb``; the message shows that command with the --tokenizer to add.
    """
    from mmlbdata.core.tokens import TokenizerNotFoundError, find_tokenizer_model

    try:
        find_tokenizer_model(path)
    except TokenizerNotFoundError as err:
        text = err.explain(command_without_tokenizer(argv) if argv else None)
        print(f"error: {text}", file=sys.stderr)
        return text
    return None


def command_without_tokenizer(argv: Sequence[str]) -> str:
    """``mmlb ARGS`` with any --tokenizer option taken out, quoted for a shell."""
    kept, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--tokenizer":
            skip = True
        elif not arg.startswith("--tokenizer="):
            kept.append(arg)
    return "mmlb " + " ".join(shlex.quote(a) for a in kept)


def absolute(path) -> str:
    """A path the user can paste from any directory."""
    return str(Path(path).expanduser().absolute())


#: what a Hugging Face repository id looks like: ``owner/name`` (letters, digits, ``-_.``; no ``..``)
HUB_ID = re.compile(r"(?!\.)[A-Za-z0-9._-]{1,96}/(?!\.)[A-Za-z0-9._-]{1,96}")


def looks_like_hub_id(text: str) -> bool:
    """``org/mmlb`` yes; ``./mmlb``, ``/data/mmlb``, ``~/mmlb``, ``mmlb``, ``a/b/c`` no."""
    return bool(HUB_ID.fullmatch(text)) and ".." not in text


def hub_offline_reason() -> Optional[str]:
    """Why the Hub cannot be used now (offline mode set, or no TCP connection in 3 s), or None."""
    from huggingface_hub import constants

    from mmlbdata.core.tokens import hub_unreachable

    if constants.HF_HUB_OFFLINE or os.environ.get("HF_DATASETS_OFFLINE", "").upper() in ("1", "ON", "YES", "TRUE"):
        return "offline mode is set (HF_HUB_OFFLINE / HF_DATASETS_OFFLINE)"
    return hub_unreachable(constants.ENDPOINT)


def dataset_problem(text: str, flag: str = "--data") -> Optional[str]:
    """Why ``text`` cannot be the dataset of ``flag`` (None: a local folder, or a Hub id the Hub can
    be asked about). Checked before any work: a local-looking path that does not exist is named as
    such, and a Hub id is tried only when it looks like one and the Hub answers."""
    path = Path(text).expanduser()
    if path.is_dir():
        return None
    if path.exists():
        return f"{flag} {text}: {path.absolute()} is a file; give the dataset folder `mmlb build --out` wrote"
    if not looks_like_hub_id(text):
        return f"{flag} {text}: no such folder: {path.absolute()}"
    why = hub_offline_reason()
    if why:
        return (f"{flag} {text}: no such local folder ({path.absolute()}), and the Hub repository {text} "
                f"cannot be reached: {why}")
    return None


def built_folder_problem(folder: str, configs: Optional[Sequence[str]] = None) -> Optional[str]:
    """Why ``folder`` is not a built dataset folder holding ``configs`` (None: it is), checked before
    any work or network call: a mistyped folder is named as missing, not pushed as an empty dataset."""
    from mmlbdata.dataset.stats import configs_in

    path = Path(folder).expanduser()
    if not path.is_dir():
        return (f"{folder}: no such folder: {path.absolute()}" if not path.exists() else
                f"{folder}: {path.absolute()} is a file; give the folder `mmlb build --out` wrote")
    built = configs_in(path)
    if not built:
        return (f"no built config in {folder} (no <config>.metadata.parquet or data/<config>/ in "
                f"{path.absolute()}): give the folder `mmlb build --out` wrote")
    return unbuilt_config_problem(path, configs, built)


def unbuilt_config_problem(path: Path, configs: Optional[Sequence[str]], there: Sequence[str]) -> Optional[str]:
    """The first of ``configs`` not among ``there`` (the configs of the folder ``path``), named with
    the close ones; None when all are there."""
    from mmlbdata.core.suggest import did_you_mean

    for name in configs or []:
        if name not in there:
            listed = ", ".join(there[:10]) + (" ..." if len(there) > 10 else "")
            return (f"config {name!r} is not built in {path.expanduser().absolute()}{did_you_mean(name, there)}; "
                    f"configs there: {listed}")
    return None


def local_configs_problem(data: str, configs: Optional[Sequence[str]]) -> Optional[str]:
    """For a local ``--data`` folder, before any model or scorer is loaded: every config is one
    it holds (built by ``mmlb build``, or listed by the README of a dataset of another shape), a
    mistyped one named with the close ones; a folder with none (a source folder, say) is named
    as such. None for a Hub id (``datasets`` answers for it) or when all is well."""
    from mmlbdata.dataset.loadcheck import readme_configs
    from mmlbdata.dataset.stats import configs_in

    path = Path(data).expanduser()
    if not path.is_dir():
        return None
    there = configs_in(path) or readme_configs(path)
    if not there:
        return built_folder_problem(data)
    return unbuilt_config_problem(path, configs, there)
