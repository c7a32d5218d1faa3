"""CLI subcommands: each module here has ``register(subparsers)`` and ``run(args) -> int``.

``mmlbdata.cli`` imports every module named in ``COMMANDS``.
"""

COMMANDS = [
    "eval",
    "run",
]
