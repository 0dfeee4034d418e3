"""Edits applied with tomlkit: the whole file is compared, so comments, blank lines and order are
checked, not sampled."""

from __future__ import annotations

from pathlib import Path

import pytest

from forge.config import load_config, parse_config
from forge.config.edits import EditRefused, apply_edits
from forge.wire.settings import Edit

BEFORE = """\
# forge.toml of a workstation

[server]
# the socket
port = 8790  # the default
allowed_origins = ["http://a.example"]

[[projects]]
org = "acme"   # the org
name = "web"
path = "/srv/web"

# the notes live elsewhere

[[projects]]
org = "acme"
name = "notes"
path = "/srv/notes"

[orgs.acme]
browser_profile = "acme"

[orgs.solo]

[log]
level = "info"  # quiet
"""


def edit(op: str, area: str, key_path: str, pattern: str = "", value: object = None) -> Edit:
    return Edit(op=op, area=area, key_path=key_path, pattern=pattern, value=value)  # type: ignore[arg-type]


def test_set_add_and_remove_keep_every_comment_blank_line_and_order() -> None:
    after = apply_edits(
        BEFORE,
        [
            edit("set", "server", "server.port", "server.port", 8791),
            edit("set", "projects", "projects.acme.web.shell", "projects[].shell", "/bin/zsh"),
            edit("set", "orgs", "orgs.solo.browser_profile", "orgs[].browser_profile", "solo"),
            edit("set", "documents", "documents.max_size_mib", "documents.max_size_mib", 20),
            edit(
                "add",
                "projects",
                "projects.acme.api",
                value={"org": "acme", "name": "api", "path": "/srv/api"},
            ),
            edit("add", "orgs", "orgs.beta", value={"browser_profile": "beta"}),
            edit("remove", "server", "server.allowed_origins", "server.allowed_origins"),
            edit("remove", "projects", "projects.acme.notes"),
        ],
    )
    assert (
        after
        == """\
# forge.toml of a workstation

[server]
# the socket
port = 8791  # the default

[[projects]]
org = "acme"   # the org
name = "web"
path = "/srv/web"
shell = "/bin/zsh"

# the notes live elsewhere

[[projects]]
org = "acme"
name = "api"
path = "/srv/api"

[orgs.acme]
browser_profile = "acme"

[orgs.solo]
browser_profile = "solo"

[orgs.beta]
browser_profile = "beta"

[log]
level = "info"  # quiet

[documents]
max_size_mib = 20
"""
    )
    parse_config(after.encode(), Path("/x/forge.toml"))


def test_a_null_set_unsets_an_optional_key_and_a_rename_is_a_set_of_a_name() -> None:
    after = apply_edits(
        BEFORE,
        [
            edit("set", "orgs", "orgs.acme.browser_profile", "orgs[].browser_profile", None),
            edit("set", "projects", "projects.acme.web.name", "projects[].name", "site"),
        ],
    )
    assert 'browser_profile = "acme"' not in after
    assert 'name = "site"' in after
    assert after.count("\n") == BEFORE.count("\n") - 1


def test_names_with_dots_are_found_by_the_documents_own_path(tmp_path: Path) -> None:
    text = (
        '[orgs."acme.io"]\nbrowser_profile = "a"\n\n[[projects]]\norg = "acme.io"\n'
        'name = "web.app"\npath = "/srv"\n'
    )
    path = tmp_path / "forge.toml"
    path.write_text(text)
    rows = {
        row["path"]: row for area in load_config(path).document["areas"] for row in area["keys"]
    }
    key_path = "projects.acme.io.web.app.path"
    assert rows[key_path]["pattern"] == "projects[].path"
    after = apply_edits(text, [edit("set", "projects", key_path, "projects[].path", "/else")])
    assert 'path = "/else"' in after
    after = apply_edits(text, [edit("remove", "orgs", "orgs.acme.io")])
    assert "browser_profile" not in after


@pytest.mark.parametrize(
    ("change", "reason", "words"),
    [
        (edit("set", "nowhere", "nowhere.x", "nowhere.x", 1), "invalid", "no area `nowhere`"),
        (edit("set", "server", "server.x", "server.x", 1), "invalid", "no key `server.x`"),
        (edit("set", "client", "server.port", "server.port", 1), "invalid", "not a key of area"),
        (edit("set", "server", "server.portt", "server.port", 1), "invalid", "key_path must be"),
        (edit("set", "server", "server.port", "server.port", None), "refused", "is required"),
        (edit("remove", "log", "log.level", "log.level"), "refused", "is required"),
        (
            edit("set", "projects", "projects.acme.api.path", "projects[].path", "/p"),
            "invalid",
            "no [[projects]] entry",
        ),
        (
            edit(
                "add",
                "projects",
                "projects.acme.web",
                value={"org": "acme", "name": "web", "path": "/p"},
            ),
            "invalid",
            "already configured",
        ),
        (
            edit("add", "projects", "projects.acme.x", value={"org": "acme", "name": "y"}),
            "invalid",
            "key_path must be projects.<org>.<name>",
        ),
        (edit("add", "server", "server.x", value={}), "invalid", "has no entries"),
        (edit("add", "orgs", "orgs.z", "orgs[].browser_profile", {}), "invalid", "leaves pattern"),
        (edit("remove", "orgs", "orgs.nobody"), "invalid", "no [orgs.<name>] entry"),
    ],
)
def test_an_edit_that_does_not_describe_the_file_is_refused_by_number(
    change: Edit, reason: str, words: str
) -> None:
    with pytest.raises(EditRefused) as refused:
        apply_edits(BEFORE, [edit("set", "log", "log.level", "log.level", "debug"), change])
    assert refused.value.reason == reason
    assert refused.value.message.startswith(f"edit 2 ({change.op} {change.key_path}): ")
    assert words in refused.value.message
    assert refused.value.key_path == change.key_path
