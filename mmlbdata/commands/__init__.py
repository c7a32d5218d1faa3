"""One module per ``mmlb`` subcommand; each has ``register(subparsers)``."""

COMMANDS = [
    "list",
    "build",
    "stats",
    "demo",
    "push",
    "fetch",
    "eval",
    "run",
    "card",
    "export",
]
