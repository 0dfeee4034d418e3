"""The origin rule (T04-T10, O-T5) as a table: what a browser may present, and what it may not."""

from __future__ import annotations

import pytest

from forge.wire.origin import OriginPolicy, parse_origin

POLICY = OriginPolicy.build(
    bind="127.0.0.1",
    port=8790,
    allowed_origins=["https://forge.example.org", "http://10.0.0.5:3000"],
)

ALLOWED = [
    None,  # T04: no Origin header, a native client
    "tauri://localhost",
    "http://tauri.localhost",
    "https://tauri.localhost",
    "HTTPS://TAURI.LOCALHOST",
    "http://127.0.0.1:8790",  # T06: the server's own
    "http://localhost:5173",  # T07
    "http://localhost",
    "https://localhost:8443",
    "https://127.0.0.2",
    "http://127.255.255.254:1",
    "http://[::1]:3000",
    "https://[::1]",
    "http://[0:0:0:0:0:0:0:1]:80",
    "http://[::ffff:127.0.0.1]:9000",
    "http://LOCALHOST:5173",
    "https://forge.example.org",  # T08: listed
    "https://forge.example.org:443",  # the default port normalises away
    "http://10.0.0.5:3000",
]

REFUSED = [
    "null",
    "",
    "localhost",
    "http://localhost.evil.com",
    "http://[::1].evil.com",
    "http://127.0.0.1.nip.io",
    "http://localhost:abc",
    "http://localhost:",
    "http://localhost:99999",
    "http://localhost:0",
    "http://user@localhost",
    "http://localhost@evil.com",
    "http://evil.com#@localhost",
    "http://localhost/path",
    "http://foo.localhost",
    "http://localhost.",
    "ftp://localhost",
    "ws://localhost",
    "tauri://evil",
    "http://::1",
    "http://[::2]:3000",
    "http://[127.0.0.1]",
    "http://127.1",
    "http://2130706433",
    "http://0.0.0.0:8790",
    "http://192.168.1.2:8790",
    "https://127.0.0.1.evil.com",
    "https://127.0.0.1:8790:1",
    "https://forge.example.org:8443",  # T08: listed origin on another port
    "http://forge.example.org",  # listed origin on another scheme
    "http://10.0.0.5:3001",
    "https://10.0.0.5:3000",
    "https://127.0.0.1:8790x",
]


@pytest.mark.parametrize("origin", ALLOWED)
def test_allowed(origin: str | None) -> None:
    assert POLICY.allows(origin)


@pytest.mark.parametrize("origin", REFUSED)
def test_refused(origin: str) -> None:
    assert not POLICY.allows(origin)


def test_the_table_is_at_least_thirty_origins() -> None:
    assert len(ALLOWED) + len(REFUSED) >= 30


def test_the_own_origin_is_http_only_and_follows_the_bind() -> None:
    policy = OriginPolicy.build(bind="192.168.1.2", port=9000, allowed_origins=[])
    assert policy.allows("http://192.168.1.2:9000")
    assert not policy.allows("https://192.168.1.2:9000")
    assert not policy.allows("http://192.168.1.2:9001")


def test_an_ipv6_bind_has_its_own_origin_in_brackets() -> None:
    policy = OriginPolicy.build(bind="fd00::5", port=9000, allowed_origins=[])
    assert policy.allows("http://[fd00::5]:9000")


def test_an_unparseable_configured_origin_matches_nothing() -> None:
    policy = OriginPolicy.build(bind="127.0.0.1", port=1, allowed_origins=["not an origin"])
    assert policy.allowed == frozenset()


def test_parse_normalises_case_and_default_ports() -> None:
    parsed = parse_origin("HTTP://Example.ORG:80")
    assert parsed is not None
    assert str(parsed) == "http://example.org"
