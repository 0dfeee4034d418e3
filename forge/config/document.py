"""The settings document: the effective config as the `settings` frame carries it (G07-G09).

Pure: built from the loader's resolved values and the catalogue, once per load, and shared by
every connection. Every catalogue key gets a row (once per instance in a repeated area), unset
optional keys included with a null value, so a page can draw a control for each.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from forge.config.catalogue import AREAS, Area, Integer, Key, TomlValue, keys_of

Resolved = Mapping[str, Any]
"""The loader's validated tree with defaults filled: a dict per `table` area, a list of entry dicts
for an `array` area, a dict of name -> entry dict for a `named` area."""

Document = dict[str, Any]


def build_document(resolved: Resolved, *, version: str, source: str, fingerprint: str) -> Document:
    areas = [_area(area, resolved[area.id]) for area in AREAS]
    return {
        "version": version,
        "source": source,
        "fingerprint": fingerprint,
        "totals": {"keys": sum(len(area["keys"]) for area in areas), "areas": len(areas)},
        "areas": areas,
    }


def edit_shape(key: Key) -> dict[str, Any] | None:
    """How a client draws the key's control; None (read-only) for a leftover table (O-G7)."""
    if key.kind == "table":
        return None
    allowed = key.allowed
    edit: dict[str, Any] = {"kind": "enum" if allowed else _EDIT_KIND[key.kind]}
    if allowed:
        edit["allowed"] = list(allowed)
    edit["required"] = key.required
    if key.area.edit_group is not None:
        edit["group"] = key.area.edit_group
    if key.kind == "number":
        edit["bounds"] = _bounds(key)
    return edit


def _bounds(key: Key) -> dict[str, Any]:
    """A number's input bounds (our addition), so a page can say them before a save: a whole
    number within [min, max], or a duration whose `min` 0 is excluded (`expected` says so)."""
    rule = key.rule
    if isinstance(rule, Integer):
        return {"integer": True, "min": rule.low, "max": rule.high, "expected": rule.expected}
    return {"integer": False, "min": 0, "max": None, "expected": rule.expected}


_EDIT_KIND = {"string": "string", "number": "number", "bool": "bool", "list": "list", "set": "list"}


def _area(area: Area, values: Any) -> dict[str, Any]:
    instances: list[tuple[list[str], Mapping[str, TomlValue]]]
    if area.form == "table":
        instances = [([], values)]
    elif area.form == "array":
        instances = [([str(entry[name]) for name in area.name_keys], entry) for entry in values]
    else:
        instances = [([name], entry) for name, entry in values.items()]
    return {
        "id": area.id,
        "name": area.name,
        "note": area.note,
        "keys": [
            _row(key, group, entry[key.leaf]) for group, entry in instances for key in keys_of(area)
        ],
    }


def _row(key: Key, group: list[str], value: TomlValue) -> dict[str, Any]:
    return {
        "path": ".".join([key.area.id, *group, key.leaf]),
        "leaf": key.leaf,
        "group": group,
        "pattern": key.pattern,
        "kind": key.kind,
        "value": value,
        "class": key.reload,
        "edit": edit_shape(key),
    }
