"""A forge.toml that spells out the embedded defaults, written from the catalogue with tomlkit.

`forge config defaults` prints it, so a person starts from a file that loads, lists every key with
its note and class, and cannot drift from what the loader accepts. Keys without a default and the
repeated areas are described in comments, since a placeholder value would be a guess.
"""

from __future__ import annotations

import tomlkit
from tomlkit.items import Table

from forge.config.catalogue import AREAS, Area, Key, keys_of

_EXAMPLE_HEADER = {"array": "[[{id}]]", "named": "[{id}.<name>]"}


def defaults_toml() -> str:
    document = tomlkit.document()
    document.add(tomlkit.comment("forge.toml: every key, set to its default or described."))
    document.add(tomlkit.comment("A missing file or key means the default shown here."))
    for area in AREAS:
        document.add(tomlkit.nl())
        if area.form == "table":
            document.add(area.id, _table(area))
        else:
            _describe_repeated(document, area)
    return tomlkit.dumps(document)


def _table(area: Area) -> Table:
    table = tomlkit.table()
    table.add(tomlkit.comment(area.note))
    for key in keys_of(area):
        table.add(tomlkit.comment(_about(key)))
        if key.default is None:
            table.add(tomlkit.comment(f"{key.leaf} = (unset)"))
        else:
            table.add(key.leaf, key.default)
    return table


def _describe_repeated(document: tomlkit.TOMLDocument, area: Area) -> None:
    header = _EXAMPLE_HEADER[area.form].format(id=area.id)
    document.add(tomlkit.comment(f"{header}: {area.note}"))
    for key in keys_of(area):
        document.add(tomlkit.comment(f"  {key.leaf}: {_about(key)}"))


def _about(key: Key) -> str:
    required = ", required" if key.required and key.default is None else ""
    return f"{key.note} ({key.kind}, {key.reload}{required}; {key.rule.expected})"
