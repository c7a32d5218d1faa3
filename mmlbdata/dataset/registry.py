"""Config names -> the builder family that makes them.

Families are discovered through the ``mmlb.builders`` entry-point group (declared in
pyproject.toml), so mmlbdata never imports ``mmlb_builders`` itself and a third-party package can add
a family by declaring its own entry point.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib.metadata import entry_points
from typing import Any, Iterable

from mmlbdata.core.lengths import normalize_config_name

ENTRY_POINT_GROUP = "mmlb.builders"


class UnknownConfigError(KeyError):
    def __str__(self) -> str:
        return self.args[0]


@dataclass(frozen=True)
class ConfigEntry:
    name: str
    family: str
    builder: Any  # the MMLBBuilder subclass
    config: Any  # its MMLBConfig


@lru_cache(maxsize=1)
def families() -> dict[str, Any]:
    """Family name -> builder class, in a stable order."""
    found = {}
    for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        found[ep.name] = ep.load()
    return found


@lru_cache(maxsize=1)
def all_configs() -> dict[str, ConfigEntry]:
    """Every config of every family, by name."""
    configs: dict[str, ConfigEntry] = {}
    for family, builder in families().items():
        for config in builder.BUILDER_CONFIGS:
            if config.name in configs:
                other = configs[config.name].family
                raise RuntimeError(f"config {config.name} is declared by both {other} and {family}")
            configs[config.name] = ConfigEntry(config.name, family, builder, config)
    return configs


def resolve(name: str) -> ConfigEntry:
    """The entry of ``name`` (hyphenated aliases accepted), with close matches in the error."""
    configs = all_configs()
    key = normalize_config_name(name)
    if key in configs:
        return configs[key]
    import difflib

    close = difflib.get_close_matches(key, list(configs), n=5)
    hint = f"; did you mean {', '.join(close)}?" if close else "; run `mmlb list` to see them all"
    raise UnknownConfigError(f"unknown config {name!r}{hint}")


def sources_by_key() -> dict[str, list[tuple[str, str]]]:
    """Source key -> [(family, expected release layout)]."""
    out: dict[str, list[tuple[str, str]]] = {}
    for family, builder in families().items():
        for key, layout in builder.SOURCES.items():
            out.setdefault(key, []).append((family, layout))
    return dict(sorted(out.items()))


def families_for_configs(names: Iterable[str]) -> dict[str, set[str]]:
    """Source key -> the builder families of ``names`` that read it (what ``--fetch`` gets)."""
    needed: dict[str, set[str]] = {}
    for name in names:
        entry = resolve(name)
        for key in entry.config.sources:
            needed.setdefault(key, set()).add(entry.family)
    return needed
