"""Applying a client's edits to forge.toml's text with tomlkit, so comments and order survive.

Pure: text and edits in, the candidate text out, or `EditRefused` naming the edit that could not
be applied. A key is located by its catalogue `pattern` and the concrete `key_path` the settings
document gave it: for a repeated area the entry is the one whose document path, built exactly as
the document builds it, equals `key_path` (names may contain dots, so the path is never cut).
Whether the candidate loads is the loader's question, asked by the caller.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import tomlkit
from tomlkit.container import Container
from tomlkit.items import AoT, Table

from forge.config.catalogue import AREAS, Area, Key, key_for

REPEATED = tuple(area.id for area in AREAS if area.form != "table")
"""The areas whose entries `add` and `remove` (with an empty pattern) name: projects and orgs."""

Entry = Table | Container


class EditRefused(Exception):
    """An edit that cannot be applied: `reason` is `invalid` (the edit does not describe the file)
    or `refused` (a rule declined it), `key_path` the key it named."""

    def __init__(self, reason: str, message: str, key_path: str | None) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.key_path = key_path


class _Bad(Exception):
    def __init__(self, why: str, reason: str = "invalid") -> None:
        super().__init__(why)
        self.why = why
        self.reason = reason


def apply_edits(text: str, edits: Sequence[Any]) -> str:
    """The text with every edit applied in order (each edit has op, area, key_path, pattern,
    value, as `forge.wire.settings.Edit`)."""
    try:
        document = tomlkit.parse(text)
    except Exception as error:  # tomlkit raises its own ParseError and plain ValueErrors
        raise EditRefused("invalid", f"forge.toml does not parse: {error}", None) from None
    for number, edit in enumerate(edits, 1):
        try:
            _apply(document, edit)
        except _Bad as bad:
            message = f"edit {number} ({edit.op} {edit.key_path}): {bad.why}"
            raise EditRefused(bad.reason, message, edit.key_path) from None
    result = tomlkit.dumps(document)
    if text.endswith("\n") and not text.endswith("\n\n"):
        result = result.rstrip("\n") + "\n"
    return result


def _apply(document: tomlkit.TOMLDocument, edit: Any) -> None:
    area = _area(edit.area)
    if edit.op == "add":
        if edit.pattern:
            raise _Bad("an add names the entry in key_path and leaves pattern empty")
        _add(document, area, edit.key_path, edit.value)
        return
    if edit.op == "remove" and not edit.pattern:
        _remove_entry(document, area, edit.key_path)
        return
    key = _key(edit.pattern, area)
    value = None if edit.op == "remove" else edit.value
    if value is None and key.required:
        raise _Bad(f"{key.pattern} is required; it keeps a value", reason="refused")
    container = _container(document, area, key, edit.key_path, create=value is not None)
    if container is None:
        return
    if value is None:
        if key.leaf in container:
            del container[key.leaf]
    elif key.leaf in container:
        container[key.leaf] = value
    else:
        _place(container, key.leaf, value)


def _area(area_id: str) -> Area:
    for area in AREAS:
        if area.id == area_id:
            return area
    raise _Bad(f"no area `{area_id}`; forge.toml has " + ", ".join(a.id for a in AREAS))


def _key(pattern: str, area: Area) -> Key:
    try:
        key = key_for(pattern)
    except KeyError:
        raise _Bad(f"no key `{pattern}` in the catalogue") from None
    if key.area is not area:
        raise _Bad(f"{pattern} is not a key of area `{area.id}`")
    return key


def _container(
    document: tomlkit.TOMLDocument, area: Area, key: Key, key_path: str, *, create: bool
) -> Entry | None:
    """The table the key lives in: the area's own table, or the entry `key_path` names."""
    if area.form == "table":
        if key_path != key.pattern:
            raise _Bad(f"key_path must be `{key.pattern}` for this pattern")
        if area.id not in document:
            if not create:
                return None
            _section(document, area.id, tomlkit.table())
        section = document[area.id]
        if not isinstance(section, Table | Container):
            raise _Bad(f"[{area.id}] is not a table in forge.toml")
        return section
    for path, entry in _entries(document, area):
        if path + "." + key.leaf == key_path:
            return entry
    raise _Bad(f"no {_header(area)} entry has this key_path")


def _entries(document: tomlkit.TOMLDocument, area: Area) -> list[tuple[str, Table]]:
    """Each entry of a repeated area with its document path (`projects.acme.web`, `orgs.acme`)."""
    section = document.get(area.id)
    if section is None:
        return []
    found: list[tuple[str, Table]] = []
    if area.form == "array" and isinstance(section, AoT):
        for entry in section:
            names = [str(entry.get(name, "")) for name in area.name_keys]
            found.append((".".join([area.id, *names]), entry))
    elif area.form == "named" and isinstance(section, Table):
        for name, entry in section.items():
            if isinstance(entry, Table):
                found.append((f"{area.id}.{name}", entry))
    paths = [path for path, _ in found]
    if len(set(paths)) != len(paths):
        raise _Bad(f"two {_header(area)} entries share a key_path; edit the file by hand")
    return found


def _add(document: tomlkit.TOMLDocument, area: Area, key_path: str, value: Any) -> None:
    if area.form == "table":
        raise _Bad(f"[{area.id}] has no entries to add; its areas with entries: {REPEATED}")
    if not isinstance(value, dict):
        raise _Bad("an add's value is the new entry's fields, as an object")
    if any(path == key_path for path, _ in _entries(document, area)):
        raise _Bad(f"{key_path} is already configured")
    fields = {leaf: field for leaf, field in value.items() if field is not None}
    entry = tomlkit.table()
    entry.update(fields)
    entry.add(tomlkit.nl())  # a blank line before whatever follows, as hand-written entries have
    if area.form == "array":
        names = [str(fields.get(name, "")) for name in area.name_keys]
        if ".".join([area.id, *names]) != key_path:
            wanted = ", ".join(area.name_keys)
            raise _Bad(f"key_path must be {area.id}.<{'>.<'.join(area.name_keys)}> ({wanted})")
        section = document.get(area.id)
        if section is None:
            _section(document, area.id, tomlkit.aot())
            section = document[area.id]
        if not isinstance(section, AoT):
            raise _Bad(f"{area.id} is not written as [[{area.id}]] entries; edit the file by hand")
        section.append(entry)
        return
    name = key_path.removeprefix(f"{area.id}.")
    if name == key_path or not name:
        raise _Bad(f"key_path must be {area.id}.<name>")
    section = document.get(area.id)
    if section is None:
        _section(document, area.id, tomlkit.table(is_super_table=True))
        section = document[area.id]
    if not isinstance(section, Table):
        raise _Bad(f"{area.id} is not written as [{area.id}.<name>] tables")
    section.add(name, entry)


def _remove_entry(document: tomlkit.TOMLDocument, area: Area, key_path: str) -> None:
    if area.form == "table":
        raise _Bad(f"[{area.id}] has no entries; remove a key by its pattern")
    for index, (path, _) in enumerate(_entries(document, area)):
        if path == key_path:
            section = document[area.id]
            if isinstance(section, AoT):
                del section[index]
                if not len(section):
                    del document[area.id]
            else:
                assert isinstance(section, Table)
                del section[key_path.removeprefix(f"{area.id}.")]
            return
    raise _Bad(f"no {_header(area)} entry has this key_path")


def _section(document: tomlkit.TOMLDocument, name: str, section: Table | AoT) -> None:
    """A new top-level section, after a blank line like the ones a person leaves."""
    written = tomlkit.dumps(document)
    if written and not written.endswith("\n\n"):
        document.add(tomlkit.nl())
    document.add(name, section)


def _place(container: Entry, leaf: str, value: Any) -> None:
    """A new key goes after the table's last key, so the comments and blank lines that close the
    table (often about what follows it) stay where they were."""
    body = container.value.body if isinstance(container, Table) else container.body
    after = None
    for index, (name, item) in enumerate(body):
        if name is not None and not isinstance(item, Table | AoT):
            after = index + 1
    target = container.value if isinstance(container, Table) else container
    if after is None and body and not isinstance(container, tomlkit.TOMLDocument):
        target._insert_at(0, leaf, value)
    elif after is not None and after < len(body):
        target._insert_at(after, leaf, value)
    else:
        container.add(leaf, value)


def _header(area: Area) -> str:
    return f"[[{area.id}]]" if area.form == "array" else f"[{area.id}.<name>]"
