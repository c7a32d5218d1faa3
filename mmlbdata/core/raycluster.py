"""Joining a Ray cluster, shared by ``mmlb run --ray`` and ``mmlb build --executor ray``."""
from __future__ import annotations

from typing import Optional

from mmlbdata.core.extras import require


def connect(address: Optional[str], feature: str, num_cpus: Optional[int] = None):
    """The ``ray`` module, initialised: the cluster at ``address`` ('auto': the one this machine
    belongs to), else ``$RAY_ADDRESS`` or a new local Ray (``num_cpus`` caps a local one).
    An already initialised Ray (tests, notebooks) is used as it is."""
    ray = require("ray", "ray", feature)
    if not ray.is_initialized():
        if address:
            ray.init(address=address, log_to_driver=False)
        else:
            ray.init(num_cpus=num_cpus, include_dashboard=False, log_to_driver=False)
    return ray
