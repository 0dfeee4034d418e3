"""The Formula (YAML, `schemaVersion: 1`): the recipe a variant runs, decoded strictly.

Only what a cohort attempt uses exists here: one coding atom (its argv, timeout, pinned model,
whether its sandbox has the network, what hidden folders it mounts), optional baseline checks,
and `learning.recurrenceThreshold` (read so a valid Formula decodes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

from forge.attempt.fields import Reader
from forge.attempt.plan import MAX_COMMAND_TIMEOUT_MS, Command, read_checks


@dataclass(frozen=True)
class Atom:
    id: str
    command: tuple[str, ...]
    timeout_ms: int
    model: str
    network: bool = False
    """Whether the sandboxed recipe (and its checks) may reach the network; off unless asked."""
    mounts: tuple[str, ...] = ()
    """Absolute folders the sandbox mounts read-only although it hides them (an interpreter
    under the home directory, say); never `--out`, `--source` or the cohort's folder."""


@dataclass(frozen=True)
class Formula:
    name: str
    coding: Atom
    checks: tuple[Command, ...]
    recurrence_threshold: int


def decode_formula(raw: bytes, *, file: str) -> Formula:
    """Decode Formula bytes or refuse with `<file>: <field>: <problem>`."""
    reader = Reader(file)
    try:
        document = yaml.load(raw.decode("utf-8"), Loader=_UniqueKeyLoader)
    except (UnicodeDecodeError, yaml.YAMLError) as error:
        raise reader.refuse("", f"not a YAML document: {error}") from None
    top = reader.obj(
        document,
        "",
        required={"schemaVersion", "name", "atoms"},
        optional={"checks", "learning"},
    )
    reader.integer(top["schemaVersion"], "schemaVersion", lo=1, hi=1)
    name = reader.nonblank(top["name"], "name", max_chars=200)
    atoms = reader.array(top["atoms"], "atoms", lo=1)
    coding = [_atom(reader, value, f"atoms[{i}]") for i, value in enumerate(atoms)]
    reader.unique([atom.id for atom in coding], "atoms", "id")
    if len(coding) > 1:
        reader.note("atoms", f"must hold exactly one coding atom, got {len(coding)}")
    checks = read_checks(reader, top.get("checks", []), "checks")
    threshold = 3
    if "learning" in top:
        learning = reader.obj(
            top["learning"], "learning", required=(), optional={"recurrenceThreshold"}
        )
        if "recurrenceThreshold" in learning:
            threshold = reader.integer(
                learning["recurrenceThreshold"], "learning.recurrenceThreshold", lo=1, hi=50
            )
    reader.check()
    return Formula(name=name, coding=coding[0], checks=checks, recurrence_threshold=threshold)


def _atom(reader: Reader, value: object, path: str) -> Atom:
    atom = reader.obj(
        value,
        path,
        required={"id", "role", "command", "timeoutMs", "model"},
        optional={"network", "mounts"},
    )
    reader.one_of(atom["role"], f"{path}.role", ("coding",))
    return Atom(
        id=reader.nonblank(atom["id"], f"{path}.id", max_chars=64),
        command=reader.argv(atom["command"], f"{path}.command"),
        timeout_ms=reader.integer(
            atom["timeoutMs"], f"{path}.timeoutMs", lo=1, hi=MAX_COMMAND_TIMEOUT_MS
        ),
        model=reader.nonblank(atom["model"], f"{path}.model", max_chars=200),
        network=reader.boolean(atom["network"], f"{path}.network") if "network" in atom else False,
        mounts=tuple(
            reader.absolute_path(item, f"{path}.mounts[{i}]")
            for i, item in enumerate(reader.array(atom.get("mounts", []), f"{path}.mounts"))
        ),
    )


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that refuses a mapping with a repeated key (PyYAML keeps the last silently)."""


def _construct_unique_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    result: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in result:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        result[key] = loader.construct_object(value_node, deep=True)
    return result


_UniqueKeyLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_unique_mapping
)
