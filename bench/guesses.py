"""Token guessing from one address: what parallel guessers are answered, and what the owner meets.

    .venv/bin/python -P bench/guesses.py [--guessers 1000] [--seconds 10]

(`-P`: bench/ holds a `socket.py` named like the stdlib module; this file re-runs itself with -P.)

The server is its own process: the core `Supervisor` and `SocketServer` with the token on,
writing forge.log to a scratch state directory, so a refusal costs what it costs in use (the
record included). `--guessers` tasks on 127.0.0.1 each dial again and again for `--seconds`: a
hand-written upgrade offering a random wrong token, the status line read, the connection closed.
Meanwhile the owner, a process of its own (so the guessers' event loop does not delay it), dials
twice a second from the same address with the right token. The rows:
each status the guessers were answered with before the time was up, as a count and per second
(a 401 or a 429 is one guess whose outcome the guesser learned), when the first 500 came if one
did, and the owner's dials (their statuses, and the median and slowest time to the status line),
beside the same owner's dials on the quiet server just before, which is what the machine's own
load adds; and how many connections the kernel dropped meanwhile because the listen queue was
full (`ListenOverflows` in /proc/net/netstat, machine-wide): such a dial is retried a second later,
and that, not the throttle, is what a flood of dials costs everyone, the owner included.
"""

# ruff: noqa: E402  (the stdlib imports below must follow the re-run with -P)
import os
import sys

SELF = os.path.abspath(__file__)
if sys.path and sys.path[0] == os.path.dirname(SELF):
    os.execv(sys.executable, [sys.executable, "-P", SELF, *sys.argv[1:]])

import argparse
import asyncio
import base64
import platform
import secrets
import socket
import statistics
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from forge.access.token import read_token

OWNER_EVERY_S = 0.5
QUIET_S = 3.0
"""How long the owner dials alone first, for the time a dial takes on this machine as it is."""


async def serve_forge(config: Path, port: int, log: Path) -> None:
    from forge.config import load_config
    from forge.logs import configure
    from forge.supervisor.socket.core import Supervisor
    from forge.supervisor.socket.server import SocketServer

    configure(log, to_stderr=False)
    supervisor = Supervisor(load_config(config, overrides={"server.port": port}))
    server = SocketServer(supervisor)
    await server.start()
    print("ready", flush=True)
    await asyncio.Future()


async def dial(port: int, token: str) -> int:
    """One upgrade offering `token`: the status the server answers with (0: no answer)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    key = base64.b64encode(os.urandom(16)).decode()
    writer.write(
        (
            f"GET /socket HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
            f"Sec-WebSocket-Protocol: forge.v1, forge.token.{token}\r\n\r\n"
        ).encode()
    )
    try:
        line = await reader.readline()
    finally:
        writer.transport.abort()
    parts = line.split()
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0


@dataclass
class Tally:
    started: float
    deadline: float
    statuses: Counter[int] = field(default_factory=Counter)
    first_500_s: float | None = None
    dropped: int | None = None
    """Connections the kernel dropped on a full listen queue meanwhile (machine-wide)."""


async def guesser(port: int, tally: Tally) -> None:
    while time.monotonic() < tally.deadline:
        try:
            status = await dial(port, secrets.token_urlsafe(32))
        except OSError:
            status = 0
        if time.monotonic() >= tally.deadline:
            return
        tally.statuses[status] += 1
        if status == 500 and tally.first_500_s is None:
            tally.first_500_s = time.monotonic() - tally.started


async def owner(port: int, seconds: float) -> None:
    """The owner's process: dial with the right token for `seconds`, one `status ms` line each."""
    token = read_token()
    assert token is not None
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        began = time.monotonic()
        status = await dial(port, token)
        print(status, (time.monotonic() - began) * 1000, flush=True)
        await asyncio.sleep(OWNER_EVERY_S)


async def owners_dials(port: int, seconds: float) -> list[tuple[int, float]]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-P",
        SELF,
        "--owner",
        str(port),
        str(seconds),
        stdout=asyncio.subprocess.PIPE,
    )
    out, _ = await process.communicate()
    return [(int(status), float(ms)) for status, ms in map(str.split, out.decode().splitlines())]


def listen_overflows() -> int | None:
    """The kernel's count of connections dropped on a full listen queue (Linux), if readable."""
    try:
        lines = Path("/proc/net/netstat").read_text(encoding="ascii").splitlines()
    except OSError:
        return None
    for names, values in zip(lines[::2], lines[1::2], strict=True):
        if names.startswith("TcpExt:"):
            return int(dict(zip(names.split(), values.split(), strict=True))["ListenOverflows"])
    return None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


async def run(guessers: int, seconds: float) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        home = Path(scratch)
        os.environ["XDG_STATE_HOME"] = str(home / "state")
        config = home / "forge.toml"
        config.write_text("", encoding="utf-8")
        port = free_port()
        argv = ["--serve", str(config), str(port), str(home / "forge.log")]
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-P", SELF, *argv, stdout=asyncio.subprocess.PIPE
        )
        assert process.stdout is not None
        try:
            if (await process.stdout.readline()).strip() != b"ready":
                raise SystemExit("the forge server did not start")
            quiet = await owners_dials(port, QUIET_S)
            started = time.monotonic()
            tally = Tally(started, started + seconds)
            overflows = listen_overflows()
            during, *_ = await asyncio.gather(
                owners_dials(port, seconds), *(guesser(port, tally) for _ in range(guessers))
            )
            if overflows is not None:
                tally.dropped = (listen_overflows() or 0) - overflows
        finally:
            process.terminate()
            await process.wait()
    report(tally, {"owner, quiet": quiet, "owner, during": during}, guessers, seconds)


def report(
    tally: Tally, owners: dict[str, list[tuple[int, float]]], guessers: int, elapsed: float
) -> None:
    machine = f"{platform.machine()}, {os.cpu_count()} cores, python {platform.python_version()}"
    print(f"{machine}; {guessers} guessers on 127.0.0.1 for {elapsed:.1f} s")
    print(f"{'guessers answered':<24}{'count':>8}{'per s':>10}")
    for status, count in sorted(tally.statuses.items()):
        name = "no answer" if status == 0 else f"HTTP {status}"
        print(f"{name:<24}{count:>8}{count / elapsed:>10.1f}")
    learned = tally.statuses[401] + tally.statuses[429]
    print(f"{'outcomes learned':<24}{learned:>8}{learned / elapsed:>10.1f}")
    if tally.first_500_s is not None:
        print(f"first HTTP 500 after {tally.first_500_s:.2f} s")
    if tally.dropped is not None:
        print(f"dials dropped on a full listen queue (machine-wide): {tally.dropped}")
    for name, dials in owners.items():
        statuses = Counter(status for status, _ in dials)
        times = [ms for _, ms in dials]
        print(
            f"{name}: {dict(sorted(statuses.items()))}; to the status line median "
            f"{statistics.median(times):.1f} ms, slowest {max(times):.1f} ms"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--guessers", type=int, default=1000, help="parallel guessing tasks")
    parser.add_argument("--seconds", type=float, default=10.0, help="how long they guess")
    parser.add_argument(
        "--serve", nargs=3, metavar=("CONFIG", "PORT", "LOG"), help=argparse.SUPPRESS
    )
    parser.add_argument("--owner", nargs=2, metavar=("PORT", "SECONDS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.owner:
        asyncio.run(owner(int(args.owner[0]), float(args.owner[1])))
        return
    if args.serve:
        config, port, log = args.serve
        asyncio.run(serve_forge(Path(config), int(port), Path(log)))
        return
    asyncio.run(run(args.guessers, args.seconds))


if __name__ == "__main__":
    main()
