"""Small helpers shared by the benchmarks: where the sample data is, and a plain table."""
from __future__ import annotations

import os
import sys
from pathlib import Path


def test_data() -> Path:
    """The tests' sample data: ``$MMLB_TEST_DATA``, else ``../shared/data`` beside the checkout, else
    ``tests/sample_data/`` as ``python -m tests.fetch_sample_data`` leaves it (tests/conftest.py)."""
    checkout = Path(__file__).resolve().parents[1]
    candidates = [os.environ.get("MMLB_TEST_DATA")] if os.environ.get("MMLB_TEST_DATA") else \
        [checkout.parent / "shared" / "data", checkout / "tests" / "sample_data"]
    for root in candidates:
        if Path(root).is_dir():
            return Path(root)
    sys.exit("no sample data: run `python -m tests.fetch_sample_data` (or set MMLB_TEST_DATA)")


def table(rows: list[dict], columns: list[str]) -> str:
    """A right-aligned text table of ``rows`` (dicts) with ``columns``."""
    widths = [max(len(c), *(len(str(r.get(c, ""))) for r in rows)) for c in columns]

    def line(values) -> str:
        return "  ".join(str(v).rjust(w) for v, w in zip(values, widths))

    return "\n".join([line(columns), line("-" * w for w in widths)] + [line([r.get(c, "") for c in columns]) for r in rows])
