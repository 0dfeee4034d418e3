"""The egress policy, headers, log and the launcher's reading of bubblewrap: pure, no sockets
(the proxy's tests send the traffic)."""

from __future__ import annotations

import ipaddress

import pytest

from forge.attempt.egress.headers import request_headers, response_headers
from forge.attempt.egress.log import MAX_ENTRIES, EgressLog
from forge.attempt.egress.policy import (
    BadDestination,
    Decision,
    Destination,
    address_problem,
    allow_list_policy,
    entry_problem,
    judge,
    parse_authority,
    parse_proxy_url,
    public_policy,
    screen,
)
from forge.attempt.egress.port import child_pid

ip = ipaddress.ip_address
PUBLIC = ip("1.2.3.4")
"""A made-up global address: only ever judged here, never sent a packet."""


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("127.0.0.1", "loopback"),
        ("127.9.9.9", "loopback"),
        ("::1", "loopback"),
        ("10.1.2.3", "private"),
        ("172.16.0.1", "private"),
        ("192.168.1.10", "private"),
        ("169.254.169.254", "link-local"),
        ("fe80::1", "link-local"),
        ("100.64.0.1", "shared (carrier-grade NAT)"),
        ("fd12:3456::1", "private"),
        ("224.0.0.1", "multicast"),
        ("ff02::1", "multicast"),
        ("0.0.0.0", "unspecified"),
        ("::", "unspecified"),
        ("255.255.255.255", "private"),
        ("240.0.0.1", "private"),
        ("::ffff:127.0.0.1", "private"),
        ("64:ff9b::7f00:1", "reserved"),
        ("fec0::1", "site-local"),
    ],
)
def test_an_address_off_the_public_network_is_named(address: str, kind: str) -> None:
    assert address_problem(ip(address)) == f"{kind} address {ip(address)}"


def test_a_6to4_address_is_judged_by_the_address_it_carries() -> None:
    lan = ip("2002:c0a8:10a::1")  # 6to4 of 192.168.1.10
    assert address_problem(lan) == f"6to4 address {lan} of a private address 192.168.1.10"
    assert address_problem(ip("2002:102:304::1")) is None


@pytest.mark.parametrize("address", ["1.2.3.4", "2606:4700::1"])
def test_a_global_address_is_public(address: str) -> None:
    assert address_problem(ip(address)) is None


def test_this_machines_own_public_address_is_not_the_public_network() -> None:
    own = frozenset({PUBLIC, ip("127.0.0.1")})
    assert address_problem(PUBLIC, own) == "this machine's own address 1.2.3.4"
    assert address_problem(ip("127.0.0.1"), own) == "loopback address 127.0.0.1"
    decision = screen(public_policy(own=own), Destination("1.2.3.4", 8786))
    assert decision is not None
    assert (decision.admitted, decision.reason) == (False, "this machine's own address 1.2.3.4")


def test_a_literal_address_is_judged_before_any_lookup() -> None:
    policy = public_policy(own=())
    lan = screen(policy, Destination("192.168.1.10", 443))
    assert lan is not None
    assert (lan.admitted, lan.reason) == (False, "private address 192.168.1.10")
    public = screen(policy, Destination("1.2.3.4", 443))
    assert public is not None
    assert (public.admitted, public.addresses) == (True, (PUBLIC,))
    assert screen(policy, Destination("lan.example", 443)) is None, "a name is resolved first"


def test_a_name_is_admitted_only_at_its_public_addresses() -> None:
    policy = public_policy(own=())
    rebinding = judge(policy, [PUBLIC, ip("127.0.0.1"), ip("10.0.0.1")])
    assert (rebinding.admitted, rebinding.addresses) == (True, (PUBLIC,))
    lan = judge(policy, [ip("192.168.1.10"), ip("127.0.0.1")])
    assert (lan.admitted, lan.reason) == (False, "resolves to a private address 192.168.1.10")
    assert judge(policy, []).admitted is False


def test_an_allow_list_refuses_what_it_does_not_list_before_resolving() -> None:
    policy = allow_list_policy(["api.example:443", "1.2.3.4:8080", "[2606:4700::1]:443"], own=())
    assert policy.name == "allow-list"
    for unlisted in (
        Destination("api.example", 80),
        Destination("other.example", 443),
        Destination("1.2.3.4", 443),
    ):
        decision = screen(policy, unlisted)
        assert decision is not None
        assert (decision.admitted, decision.reason) == (False, "not on the egress list")
    assert screen(policy, Destination("api.example", 443)) is None, "listed: resolve, then judge"
    literal = screen(policy, Destination("1.2.3.4", 8080))
    assert literal is not None
    assert literal.admitted
    v6 = screen(policy, parse_authority("[2606:4700::1]:443"))
    assert v6 is not None
    assert v6.admitted


def test_a_loopback_address_is_reached_only_where_an_allow_list_names_it() -> None:
    """The scripted model server's port: admitted without a lookup when listed; its neighbour
    port, the public policy, and a LAN address listed or not are refused before any lookup."""
    listed = allow_list_policy(["127.0.0.1:8080", "example.com:443"], own=())
    admitted = screen(listed, Destination("127.0.0.1", 8080))
    assert admitted == Decision(True, "listed loopback address 127.0.0.1", (ip("127.0.0.1"),))
    for refused in (
        Destination("127.0.0.1", 8081),
        Destination("10.1.2.3", 80),
        Destination("example.org", 443),
    ):
        assert screen(listed, refused) == Decision(False, "not on the egress list")
    lan = screen(allow_list_policy(["10.1.2.3:80"], own=()), Destination("10.1.2.3", 80))
    assert lan == Decision(False, "private address 10.1.2.3")
    public = screen(public_policy(own=()), Destination("127.0.0.1", 8080))
    assert public == Decision(False, "loopback address 127.0.0.1")


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ("127.0.0.1:8080", None),
        ("[::1]:8080", None),
        ("api.anthropic.com:443", None),
        ("1.2.3.4:443", None),
        ("10.1.2.3:80", "a private address 10.1.2.3 is never reachable; list loopback or public"),
        ("169.254.169.254:80", "a link-local address 169.254.169.254 is never reachable"),
        ("localhost:8080", "name loopback by its address (127.0.0.1:PORT)"),
    ],
)
def test_an_allow_list_entry_that_could_never_be_reached_is_named(
    entry: str, problem: str | None
) -> None:
    found = entry_problem(parse_authority(entry))
    if problem is None:
        assert found is None
    else:
        assert found is not None
        assert found.startswith(problem)


def test_a_listed_name_still_reaches_only_public_addresses() -> None:
    policy = allow_list_policy(["api.example:443"], own=())
    assert judge(policy, [ip("127.0.0.1")]).reason == "resolves to a loopback address 127.0.0.1"


@pytest.mark.parametrize(
    ("text", "host", "port"),
    [
        ("API.Example.:443", "api.example", 443),
        ("127.0.0.1:8786", "127.0.0.1", 8786),
        ("[::1]:22", "::1", 22),
        ("[0:0::1]:22", "::1", 22),
    ],
)
def test_an_authority_is_normalised(text: str, host: str, port: int) -> None:
    assert parse_authority(text) == Destination(host, port)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("example.com", "'example.com' is not host:port"),
        ("::1:443", "'::1:443' is not host:port"),
        ("example.com:0", "port 0 is not between 1 and 65535"),
        ("example.com:70000", "port 70000 is not between 1 and 65535"),
        ("exa mple.com:443", "'exa mple.com' is not a host name or an IP address"),
        ("-bad.example:443", "'-bad.example' is not a host name or an IP address"),
        ("[fe80::1%eth0]:443", "[fe80::1%eth0]: an address with a zone is not a destination"),
        (":443", "':443' is not host:port"),
    ],
)
def test_a_bad_authority_is_refused_naming_it(text: str, problem: str) -> None:
    with pytest.raises(BadDestination) as caught:
        parse_authority(text)
    assert str(caught.value) == problem


def test_a_proxy_url_gives_the_destination_and_the_origin_form() -> None:
    assert parse_proxy_url("http://Public.Example:8080/a/b?c=1") == (
        Destination("public.example", 8080),
        "/a/b?c=1",
    )
    assert parse_proxy_url("http://public.example") == (Destination("public.example", 80), "/")
    for bad, problem in [
        ("/relative", "must name an http:// URL"),
        ("https://public.example/", "must name an http:// URL"),
        ("http://user:pw@public.example/", "must name a host and no user"),
        ("http://public.example:99999/", "Port out of range"),
    ]:
        with pytest.raises(BadDestination, match=problem):
            parse_proxy_url(bad)


def test_a_forwarded_request_carries_no_hop_by_hop_field_and_the_judged_host() -> None:
    headers = request_headers(
        [
            (b"Host", b"evil.example"),
            (b"Connection", b"keep-alive, X-Secret"),
            (b"X-Secret", b"1"),
            (b"Proxy-Authorization", b"Basic abc"),
            (b"Upgrade", b"websocket"),
            (b"Content-Length", b"3"),
            (b"Accept", b"*/*"),
        ],
        Destination("public.example", 80),
    )
    assert headers == [
        (b"host", b"public.example"),
        (b"content-length", b"3"),
        (b"accept", b"*/*"),
        (b"connection", b"close"),
    ]
    assert request_headers([], Destination("::1", 8080))[0] == (b"host", b"[::1]:8080")


def test_a_relayed_response_is_reframed_for_the_client() -> None:
    assert response_headers(
        [
            (b"Transfer-Encoding", b"chunked"),
            (b"Connection", b"close"),
            (b"Keep-Alive", b"timeout=5"),
            (b"Content-Type", b"text/plain"),
        ]
    ) == [(b"content-type", b"text/plain")]


def test_the_log_counts_repeats_and_stays_bounded() -> None:
    log = EgressLog("public")
    for _ in range(3):
        log.note("127.0.0.1:8786", "refused", "loopback address 127.0.0.1")
    log.note("public.example:443", "admitted", "public address 1.2.3.4")
    record = log.record()
    assert [(e.destination, e.decision, e.count) for e in record.decisions] == [
        ("127.0.0.1:8786", "refused", 3),
        ("public.example:443", "admitted", 1),
    ]
    for n in range(MAX_ENTRIES + 5):
        log.note(f"host-{n}.example:443", "refused", "not on the egress list")
    record = log.record()
    assert len(record.decisions) == MAX_ENTRIES
    assert record.truncated == 7


@pytest.mark.parametrize(
    ("info", "pid"),
    [
        (b'{\n    "child-pid": 12270,\n    "mnt-namespace": 4026532175\n}\n', 12270),
        (b'{"child-pid": 7}', 7),
        (b'{"child-pid": -1}', None),
        (b'{"other": 1}', None),
        (b"", None),
    ],
)
def test_the_launcher_reads_the_sandboxs_pid(info: bytes, pid: int | None) -> None:
    assert child_pid(info) == pid
