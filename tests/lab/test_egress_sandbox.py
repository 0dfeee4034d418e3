"""A real bubblewrap sandbox whose only way out is the egress proxy: the host's loopback stays out
of reach (directly and through the proxy), and a public destination is reached through it.

The sandbox has a network namespace of its own; `EgressProxy.wrap` opens the proxy's port in it.
The "public" server is a loopback one the injected connector stands in for (`egress_kit`), so
no packet leaves loopback: the sandbox's own, or the host's.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import os
import shutil
import socket
import sys
import textwrap
import uuid
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest

from forge.attempt.egress.policy import public_policy
from forge.attempt.egress.proxy import EgressProxy, machine_addresses, probe_port, proxy_env
from forge.attempt.sandbox import Sandbox, Trees, args_fd, probe

from .egress_kit import (
    PUBLIC_STAND_IN,
    Connector,
    Names,
    echo_server,
    http_server,
    loopback_server,
)

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")
UNENTERABLE_BWRAP = Path(__file__).parent / "unenterable_bwrap.sh"


INTERPRETER = os.path.realpath(sys.executable)
"""The recipe's Python, shown through its installation (it may live outside the system)."""


def sandbox(work: Path) -> Sandbox:
    """A step's sandbox as an attempt builds it, in a network namespace of its own."""
    found = probe(os.environ)
    if found.program is None:
        pytest.skip(f"bubblewrap cannot run here: {found.reason}")
    box = Sandbox.for_attempt(found.program, hidden=(), mounts=[sys.base_prefix])
    return box.with_trees(Trees(writable=(str(work),)))


async def run_sandboxed(
    proxy: EgressProxy, work: Path, argv: Sequence[str]
) -> tuple[int | None, str, str]:
    """`argv` in the sandbox with the proxy's port and variables, as an attempt runs it."""
    box = sandbox(work)
    fd = args_fd(box.args_bytes(argv, work))
    try:
        process = await asyncio.create_subprocess_exec(
            *proxy.wrap(box.argv(argv, fd)),
            pass_fds=(fd,),
            env={"PATH": os.environ["PATH"], **proxy_env()},
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
    finally:
        os.close(fd)
    out, err = await process.communicate()
    return process.returncode, out.decode(), err.decode()


NAMES = {"public.example": [PUBLIC_STAND_IN], "localhost": [ipaddress.ip_address("127.0.0.1")]}
"""No lookup leaves the machine: `localhost` as /etc/hosts has it, `public.example` at the
stand-in."""


@contextlib.asynccontextmanager
async def started(proxy: EgressProxy) -> AsyncIterator[EgressProxy]:
    await proxy.start()
    try:
        yield proxy
    finally:
        await proxy.stop()


RECIPE = textwrap.dedent(
    """
    import http.client, socket, sys, urllib.request
    host_port = int(sys.argv[1])

    def attempt(what, act):
        try:
            print(what, act())
        except OSError as error:
            print(what, type(error).__name__)

    def direct():
        socket.create_connection(("127.0.0.1", host_port), timeout=30).close()
        return "reached"

    def abstract_unix():
        with socket.socket(socket.AF_UNIX) as unix:
            unix.connect(b"\\0" + sys.argv[2].encode())
        return "reached"

    def through_proxy(method, target):
        proxy = socket.create_connection(("127.0.0.1", 3128), timeout=30)
        proxy.sendall(f"{method} {target} HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n".encode())
        return proxy.recv(65536).split(b"\\r\\n")[0].decode()

    def public_http():
        return urllib.request.urlopen("http://public.example:8080/page", timeout=30).read()

    def public_tunnel():
        connection = http.client.HTTPConnection("127.0.0.1", 3128, timeout=30)
        connection.set_tunnel("public.example", 443)
        connection.connect()
        connection.sock.sendall(b"ping")
        return connection.sock.recv(4)

    attempt("direct", direct)
    attempt("abstract-unix", abstract_unix)
    attempt("connect-literal", lambda: through_proxy("CONNECT", f"127.0.0.1:{host_port}"))
    attempt("connect-localhost", lambda: through_proxy("CONNECT", f"localhost:{host_port}"))
    attempt("get-literal", lambda: through_proxy("GET", f"http://127.0.0.1:{host_port}/"))
    attempt("public-http", public_http)
    attempt("public-tunnel", public_tunnel)
    """
)


async def test_a_networked_recipe_reaches_the_public_stand_in_but_not_the_hosts_loopback(
    tmp_path: Path,
) -> None:
    """The attack of the issue: a recipe with the network dials a service on the host's
    127.0.0.1 (the Dask scheduler's kind), or one on an abstract unix socket (those belong to
    the network namespace). Without a namespace of its own it connected; now neither the
    namespace nor the proxy lets it, and the proxy records the tries."""
    accepted: list[int] = []
    abstract_name = f"forge-egress-test-{uuid.uuid4().hex}"
    abstract = socket.socket(socket.AF_UNIX)
    abstract.bind(b"\0" + abstract_name.encode())
    abstract.listen()
    abstract.setblocking(False)

    async def host_service(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(1)

    async with (
        loopback_server(host_service) as host_port,
        http_server() as (http_port, seen),
        echo_server() as (echo_port, _),
    ):
        connector = Connector({8080: http_port, 443: echo_port})
        policy = public_policy(own=machine_addresses())
        proxy = EgressProxy(policy, resolver=Names(NAMES), connector=connector)
        async with started(proxy):
            code, out, err = await run_sandboxed(
                proxy, tmp_path, [INTERPRETER, "-c", RECIPE, str(host_port), abstract_name]
            )
    with abstract, pytest.raises(BlockingIOError):
        abstract.accept()  # nobody connected
    assert code == 0, err
    assert out.splitlines() == [
        "direct ConnectionRefusedError",
        "abstract-unix ConnectionRefusedError",
        "connect-literal HTTP/1.1 403 Forbidden",
        "connect-localhost HTTP/1.1 403 Forbidden",
        "get-literal HTTP/1.1 403 Forbidden",
        "public-http b'GET /page '",
        "public-tunnel b'ping'",
    ]
    assert accepted == [], "the host's loopback service was reached"
    assert [s.headers[b"host"] for s in seen] == [b"public.example:8080"]
    decisions = proxy.log.record().decisions
    refused = {(e.destination, e.reason) for e in decisions if e.decision == "refused"}
    assert refused == {
        (f"127.0.0.1:{host_port}", "loopback address 127.0.0.1"),
        (f"localhost:{host_port}", "resolves to a loopback address 127.0.0.1"),
    }
    admitted = [e.destination for e in decisions if e.decision == "admitted"]
    assert admitted == ["public.example:8080", "public.example:443"]


async def test_a_command_whose_port_cannot_open_does_not_run(tmp_path: Path) -> None:
    """No proxy listening on the control socket: the sandbox is killed before its command."""
    proxy = EgressProxy(public_policy(own=()))  # never started
    ran = tmp_path / "ran"
    code, _, err = await run_sandboxed(proxy, tmp_path, ["touch", str(ran)])
    assert code == 137
    assert "forge egress: the sandbox's proxy port 3128 did not open" in err
    assert not ran.exists()


async def test_the_probe_says_whether_a_sandbox_port_can_open() -> None:
    found = probe(os.environ)
    if found.program is None:
        pytest.skip(f"bubblewrap cannot run here: {found.reason}")
    sandbox_true = ["--unshare-user", "--unshare-net", "--ro-bind", "/", "/", "--", "true"]
    assert await probe_port([found.program, *sandbox_true]) is None
    reason = await probe_port([str(UNENTERABLE_BWRAP), *sandbox_true])
    assert reason is not None
    assert reason.startswith("forge egress: the sandbox's proxy port 3128 did not open (")
    assert "setns(user)" in reason


async def test_the_command_gets_the_signal_dispositions_it_would_get_without_the_port(
    tmp_path: Path,
) -> None:
    """The launcher is a Python process, which ignores SIGPIPE and SIGXFSZ; what is ignored
    survives exec, so a command under it would not die writing to a closed pipe or past its
    file-size limit."""
    proxy = EgressProxy(public_policy(own=()))
    box = sandbox(tmp_path)
    argv = ["grep", "SigIgn", "/proc/self/status"]
    fd = args_fd(box.args_bytes(argv, tmp_path))
    try:
        plain = await asyncio.create_subprocess_exec(
            *box.argv(argv, fd), pass_fds=(fd,), stdout=asyncio.subprocess.PIPE
        )
        expected, _ = await plain.communicate()
    finally:
        os.close(fd)
    async with started(proxy):
        code, out, err = await run_sandboxed(proxy, tmp_path, argv)
    assert code == 0, err
    assert out == expected.decode()
