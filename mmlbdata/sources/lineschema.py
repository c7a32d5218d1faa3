"""Declared shapes of release records, checked where a record is read, before any reader uses it.

Why: a released line is data from outside. The readers build prompts from its fields with string
joins, ``str.format`` and path arithmetic, which crash on a number where a string belongs (one bad
line failing a whole config) or, worse, print it into a row nobody notices (``"id": [1, 2]`` as
the id ``"[1, 2]"``). Each release file kind declares once, as data, which fields its loader reads
and what each may hold (:class:`Field`, :class:`Schema`); :func:`problem` checks a record against
it and names the first field at fault, so the reader skips and reports that record and goes on.
Fields a schema does not name are ignored, as the official loaders ignore them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional

NULL = type(None)
#: JSON's types in words, for the reasons a report gives
_NAMES = {str: "a string", int: "an integer", float: "a number", bool: "true/false", NULL: "null",
          list: "a list", dict: "an object"}


@dataclass(frozen=True)
class Field:
    """What one field (or one list element) may hold.

    ``types``: the accepted JSON types (``bool`` is never taken for ``int``, though Python says so);
    ``items``: for a list value, what every element must be; ``keys``: for an object value, its
    fields; ``required``: whether the field must be present; ``nonempty``: a list must have an
    element; ``rule``: (test, what it requires) for a condition beyond the type.
    """

    types: tuple[type, ...]
    required: bool = True
    items: Optional["Field"] = None
    keys: Optional[Mapping[str, "Field"]] = None
    nonempty: bool = False
    rule: Optional[tuple[Callable[[Any], bool], str]] = None


@dataclass(frozen=True)
class Rule:
    """A condition between fields of one record: ``test(record)`` must hold, else ``field`` is at fault."""

    field: str
    test: Callable[[dict], bool]
    requires: str


@dataclass(frozen=True)
class Schema:
    """The fields of one release file kind and the rules between them."""

    fields: Mapping[str, Field]
    rules: tuple[Rule, ...] = ()


@dataclass(frozen=True)
class Problem:
    """Why a record does not fit its schema: the field (a path such as ``ctxs[1].text``) and the reason."""

    field: str
    reason: str

    @property
    def message(self) -> str:
        """The reason a report gives: ``ctxs[0]: expected a string, got 5``."""
        return f"{self.field}: {self.reason}" if self.field else self.reason


def _type_ok(value: Any, types: tuple[type, ...]) -> bool:
    if isinstance(value, bool):
        return bool in types
    return isinstance(value, types)


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _value_problem(where: str, value: Any, spec: Field) -> Optional[Problem]:
    if not _type_ok(value, spec.types):
        wanted = " or ".join(_NAMES.get(t, t.__name__) for t in spec.types)
        return Problem(where, f"expected {wanted}, got {_show(value)}")
    if isinstance(value, list):
        if spec.nonempty and not value:
            return Problem(where, "expected a non-empty list, got []")
        if spec.items is not None:
            for index, item in enumerate(value):
                found = _value_problem(f"{where}[{index}]", item, spec.items)
                if found:
                    return found
    if isinstance(value, dict) and spec.keys is not None:
        found = _fields_problem(value, spec.keys, f"{where}.")
        if found:
            return found
    if spec.rule is not None and not _rule_holds(spec.rule[0], value):
        return Problem(where, f"{spec.rule[1]}, got {_show(value)}")
    return None


def _rule_holds(test: Callable[[Any], bool], value: Any) -> bool:
    try:
        return bool(test(value))
    except (TypeError, ValueError, AttributeError, KeyError, IndexError):
        return False


def _fields_problem(record: Mapping[str, Any], fields: Mapping[str, Field], prefix: str = "") -> Optional[Problem]:
    for name, spec in fields.items():
        if name not in record:
            if spec.required:
                return Problem(prefix + name, "missing")
            continue
        found = _value_problem(prefix + name, record[name], spec)
        if found:
            return found
    return None


def problem(record: Any, schema: Schema) -> Optional[Problem]:
    """The first way ``record`` breaks ``schema`` (fields in declaration order, then the rules), or None."""
    if not isinstance(record, dict):
        return Problem("", f"expected an object, got {_show(record)}")
    found = _fields_problem(record, schema.fields)
    if found:
        return found
    for rule in schema.rules:
        if not _rule_holds(rule.test, record):
            return Problem(rule.field, rule.requires)
    return None
