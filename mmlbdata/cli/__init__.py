"""``mmlb``: build, inspect, publish and score long-context multimodal benchmarks.

The top layer: it may import every other layer, and nothing imports it. Each subcommand lives
in its own module of this package (listed in ``COMMANDS``) with a ``register(subparsers)``
function, so commands stay small and independent; ``_common`` holds what several share.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import logging
import os
import sys
from pathlib import Path
from typing import Optional, Sequence

from mmlbdata import __version__
from mmlbdata.core.extras import MissingExtraError
from mmlbdata.core.suggest import did_you_mean
from mmlbdata.core.tokens import TOKENIZER_ENV

#: argparse's own suggestions for mistyped subcommands and choices (Python >= 3.14); mistyped
#: flags get "did you mean" from ``unrecognized`` on every version
SUGGESTIONS = {"suggest_on_error": True} if sys.version_info >= (3, 14) else {}

#: the subcommands, in the order ``mmlb --help`` lists them; each is a module of this package
COMMANDS = ["list", "build", "stats", "demo", "push", "fetch", "eval", "run", "card", "export", "gc"]


def make_parser() -> argparse.ArgumentParser:
    parser = Parser(
        **SUGGESTIONS, prog="mmlb",
        description="Build long-context multimodal benchmarks (MMLongBench, MMNeedle, MMLongBench-Doc, "
                    "ReadBench, LongVideoBench) as Hugging Face datasets, publish them, and score models.",
        epilog="Start with `mmlb demo --out demo_mmlb`, then `mmlb list` and `mmlb build --help`.",
    )
    parser.add_argument("--version", action="version", version=f"mmlbdata {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug details")
    parser.add_argument("--tokenizer", dest="global_tokenizer", default=None, metavar="PATH",
                        help="Llama-2 tokenizer.model for any subcommand (same as $MMLB_TOKENIZER)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        importlib.import_module(f"{__name__}.{name}").register(sub)
    for command in sub.choices.values():  # every subcommand takes --no-progress
        if "--no-progress" not in command._option_string_actions:
            command.add_argument("--no-progress", action="store_true", help="hide progress bars")
    return parser


class Parser(argparse.ArgumentParser):
    """argparse's parser, but an unknown flag is reported by the subcommand it was given to."""

    def parse_args(self, args=None, namespace=None):
        parsed, unknown = self.parse_known_args(args, namespace)
        if unknown:  # the subcommand's usage and the flags it meant (exits 2, as argparse does)
            unrecognized(self, parsed, unknown)
        return parsed


def unrecognized(parser: argparse.ArgumentParser, args: argparse.Namespace, unknown: list[str]) -> None:
    """argparse's "unrecognized arguments" error from the subcommand's own parser (its usage, not
    the top-level one), with "did you mean" for each mistyped flag."""
    command = parser._subparsers._group_actions[0].choices.get(args.command, parser)
    flags = [*command._option_string_actions, *parser._option_string_actions]
    hints = []
    for arg in unknown:
        if arg.startswith("--"):
            close = did_you_mean(arg.split("=", 1)[0], flags)
            if close:
                hints.append(f"{arg}{close}")
    command.error(f"unrecognized arguments: {' '.join(unknown)}" + ("; " + "; ".join(hints) if hints else ""))


@contextlib.contextmanager
def _progress_bars_hidden(hidden: bool):
    """No progress bar from mmlbdata, tqdm, huggingface_hub or datasets while the command runs
    (restored afterwards, for callers of ``main`` in the same process)."""
    if not hidden:
        yield
        return
    import datasets
    from huggingface_hub import utils as hub_utils

    saved = {k: os.environ.get(k) for k in ("TQDM_DISABLE", "HF_HUB_DISABLE_PROGRESS_BARS")}
    os.environ.update(TQDM_DISABLE="1", HF_HUB_DISABLE_PROGRESS_BARS="1")  # every tqdm made from now
    hub_was, datasets_was = hub_utils.are_progress_bars_disabled(), datasets.is_progress_bar_enabled()
    hub_utils.disable_progress_bars()
    datasets.disable_progress_bars()
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        if not hub_was:
            hub_utils.enable_progress_bars()
        if datasets_was:
            datasets.enable_progress_bars()


# Libraries that attach their own stderr handler; their records reach the root handler too, so
# without this filter every one of their warnings would be printed twice.
SELF_PRINTING_LOGGERS = ("huggingface_hub", "datasets")


def _printed_by_its_library(record: logging.LogRecord) -> bool:
    return record.name.split(".")[0] not in SELF_PRINTING_LOGGERS


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = [*(sys.argv[1:] if argv is None else argv)]  # (`list` here is the `mmlb list` module)
    args = make_parser().parse_args(argv)
    args.argv = argv  # messages that show the command to run again (the tokenizer hint)
    if args.global_tokenizer:  # `mmlb --tokenizer X demo` as well as `mmlb demo --tokenizer X`
        os.environ[TOKENIZER_ENV] = str(Path(args.global_tokenizer).expanduser().absolute())
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING,
                        format="%(levelname)s %(message)s")
    for handler in logging.getLogger().handlers:
        handler.addFilter(_printed_by_its_library)
    try:
        with _progress_bars_hidden(getattr(args, "no_progress", False)):
            return int(args.func(args) or 0)
    except MissingExtraError as err:  # an optional dependency: one line naming the extra
        print(f"mmlb {args.command}: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # what the command leaves behind and how to go on, when it says (build)
        said = getattr(args, "on_interrupt", None)
        print(said(args) if said else "interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `mmlb list | head`: the reader left; exit quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
