"""``python -m mmlbdata.cli``: the same as the ``mmlb`` command."""
from mmlbdata.cli import main

raise SystemExit(main())
