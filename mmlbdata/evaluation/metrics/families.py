"""Every metric family, named once and in order: importing this module registers them all.

The package ``__init__`` imports this module right after :mod:`.registry`, so every ``@register``
has run before anyone can look a metric up (``mmlb eval``, the lmms-eval hooks, the VLMEvalKit
class: each reaches the registry through the package). The registry itself imports no family:
families depend on the registry, never the reverse. A new family is added to this list.
"""
from __future__ import annotations

from mmlbdata.evaluation.metrics import docs, lvb, memlens, mmlongbench, mmneedle, readbench, summ

#: the family modules, in registration order
FAMILIES = (docs, lvb, memlens, mmlongbench, mmneedle, readbench, summ)
