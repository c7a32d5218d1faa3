"""Small helpers shared by the benchmarks: where the sample data is, and a plain table."""
from __future__ import annotations

import os
import sys
from pathlib import Path


def test_data() -> Path:
    """``$MMLB_TEST_DATA``, else ``../shared/data`` beside the checkout."""
    root = os.environ.get("MMLB_TEST_DATA") or str(Path(__file__).resolve().parents[2] / "shared" / "data")
    if not Path(root).is_dir():
        sys.exit("set MMLB_TEST_DATA to the shared/data folder")
    return Path(root)


def table(rows: list[dict], columns: list[str]) -> str:
    """A right-aligned text table of ``rows`` (dicts) with ``columns``."""
    widths = [max(len(c), *(len(str(r.get(c, ""))) for r in rows)) for c in columns]

    def line(values) -> str:
        return "  ".join(str(v).rjust(w) for v, w in zip(values, widths))

    return "\n".join([line(columns), line("-" * w for w in widths)] + [line([r.get(c, "") for c in columns]) for r in rows])
