"""Generated forge.toml files (written with tomlkit) load to exactly what was written, and a wrong
value anywhere is refused on its own line."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
import tomlkit
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from forge.config import AREAS, KEYS, ConfigError, key_for, parse_config
from forge.config.catalogue import (
    Choice,
    Flag,
    Integer,
    Key,
    Seconds,
    Text,
    Texts,
    keys_of,
)

CHARACTERS = st.characters(blacklist_categories=("Cs", "Cc"))
TEXT = st.text(CHARACTERS, min_size=1, max_size=12)


def valid(key: Key) -> st.SearchStrategy[Any]:
    rule = key.rule
    if isinstance(rule, Text):
        if rule.pattern is None:
            return TEXT
        return st.from_regex(rule.pattern, fullmatch=True, alphabet=CHARACTERS)
    if isinstance(rule, Integer):
        return st.integers(rule.low, rule.high)
    if isinstance(rule, Seconds):
        fractions = st.floats(0.001, 1e6, allow_nan=False, allow_infinity=False)
        return st.integers(1, 10**6) | fractions
    if isinstance(rule, Flag):
        return st.booleans()
    if isinstance(rule, Choice):
        return st.sampled_from(rule.names)
    assert isinstance(rule, Texts)
    return st.lists(TEXT, max_size=3)


def wrong(key: Key) -> object:
    """A value the key's rule refuses that appears nowhere else in a generated file."""
    return 987654321 if isinstance(key.rule, Text | Texts | Choice | Flag) else "wrong-value"


@st.composite
def entry(draw: st.DrawFn, keys: tuple[Key, ...]) -> dict[str, Any]:
    """One table: required keys always, the others only sometimes."""
    written = {}
    for key in keys:
        if (key.required and key.default is None) or draw(st.booleans()):
            written[key.leaf] = draw(valid(key))
    return written


@st.composite
def config_files(draw: st.DrawFn) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for area in AREAS:
        keys = keys_of(area)
        if area.form == "table":
            if draw(st.booleans()):
                data[area.id] = draw(entry(keys))
        elif area.form == "array":
            entries = draw(st.lists(entry(keys), max_size=3))
            unique = {tuple(e[name] for name in area.name_keys): e for e in entries}
            if unique:
                data[area.id] = list(unique.values())
        else:
            named = draw(st.dictionaries(valid(key_for("projects[].org")), entry(keys), max_size=3))
            if named:
                data[area.id] = named
    return _within_server_rules(data)


def _within_server_rules(data: dict[str, Any]) -> dict[str, Any]:
    """The rules between [server] keys: auth "none" on loopback only, TLS files in pairs."""
    server = data.get("server", {})
    if server.get("auth") == "none":
        server["bind"] = "127.0.0.1"
    if ("tls_cert" in server) != ("tls_key" in server):
        server.pop("tls_cert", None)
        server.pop("tls_key", None)
    return data


def load(text: str) -> Any:
    with tempfile.TemporaryDirectory() as folder:
        return parse_config(text.encode(), Path(folder) / "forge.toml")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(config_files())
def test_a_generated_file_loads_to_what_was_written(data: dict[str, Any]) -> None:
    loaded = load(tomlkit.dumps(data))
    rows = [row for area in loaded.document["areas"] for row in area["keys"]]
    assert loaded.document["totals"]["keys"] == len(rows)
    for row in rows:
        key = key_for(row["pattern"])
        area = data.get(key.area.id, {})
        if key.area.form == "table":
            source = area
        elif key.area.form == "array":
            source = next(
                e for e in area if [str(e[name]) for name in key.area.name_keys] == row["group"]
            )
        else:
            (source,) = (value for name, value in area.items() if [name] == row["group"])
        assert row["value"] == source.get(key.leaf, key.default)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(config_files(), st.sampled_from(KEYS), st.data())
def test_a_wrong_value_is_refused_on_its_own_line(
    data: dict[str, Any], key: Key, draw: st.DataObject
) -> None:
    area = key.area
    if area.form == "table":
        data.setdefault(area.id, {})[key.leaf] = wrong(key)
        shown = f"{area.id}.{key.leaf}"
    elif area.form == "array":
        entries = data.setdefault(area.id, [])
        if not entries:
            entries.append({"org": "o", "name": "n", "path": "/p"})
        index = draw.draw(st.integers(0, len(entries) - 1))
        entries[index][key.leaf] = wrong(key)
        shown = f"{area.id}[{index}].{key.leaf}"
    else:
        orgs = data.setdefault(area.id, {})
        if not orgs:
            orgs["o"] = {}
        name = draw.draw(st.sampled_from(sorted(orgs)))
        orgs[name][key.leaf] = wrong(key)
        shown = None
    text = tomlkit.dumps(data)
    marker = str(wrong(key))
    (line,) = [n for n, line in enumerate(text.splitlines(), 1) if marker in line]
    with pytest.raises(ConfigError) as refused:
        load(text)
    assert refused.value.line == line
    if shown is not None:
        assert refused.value.key == shown
