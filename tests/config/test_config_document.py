"""The settings document: schema over the whole catalogue, counts, classes and the fingerprint."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from forge.config import AREAS, KEYS, build_stamp, key_for, load_config
from forge.config.catalogue import Area, Key, Texts
from forge.config.document import edit_shape

FULL = """\
# every area, repeated ones twice, and names with dots in them
[server]
port = 8791
allowed_origins = ["http://192.168.1.5:5173"]

[client]
theme = "dusk"

[dictate]
styling = "casual"

[orgs."acme.io"]
browser_profile = "acme"

[orgs.solo]

[[projects]]
org = "acme.io"
name = "web.app"
path = "/srv/web"
document_roots = ["/srv/specs"]

[[projects]]
org = "solo"
name = "notes"
path = "/srv/notes"
shell = "/bin/zsh"

[terminal]
shell = "/bin/bash"

[browser]
idle_close_s = 30

[documents]
max_size_mib = 20

[log]
level = "debug"
"""

ROW_KEYS = {"path", "leaf", "group", "pattern", "kind", "value", "class", "edit"}
KINDS = {"string", "number", "bool", "list", "table", "set"}
CLASSES = {"live", "next_session", "restart", "not_read_yet"}
EDIT_KINDS = {"string", "number", "bool", "enum", "list"}
EDIT_GROUPS = {"account", "project", "slack", "model", "org"}


@pytest.fixture
def document(write_config: Callable[[str], Path]) -> dict[str, Any]:
    loaded = load_config(write_config(FULL))
    assert loaded.document is loaded.document
    return loaded.document


def rows(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {row["path"]: row for area in document["areas"] for row in area["keys"]}


def test_the_document_has_the_top_level_shape(document: dict[str, Any]) -> None:
    assert set(document) == {"version", "source", "fingerprint", "totals", "areas"}
    assert document["version"] == build_stamp().short
    assert set(document["totals"]) == {"keys", "areas"}
    assert json.loads(json.dumps(document)) == document


def test_totals_count_the_rows_and_areas(document: dict[str, Any]) -> None:
    areas = document["areas"]
    assert document["totals"] == {
        "keys": sum(len(area["keys"]) for area in areas),
        "areas": len(areas),
    }
    assert [area["id"] for area in areas] == [area.id for area in AREAS]
    for area in areas:
        assert set(area) == {"id", "name", "note", "keys"}
        assert area["note"]


def test_every_catalogue_key_has_a_row_per_instance(document: dict[str, Any]) -> None:
    counts = {key.pattern: 0 for key in KEYS}
    for row in rows(document).values():
        counts[row["pattern"]] += 1
    instances = {"table": 1, "array": 2, "named": 2}
    assert counts == {key.pattern: instances[key.area.form] for key in KEYS}


def test_every_row_fits_the_schema(document: dict[str, Any]) -> None:
    for area in document["areas"]:
        for row in area["keys"]:
            assert set(row) == ROW_KEYS
            key = key_for(row["pattern"])
            assert row["path"] == ".".join([area["id"], *row["group"], row["leaf"]])
            assert row["leaf"] == key.leaf
            assert row["kind"] in KINDS
            assert row["class"] in CLASSES
            edit = row["edit"]
            assert edit["kind"] in EDIT_KINDS
            assert isinstance(edit["required"], bool)
            assert ("allowed" in edit) == (edit["kind"] == "enum")
            assert ("bounds" in edit) == (edit["kind"] == "number")
            if key.area.form == "table":
                assert row["group"] == []
                assert "group" not in edit
            else:
                assert row["group"]
                assert edit["group"] in EDIT_GROUPS


def test_each_row_class_is_the_catalogue_class(document: dict[str, Any]) -> None:
    """G10: one catalogue is the only source of a row's class."""
    for row in rows(document).values():
        assert row["class"] == key_for(row["pattern"]).reload


def test_dotted_instance_names_keep_their_leaf_and_group(document: dict[str, Any]) -> None:
    by_path = rows(document)
    profile = by_path["orgs.acme.io.browser_profile"]
    assert (profile["leaf"], profile["group"]) == ("browser_profile", ["acme.io"])
    assert profile["pattern"] == "orgs[].browser_profile"
    assert profile["edit"] == {"kind": "string", "required": False, "group": "org"}
    roots = by_path["projects.acme.io.web.app.document_roots"]
    assert (roots["leaf"], roots["group"]) == ("document_roots", ["acme.io", "web.app"])
    assert roots["value"] == ["/srv/specs"]
    assert roots["edit"] == {"kind": "list", "required": False, "group": "project"}


def test_values_cross_as_loaded_with_defaults_for_unset_keys(document: dict[str, Any]) -> None:
    by_path = rows(document)
    assert by_path["server.port"]["value"] == 8791
    assert by_path["server.bind"]["value"] == "127.0.0.1"
    assert by_path["server.ping_interval_s"]["value"] == 15
    assert by_path["client.theme"]["value"] == "dusk"
    assert by_path["client.font"]["value"] is None
    assert by_path["orgs.solo.browser_profile"]["value"] is None
    assert by_path["projects.solo.notes.shell"]["value"] == "/bin/zsh"
    assert by_path["projects.acme.io.web.app.document_roots"]["value"] == ["/srv/specs"]
    assert by_path["projects.solo.notes.document_roots"]["value"] == []


def test_the_seed_example_row_for_server_port(document: dict[str, Any]) -> None:
    assert rows(document)["server.port"] == {
        "path": "server.port",
        "leaf": "port",
        "group": [],
        "pattern": "server.port",
        "kind": "number",
        "value": 8791,
        "class": "restart",
        "edit": {
            "kind": "number",
            "required": True,
            "bounds": {
                "integer": True,
                "min": 1,
                "max": 65535,
                "expected": "an integer from 1 to 65535",
            },
        },
    }


def test_an_enum_offers_its_names(document: dict[str, Any]) -> None:
    assert rows(document)["log.level"]["edit"] == {
        "kind": "enum",
        "allowed": ["debug", "info", "warning", "error"],
        "required": True,
    }


def test_a_set_is_edited_as_a_list_and_a_table_is_read_only() -> None:
    assert edit_shape(key_for("server.allowed_origins")) == {"kind": "list", "required": False}
    leftover = Key(Area("extra", "a table kept whole"), "env", "table", "restart", Texts(), {}, "")
    assert edit_shape(leftover) is None


def test_one_comment_byte_changes_the_fingerprint(write_config: Callable[[str], Path]) -> None:
    first = load_config(write_config(FULL))
    second = load_config(write_config(FULL.replace("# every", "#  every")))
    assert first.config == second.config
    assert first.fingerprint != second.fingerprint
    assert second.fingerprint == hashlib.sha256(second.raw).hexdigest()[:16]
    assert second.document["fingerprint"] == second.fingerprint


def test_the_same_bytes_give_the_same_document(write_config: Callable[[str], Path]) -> None:
    path = write_config(FULL)
    first, second = load_config(path), load_config(path)
    assert json.dumps(first.document) == json.dumps(second.document)


def test_loads_do_not_share_mutable_defaults(tmp_path: Path) -> None:
    first = load_config(tmp_path / "forge.toml")
    rows(first.document)["server.allowed_origins"]["value"].append("http://x")
    second = load_config(tmp_path / "forge.toml")
    assert rows(second.document)["server.allowed_origins"]["value"] == []
