"""Every family's configs fit together: unique names, known metrics, declared sources."""
from __future__ import annotations

import pytest

from mmlbdata.evaluation.metrics import metric_names
from mmlbdata.core.lengths import ALL_LENGTHS, parse_config_name
from mmlbdata.dataset.registry import UnknownConfigError, all_configs, families, resolve


def test_every_config_names_a_registered_metric_and_declared_sources():
    known = set(metric_names())
    for name, entry in all_configs().items():
        assert entry.config.metric in known, f"{name}: metric {entry.config.metric!r} is not registered"
        assert entry.config.sources, f"{name} declares no source key"
        for key in entry.config.sources:
            assert key in entry.builder.SOURCES, f"{name}: source {key!r} has no documented layout"


def test_standard_lengths_match_their_names():
    for name, entry in all_configs().items():
        _, key = parse_config_name(name)
        if key is not None and entry.config.length:
            assert entry.config.length == ALL_LENGTHS[key], name


def test_resolution_accepts_aliases_and_suggests():
    assert resolve("vh-single_128k").name == "vh_single_128k"
    with pytest.raises(UnknownConfigError, match="did you mean"):
        resolve("vh_singel_128k")


def test_families_are_discovered_through_entry_points():
    assert "vh" in families()
    assert len(all_configs()) >= 10
