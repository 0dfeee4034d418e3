"""Every refusal names the file, the line and the key, and is a UserError (exit code 2)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from forge.config import ConfigError, load_config
from forge.errors import UserError

REFUSALS = [
    # (file text, line, key, why)
    ('# forge\n[server]\nbind = "127.0.0.1"\nport = "x"\n', 4, "server.port",
     'expected an integer from 1 to 65535, got "x"'),
    ("[server]\nport = 0\n", 2, "server.port", "expected an integer from 1 to 65535, got 0"),
    ("[server]\nport = 70000\n", 2, "server.port",
     "expected an integer from 1 to 65535, got 70000"),
    ("[server]\nport = true\n", 2, "server.port", "expected an integer from 1 to 65535, got true"),
    ("[server]\nport = 8790.5\n", 2, "server.port",
     "expected an integer from 1 to 65535, got 8790.5"),
    ("[server]\nport = 1979-05-27\n", 2, "server.port",
     'expected an integer from 1 to 65535, got "1979-05-27"'),
    ("server.port = -1\n", 1, "server.port", "expected an integer from 1 to 65535, got -1"),
    ("server = { bind = '::1', port = 'p' }\n", 1, "server.port",
     'expected an integer from 1 to 65535, got "p"'),
    ('[server]\nbind = ""\n', 2, "server.bind", 'expected a non-empty string, got ""'),
    ("[server]\nping_interval_s = 0\n", 2, "server.ping_interval_s",
     "expected a number of seconds above 0, got 0"),
    ('[server]\nwatchdog_s = "240"\n', 2, "server.watchdog_s",
     'expected a number of seconds above 0, got "240"'),
    ('[server]\nallowed_origins = "http://a"\n', 2, "server.allowed_origins",
     'expected a list of non-empty strings, got "http://a"'),
    ('[server]\nport = 1\nallowed_origins = [\n  "http://a",\n  3,\n]\n', 3,
     "server.allowed_origins", 'expected a list of non-empty strings, got ["http://a", 3]'),
    ("[client]\nmark = 3\n", 2, "client.mark", "expected a non-empty string, got 3"),
    ('[dictate]\nenabled = "yes"\n', 2, "dictate.enabled", 'expected true or false, got "yes"'),
    ('[log]\nlevel = "verbose"\n', 2, "log.level",
     'expected one of "debug", "info", "warning", "error", got "verbose"'),
    ("[browser]\nidle_close_s = -5\n", 2, "browser.idle_close_s",
     "expected a number of seconds above 0, got -5"),
    ("[documents]\nmax_size_mib = 0\n", 2, "documents.max_size_mib",
     "expected an integer from 1 to 1024, got 0"),
    ('server = "x"\n', 1, "server", 'expected a table, got "x"'),
    ("[sever]\nport = 1\n", 1, "sever",
     "unknown key; forge.toml has agent, browser, client, dictate, documents, lab, log, orgs, "
     "projects, server, terminal, tts"),
    ("[server]\nport = 1\nprot = 2\n", 3, "server.prot",
     "unknown key; [server] has allowed_origins, auth, bind, ping_interval_s, ping_timeout_s, "
     "port, tls_cert, tls_key, watchdog_s, write_timeout_s"),
    ("[terminal]\nshell = '/bin/sh'\n\n[server]\nprot = 2\n", 5, "server.prot",
     "unknown key; [server] has allowed_origins, auth, bind, ping_interval_s, ping_timeout_s, "
     "port, tls_cert, tls_key, watchdog_s, write_timeout_s"),
    ('[[projects]]\norg = "a"\nname = "b"\n', 1, "projects[0].path",
     "missing; every entry needs it"),
    ('[[projects]]\norg = "a"\nname = "b"\npath = "/"\n\n[[projects]]\nname = "c"\npath = "/"\n',
     6, "projects[1].org", "missing; every entry needs it"),
    ('[[projects]]\norg = "a/b"\nname = "c"\npath = "/"\n', 2, "projects[0].org",
     "expected a name without '/' or surrounding spaces, got \"a/b\""),
    ('[[projects]]\norg = "a"\nname = "c"\npath = "/"\nshel = "sh"\n', 5, "projects[0].shel",
     "unknown key; [projects] has browser_profile, document_roots, name, org, path, shell"),
    ('[[projects]]\norg = "a"\nname = "c"\npath = "/"\nbrowser_profile = "../x"\n', 5,
     "projects[0].browser_profile",
     "expected a profile name of letters, digits, '.', '_' or '-', got \"../x\""),
    ('[[projects]]\norg = "a"\nname = "c"\npath = "/x"\n\n'
     '[[projects]]\norg = "a"\nname = "c"\npath = "/y"\n', 8, "projects[1].name",
     "a/c is configured twice"),
    ('[projects]\norg = "a"\n', 1, "projects", 'expected [[projects]] entries, got {"org": "a"}'),
    ('[orgs."a/b"]\nbrowser_profile = "x"\n', 1, 'orgs."a/b"',
     "expected a name without '/' or surrounding spaces"),
    ('[orgs."acme.io"]\nbrowser = "x"\n', 2, 'orgs."acme.io".browser',
     "unknown key; [orgs] has browser_profile"),
    ('[orgs."\u00e9t\u00e9"]\nbrowser = "x"\n', 2, 'orgs."\u00e9t\u00e9".browser',
     "unknown key; [orgs] has browser_profile"),
    ('[orgs]\nacme = "x"\n', 2, "orgs.acme", 'expected a table, got "x"'),
    ('[[orgs]]\nbrowser_profile = "x"\n', 1, "orgs",
     'expected [orgs.<name>] tables, got [{"browser_profile": "x"}]'),
]  # fmt: skip


@pytest.mark.parametrize(("text", "line", "key", "why"), REFUSALS)
def test_a_bad_file_is_refused_naming_line_and_key(
    write_config: Callable[[str], Path], text: str, line: int, key: str, why: str
) -> None:
    path = write_config(text)
    with pytest.raises(ConfigError) as refused:
        load_config(path)
    assert str(refused.value) == f"{path} line {line}: {key}: {why}"
    assert (refused.value.path, refused.value.line, refused.value.key) == (path, line, key)


def test_a_syntax_error_gives_the_parser_message_with_its_line_and_key(
    write_config: Callable[[str], Path],
) -> None:
    path = write_config('[server]\nbind = "127.0.0.1"\nport = 80x0\n')
    with pytest.raises(ConfigError) as refused:
        load_config(path)
    assert str(refused.value) == (
        f"{path} line 3: server.port: "
        "Expected newline or end of document after a statement (at line 3, column 10)"
    )
    assert (refused.value.line, refused.value.key) == (3, "server.port")


def test_a_syntax_error_on_a_header_names_the_line(write_config: Callable[[str], Path]) -> None:
    path = write_config("[server]\nport = 1\n[client\n")
    with pytest.raises(ConfigError) as refused:
        load_config(path)
    assert str(refused.value).startswith(f"{path} line 3: ")
    assert refused.value.line == 3


def test_a_syntax_error_in_an_entry_names_the_entry(write_config: Callable[[str], Path]) -> None:
    path = write_config(
        '[[projects]]\norg = "a"\nname = "b"\npath = "/"\n\n'
        '[[projects]]\norg = "a"\nname = "c"\npath = /srv\n'
    )
    with pytest.raises(ConfigError) as refused:
        load_config(path)
    assert (refused.value.line, refused.value.key) == (9, "projects[1].path")
    assert str(refused.value).startswith(f"{path} line 9: projects[1].path: Invalid value")


def test_a_syntax_error_at_the_end_names_the_last_line(write_config: Callable[[str], Path]) -> None:
    path = write_config('[client]\ntheme = "dusk\n')
    with pytest.raises(ConfigError) as refused:
        load_config(path)
    assert str(refused.value).startswith(f"{path} line 2: client.theme: ")


def test_a_duplicate_table_is_a_syntax_error(write_config: Callable[[str], Path]) -> None:
    path = write_config("[server]\nport = 1\n\n[server]\nbind = 'x'\n")
    with pytest.raises(ConfigError) as refused:
        load_config(path)
    assert refused.value.line == 4


def test_text_that_is_not_utf8_is_refused_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "forge.toml"
    path.write_bytes(b"[client]\ntheme = '\xff'\n")
    with pytest.raises(ConfigError) as refused:
        load_config(path)
    assert str(refused.value) == f"{path} line 2: not UTF-8 text (byte 18)"


def test_an_unreadable_path_is_refused_naming_it(tmp_path: Path) -> None:
    folder = tmp_path / "forge.toml"
    folder.mkdir()
    with pytest.raises(ConfigError) as refused:
        load_config(folder)
    assert str(refused.value) == f"{folder}: cannot read: Is a directory"


def test_a_refusal_is_a_user_error_with_exit_code_2(write_config: Callable[[str], Path]) -> None:
    with pytest.raises(UserError) as refused:
        load_config(write_config("[server]\nport = 0\n"))
    assert refused.value.exit_code == 2


def test_the_line_is_found_deep_in_a_long_file(write_config: Callable[[str], Path]) -> None:
    """Multi-line arrays on the way do not throw the bisection off."""
    entries = [
        f'[[projects]]\norg = "o"\nname = "p{index}"\npath = "/p"\n'
        f'document_roots = [\n  "/a",\n  "/b",\n]\nshell = "{"" if index == 37 else "/bin/sh"}"\n'
        for index in range(60)
    ]
    path = write_config("\n".join(entries))
    with pytest.raises(ConfigError) as refused:
        load_config(path)
    assert refused.value.line == 37 * 10 + 9
    assert refused.value.key == "projects[37].shell"


@pytest.mark.parametrize(
    ("text", "line", "key"),
    [
        ('[server]\nport = 8790\n\nallowed_origins = [\n[[projects]]\norg = "a"\nname = "b"\n'
         'path = "/"\n', 4, "server.allowed_origins"),
        ('[server]\nallowed_origins = [\n  "http://a",\n  "http://b"\nport = 3\n', 2,
         "server.allowed_origins"),
        ('[server]\nallowed_origins = ["http://a",\n', 2, "server.allowed_origins"),
        ("[server]\nbind = '''\n127.0.0.1\n\n[client]\ntheme = 'x'\n", 2, "server.bind"),
        ('[client]\ntheme = "dusk\n\n\n', 2, "client.theme"),
        ('[[projects]]\norg = "a"\nname = "b"\npath = "/"\ndocument_roots = [\n  "/a",\n'
         '  /b,\n]\n', 5, "projects[0].document_roots"),
    ],
)  # fmt: skip
def test_a_value_left_open_is_named_where_its_key_is(
    write_config: Callable[[str], Path], text: str, line: int, key: str
) -> None:
    """Issue 13 item 14: tomllib reports an unclosed array (or string, or a bad element) where it
    gave up, lines below the key; the refusal names the key's own line and the key, not the next
    table it ran into (`line 5: projects[0]` for an unclosed `allowed_origins = [` on line 4)."""
    path = write_config(text)
    with pytest.raises(ConfigError) as refused:
        load_config(path)
    assert (refused.value.line, refused.value.key) == (line, key)
    assert str(refused.value).startswith(f"{path} line {line}: {key}: ")
