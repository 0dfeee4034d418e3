"""The Formula (YAML, `schemaVersion: 1`): the recipe a variant runs, decoded strictly.

Only what the Lab uses exists here: one coding atom (its argv, or a `kind: claude-code` agent
configuration, forge/attempt/agent_atom.py; timeout, pinned model, whether its sandbox has the
network or only an allow-list of destinations, which of the caller's variables it is given,
what hidden folders it mounts), an optional trailing `role: learn`
atom (the command `forge learn` runs; never configured silently), optional baseline checks, and
`learning.recurrenceThreshold` (the failure streak that queues a learn request).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import yaml

from forge.attempt.agent_atom import (
    AGENT_FIELDS,
    DEFAULT_PASS_ENV,
    KIND,
    Agent,
    base_url_authority,
    read_agent,
)
from forge.attempt.egress.policy import BadDestination, entry_problem, parse_authority
from forge.attempt.fields import Reader
from forge.attempt.plan import MAX_COMMAND_TIMEOUT_MS, Command, read_checks


@dataclass(frozen=True)
class Atom:
    id: str
    command: tuple[str, ...]
    timeout_ms: int
    model: str
    network: bool = False
    """Whether the sandboxed recipe (and its checks) may reach the public network; off unless
    asked."""
    egress: tuple[str, ...] = ()
    """The only `host:port` pairs the sandboxed recipe (and its checks) may reach, through the
    egress proxy (an allow-list: the attempt stays sealed); never with `network`."""
    pass_env: tuple[str, ...] = ()
    """The caller's variables the coding step is given (an API key): in its process's
    environment only, never in a file of the recipe's or the attempt record."""
    mounts: tuple[str, ...] = ()
    """Absolute folders the sandbox mounts read-only although it hides them (an interpreter
    under the home directory, say); never `--out`, `--source` or the cohort's folder."""
    agent: Agent | None = None
    """A `kind: claude-code` atom's configuration: forge runs the Claude Code CLI with it, and
    `command` is empty."""


@dataclass(frozen=True)
class LearnAtom:
    """The meta harness: evidence JSON on stdin, one proposal JSON object on stdout."""

    id: str
    command: tuple[str, ...]
    timeout_ms: int


MAX_EGRESS_ENTRIES = 16
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
LEARN_TIMEOUT_MAX_MS = 900_000
"""The longest timeout a learn atom may ask for (15 minutes); a longer one is refused."""
DEFAULT_RECURRENCE_THRESHOLD = 3


@dataclass(frozen=True)
class Formula:
    name: str
    coding: Atom
    checks: tuple[Command, ...]
    recurrence_threshold: int
    learn: LearnAtom | None = None


def decode_formula(raw: bytes, *, file: str) -> Formula:
    """Decode Formula bytes or refuse with `<file>: <field>: <problem>`."""
    reader = Reader(file)
    document = load_yaml(raw, file=file)
    top = reader.obj(
        document,
        "",
        required={"schemaVersion", "name", "atoms"},
        optional={"checks", "learning"},
    )
    reader.integer(top["schemaVersion"], "schemaVersion", lo=1, hi=1)
    name = reader.nonblank(top["name"], "name", max_chars=200)
    atoms = reader.array(top["atoms"], "atoms", lo=1)
    learn: LearnAtom | None = None
    if atoms and isinstance(atoms[-1], dict) and atoms[-1].get("role") == "learn":
        learn = _learn_atom(reader, atoms[-1], f"atoms[{len(atoms) - 1}]")
        atoms = atoms[:-1]
    coding = [_atom(reader, value, f"atoms[{i}]") for i, value in enumerate(atoms)]
    reader.unique([atom.id for atom in coding] + ([learn.id] if learn else []), "atoms", "id")
    if len(coding) != 1 and not reader.failed("atoms"):
        reader.note("atoms", f"must hold exactly one coding atom, got {len(coding)}")
    checks = read_checks(reader, top.get("checks", []), "checks")
    threshold = DEFAULT_RECURRENCE_THRESHOLD
    if "learning" in top:
        learning = reader.obj(
            top["learning"], "learning", required=(), optional={"recurrenceThreshold"}
        )
        if "recurrenceThreshold" in learning:
            threshold = reader.integer(
                learning["recurrenceThreshold"], "learning.recurrenceThreshold", lo=1, hi=50
            )
    reader.check()
    return Formula(
        name=name, coding=coding[0], checks=checks, recurrence_threshold=threshold, learn=learn
    )


def _atom(reader: Reader, value: object, path: str) -> Atom:
    agent = isinstance(value, dict) and "kind" in value
    common = {"network", "egress", "passEnv", "mounts"}
    atom = reader.obj(
        value,
        path,
        required={"id", "role", "timeoutMs", "model", *(("kind",) if agent else ("command",))},
        optional=common | AGENT_FIELDS if agent else common | {"kind"},  # kind absent: a command
    )
    if atom["role"] == "learn":
        reader.note(f"{path}.role", "a learn atom must be the last atom")
    else:
        reader.one_of(atom["role"], f"{path}.role", ("coding",))
    if "network" in atom and "egress" in atom:
        reader.note(
            f"{path}.egress",
            f"atom {atom['id']!r} names both network and egress: choose the public network "
            "(network: true) or only the listed destinations (egress)",
        )
    config = None
    if agent:
        reader.one_of(atom["kind"], f"{path}.kind", (KIND,))
        config = read_agent(reader, atom, path)
    if config is not None and atom.get("network") is True:
        reader.note(
            f"{path}.network",
            "a claude-code atom reaches only its model's API (egress, by default baseUrl's "
            "host:port), never the public network",
        )
    egress: tuple[str, ...] = ()
    if "egress" in atom:
        egress = _egress(reader, atom["egress"], f"{path}.egress")
    elif config is not None:
        egress = _egress(reader, [base_url_authority(config.base_url)], f"{path}.baseUrl")
    pass_env = DEFAULT_PASS_ENV if config is not None and "passEnv" not in atom else None
    return Atom(
        id=reader.nonblank(atom["id"], f"{path}.id", max_chars=64),
        command=() if agent else reader.argv(atom["command"], f"{path}.command"),
        timeout_ms=reader.integer(
            atom["timeoutMs"], f"{path}.timeoutMs", lo=1, hi=MAX_COMMAND_TIMEOUT_MS
        ),
        model=reader.nonblank(atom["model"], f"{path}.model", max_chars=200),
        network=reader.boolean(atom["network"], f"{path}.network") if "network" in atom else False,
        egress=egress,
        pass_env=pass_env
        or tuple(
            reader.matching(item, f"{path}.passEnv[{i}]", _ENV_NAME)
            for i, item in enumerate(reader.array(atom.get("passEnv", []), f"{path}.passEnv"))
        ),
        mounts=tuple(
            reader.absolute_path(item, f"{path}.mounts[{i}]")
            for i, item in enumerate(reader.array(atom.get("mounts", []), f"{path}.mounts"))
        ),
        agent=config,
    )


def _egress(reader: Reader, value: object, path: str) -> tuple[str, ...]:
    """The allow-list, each entry `host:port` in canonical form (a name lowercased)."""
    entries: list[str] = []
    for i, item in enumerate(reader.array(value, path, lo=1, hi=MAX_EGRESS_ENTRIES)):
        text = reader.string(item, f"{path}[{i}]")
        try:
            dest = parse_authority(text)
        except BadDestination as error:
            reader.note(f"{path}[{i}]", str(error))
            entries.append(text)
            continue
        problem = entry_problem(dest)
        if problem is not None:
            reader.note(f"{path}[{i}]", f"{text!r}: {problem}")
        entries.append(str(dest))
    reader.unique(entries, path, "destination")
    return tuple(entries)


def _learn_atom(reader: Reader, value: object, path: str) -> LearnAtom:
    atom = reader.obj(value, path, required={"id", "role", "command", "timeoutMs"})
    return LearnAtom(
        id=reader.nonblank(atom["id"], f"{path}.id", max_chars=64),
        command=reader.argv(atom["command"], f"{path}.command"),
        timeout_ms=reader.integer(
            atom["timeoutMs"], f"{path}.timeoutMs", lo=1, hi=LEARN_TIMEOUT_MAX_MS
        ),
    )


def load_yaml(raw: bytes, *, file: str) -> Any:
    """The YAML document with duplicate keys refused (what `decode_formula` reads)."""
    try:
        return yaml.load(raw.decode("utf-8"), Loader=_UniqueKeyLoader)
    except (UnicodeDecodeError, yaml.YAMLError) as error:
        raise Reader(file).refuse("", f"not a YAML document: {error}") from None


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
