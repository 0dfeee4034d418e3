"""The egress proxy over real loopback sockets: what it refuses (before resolving or connecting),
what it carries, and what it records. Destinations beyond loopback are names and addresses the
injected resolver and connector stand in for (`egress_kit`); no packet leaves loopback."""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from forge.attempt.egress.policy import IPAddress, Policy, allow_list_policy, public_policy
from forge.attempt.egress.proxy import EgressProxy, Streams, connect, resolve

from .egress_kit import (
    PUBLIC_STAND_IN,
    Connector,
    Names,
    client,
    echo_server,
    http_server,
    loopback_server,
)

LAN = ipaddress.ip_address("192.168.1.10")
LOOPBACK = ipaddress.ip_address("127.0.0.1")


@contextlib.asynccontextmanager
async def serving(
    policy: Policy,
    names: Names,
    connector: Connector | LoopbackConnector,
    max_connections: int = 256,
) -> AsyncIterator[tuple[EgressProxy, int]]:
    """The proxy on a loopback port of the test's own (in a sandbox, `port` opens it)."""
    proxy = EgressProxy(
        policy, resolver=names, connector=connector, max_connections=max_connections
    )
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    await proxy.serve(listener)
    try:
        yield proxy, port
    finally:
        await proxy.stop()


@contextlib.asynccontextmanager
async def public_proxy(
    **options: int,
) -> AsyncIterator[tuple[EgressProxy, int, list[bytes], Connector]]:
    """A public-mode proxy whose `public.example:443` is an echo server on loopback: the
    proxy, its port, what the echo server received, and the connector's record."""
    names = Names({"public.example": [PUBLIC_STAND_IN]})
    async with echo_server() as (echo_port, received):
        connector = Connector({443: echo_port})
        async with serving(public_policy(own=()), names, connector, **options) as (proxy, port):
            yield proxy, port, received, connector


def decisions(proxy: EgressProxy) -> list[tuple[str, str, str, int]]:
    return [(e.destination, e.decision, e.reason, e.count) for e in proxy.log.record().decisions]


async def test_a_lan_name_is_refused_before_any_connection() -> None:
    names = Names({"lan.example": [LAN], "localhost": [LOOPBACK]})
    connector = Connector()
    async with serving(public_policy(own=()), names, connector) as (proxy, port):
        async with client(port) as c:
            status, body = await c.request(b"CONNECT", b"lan.example:443")
        assert status == 403
        assert body == (
            b"forge egress refused lan.example:443: resolves to a private address 192.168.1.10\n"
        )
        async with client(port) as c:
            status, _ = await c.request(b"GET", b"http://localhost:8786/")
        assert status == 403
    assert connector.tried == []
    assert decisions(proxy) == [
        ("lan.example:443", "refused", "resolves to a private address 192.168.1.10", 1),
        ("localhost:8786", "refused", "resolves to a loopback address 127.0.0.1", 1),
    ]


async def test_a_private_or_loopback_literal_is_refused_before_resolving() -> None:
    names = Names({})
    connector = Connector()
    async with serving(public_policy(own=()), names, connector) as (proxy, port):
        for method, target in [
            (b"CONNECT", b"10.0.0.5:443"),
            (b"CONNECT", b"127.0.0.1:8786"),
            (b"CONNECT", b"[::1]:8786"),
            (b"CONNECT", b"100.64.1.1:443"),
            (b"GET", b"http://169.254.169.254/latest/meta-data/"),
            (b"GET", b"http://[fd00::1]:8080/"),
        ]:
            async with client(port) as c:
                status, _ = await c.request(method, target)
            assert status == 403, target
    assert names.asked == []
    assert connector.tried == []
    assert [(d, r) for d, _, r, _ in decisions(proxy)] == [
        ("10.0.0.5:443", "private address 10.0.0.5"),
        ("127.0.0.1:8786", "loopback address 127.0.0.1"),
        ("[::1]:8786", "loopback address ::1"),
        ("100.64.1.1:443", "shared (carrier-grade NAT) address 100.64.1.1"),
        ("169.254.169.254:80", "link-local address 169.254.169.254"),
        ("[fd00::1]:8080", "private address fd00::1"),
    ]


async def test_a_public_destination_tunnels_bytes_both_ways() -> None:
    async with public_proxy() as (proxy, port, received, connector), client(port) as c:
        status, _ = await c.request(b"CONNECT", b"public.example:443")
        assert status == 200
        hello = b"\x16\x03\x01 client hello"
        c.writer.write(hello)
        assert await c.reader.readexactly(len(hello)) == hello
        c.writer.write(b"more")
        c.writer.write_eof()
        assert await c.reader.read() == b"more", "the half-close went through, and back"
    assert b"".join(received) == b"\x16\x03\x01 client hellomore"
    assert connector.tried == [(PUBLIC_STAND_IN, 443)]
    assert decisions(proxy) == [("public.example:443", "admitted", "public address 1.2.3.4", 1)]


async def test_a_plain_request_is_forwarded_and_each_one_judged() -> None:
    names = Names({"public.example": [PUBLIC_STAND_IN], "lan.example": [LAN]})
    async with http_server() as (http_port, seen):
        connector = Connector({8080: http_port})
        async with (
            serving(public_policy(own=()), names, connector) as (proxy, port),
            client(port) as c,
        ):
            get = await c.request(
                b"GET",
                b"http://public.example:8080/a?b=1",
                headers=((b"proxy-authorization", b"Basic c2VjcmV0"),),
            )
            post = await c.request(b"POST", b"http://public.example:8080/p", b"data")
            lan = await c.request(b"GET", b"http://lan.example/")
    assert get == (200, b"GET /a?b=1 ")
    assert post == (200, b"POST /p data")
    assert lan[0] == 403, "the same connection's next request is judged again"
    assert [(s.method, s.target, s.body) for s in seen] == [
        (b"GET", b"/a?b=1", b""),
        (b"POST", b"/p", b"data"),
    ]
    assert seen[0].headers[b"host"] == b"public.example:8080"
    assert seen[0].headers[b"connection"] == b"close"
    assert b"proxy-authorization" not in seen[0].headers
    assert connector.tried == [(PUBLIC_STAND_IN, 8080)] * 2
    assert decisions(proxy) == [
        ("public.example:8080", "admitted", "public address 1.2.3.4", 2),
        ("lan.example:80", "refused", "resolves to a private address 192.168.1.10", 1),
    ]


async def test_an_allow_list_admits_only_its_pairs_and_resolves_nothing_else() -> None:
    names = Names({"api.example": [PUBLIC_STAND_IN], "other.example": [PUBLIC_STAND_IN]})
    async with echo_server() as (echo_port, _):
        connector = Connector({443: echo_port})
        policy = allow_list_policy(["api.example:443"], own=())
        async with serving(policy, names, connector) as (proxy, port):
            for target, expected in [
                (b"other.example:443", 403),
                (b"api.example:80", 403),
                (b"1.2.3.4:443", 403),
                (b"api.example:443", 200),
            ]:
                async with client(port) as c:
                    status, _ = await c.request(b"CONNECT", target)
                assert status == expected, target
    assert names.asked == ["api.example"], "a refused name is never resolved"
    assert connector.tried == [(PUBLIC_STAND_IN, 443)]
    assert decisions(proxy) == [
        ("other.example:443", "refused", "not on the egress list", 1),
        ("api.example:80", "refused", "not on the egress list", 1),
        ("1.2.3.4:443", "refused", "not on the egress list", 1),
        ("api.example:443", "admitted", "public address 1.2.3.4", 1),
    ]


@dataclass
class LoopbackConnector:
    """Connects loopback addresses for real and records each; any other address fails the test
    (the proxy must never try one)."""

    tried: list[tuple[IPAddress, int]] = field(default_factory=list)

    async def __call__(self, address: IPAddress, port: int) -> Streams:
        self.tried.append((address, port))
        if not address.is_loopback:
            raise AssertionError(f"the proxy tried to connect to {address}:{port}")
        return await connect(address, port)


async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """A loopback service the list does not name: it would read whatever reached it."""
    await reader.read()


async def test_an_allow_listed_loopback_port_is_reached_and_nothing_else_is_tried() -> None:
    """The scripted model server's case: its listed port is reached with a plain request; its
    neighbour port, a public name and a LAN address are refused by the list before any lookup
    or connection, each recorded."""
    names = Names({"example.com": [PUBLIC_STAND_IN]})
    connector = LoopbackConnector()
    async with http_server() as (model, seen), loopback_server(silent) as other:
        policy = allow_list_policy([f"127.0.0.1:{model}"], own=())
        async with serving(policy, names, connector) as (proxy, port):
            for method, target, expected in [
                (b"POST", f"http://127.0.0.1:{model}/v1/messages".encode(), 200),
                (b"GET", f"http://127.0.0.1:{other}/".encode(), 403),
                (b"CONNECT", f"127.0.0.1:{other}".encode(), 403),
                (b"CONNECT", b"example.com:443", 403),
                (b"CONNECT", b"10.1.2.3:80", 403),
                (b"GET", b"http://10.1.2.3/", 403),
            ]:
                async with client(port) as c:
                    status, _ = await c.request(method, target)
                assert status == expected, target
    assert [(s.method, s.target) for s in seen] == [(b"POST", b"/v1/messages")]
    assert names.asked == [], "nothing is resolved: a listed loopback address needs no lookup"
    assert connector.tried == [(LOOPBACK, model)]
    assert decisions(proxy) == [
        (f"127.0.0.1:{model}", "admitted", "listed loopback address 127.0.0.1", 1),
        (f"127.0.0.1:{other}", "refused", "not on the egress list", 2),
        ("example.com:443", "refused", "not on the egress list", 1),
        ("10.1.2.3:80", "refused", "not on the egress list", 2),
    ]


async def test_a_name_resolving_to_loopback_too_is_connected_only_where_judged() -> None:
    names = Names({"rebind.example": [LOOPBACK, PUBLIC_STAND_IN]})
    async with echo_server() as (echo_port, _):
        connector = Connector({443: echo_port})
        async with (
            serving(public_policy(own=()), names, connector) as (_, port),
            client(port) as c,
        ):
            status, _ = await c.request(b"CONNECT", b"rebind.example:443")
    assert status == 200
    assert connector.tried == [(PUBLIC_STAND_IN, 443)]


async def test_an_unresolved_or_unreachable_destination_is_a_502_and_recorded() -> None:
    names = Names({"public.example": [PUBLIC_STAND_IN]})
    connector = Connector({})  # nothing listens: the stand-in refuses every connection
    async with serving(public_policy(own=()), names, connector) as (proxy, port):
        for target in (b"nowhere.example:443", b"public.example:443"):
            async with client(port) as c:
                status, _ = await c.request(b"CONNECT", target)
            assert status == 502
    assert [(d, o) for d, o, _, _ in decisions(proxy)] == [
        ("nowhere.example:443", "failed"),
        ("public.example:443", "failed"),
    ]
    assert decisions(proxy)[0][2] == "the name did not resolve"


async def test_what_is_not_a_proxy_request_gets_a_400() -> None:
    names = Names({})
    connector = Connector()
    async with serving(public_policy(own=()), names, connector) as (proxy, port):
        for target in (b"/etc/passwd", b"https://public.example/", b"public.example"):
            method = b"CONNECT" if target == b"public.example" else b"GET"
            async with client(port) as c:
                status, _ = await c.request(method, target)
            assert status == 400, target
        async with client(port) as c:
            c.writer.write(b"\x16\x03\x01 not http at all\r\n\r\n")
            answer = await c.reader.read()
        assert answer.startswith(b"HTTP/1.1 400 ")
    assert names.asked == []
    assert connector.tried == []
    assert [o for _, o, _, _ in decisions(proxy)] == ["refused"] * 3


async def test_stop_ends_every_tunnel() -> None:
    async with public_proxy() as (proxy, port, _, _), client(port) as c:
        status, _ = await c.request(b"CONNECT", b"public.example:443")
        assert status == 200
        await proxy.stop()
        assert await asyncio.wait_for(c.reader.read(), 30) == b""


async def test_the_system_resolver_gives_each_address_once() -> None:
    """A literal: no lookup leaves the machine."""
    assert await resolve("127.0.0.1", 80) == [LOOPBACK]


async def test_connections_beyond_the_bound_are_closed_and_counted() -> None:
    async with (
        public_proxy(max_connections=2) as (proxy, port, _, _),
        client(port) as first,
        client(port) as second,
    ):
        for c in (first, second):
            status, _ = await c.request(b"CONNECT", b"public.example:443")
            assert status == 200
        async with client(port) as third:
            assert await third.reader.read() == b"", "closed unanswered"
    assert decisions(proxy)[-1] == ("*", "refused", "more than 2 connections at once", 1)
