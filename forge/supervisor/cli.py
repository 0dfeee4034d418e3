"""`forge supervise`: load forge.toml, serve the socket, watch the config, stop on a signal.

Once it listens it prints one line: the page and socket URLs and the log's path. On a terminal,
the log's warnings and errors follow as short human lines (`--log-console json`: every record's
JSON line); the records themselves go to forge.log. An address it cannot listen on is a one-line
refusal naming it and the flag that changes it (exit 2). Imports of the server stay inside `run`,
so registering the verb costs other verbs nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import errno
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from forge import eventloop
from forge.errors import UserError
from forge.logs import CONSOLES, LEVELS

if TYPE_CHECKING:
    from forge.config import LoadedConfig, ServerConfig
    from forge.supervisor.socket.statelock import StateLock


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "supervise",
        help="serve the client socket (ws://<bind>:<port>/socket)",
        description="Serve the client socket; forge.toml is --config (which must exist), else "
        "$FORGE_CONFIG, else $XDG_CONFIG_HOME/forge/forge.toml (a missing file there is the "
        "embedded defaults).",
        epilog="exit status: 0 stopped by SIGINT or SIGTERM; 2 forge.toml does not load, a bad "
        "flag, or the address cannot be listened on (a port in use: pick another with --port).",
    )
    parser.add_argument("--config", metavar="PATH", help="the forge.toml to read")
    parser.add_argument("--bind", help="the address to listen on (overrides [server] bind)")
    parser.add_argument("--port", type=int, help="the TCP port (overrides [server] port)")
    parser.add_argument(
        "--log-level", choices=tuple(LEVELS), help="the lowest level logged (overrides [log] level)"
    )
    parser.add_argument(
        "--log-console",
        choices=CONSOLES,
        default="human",
        help="what a terminal shows of the log: human lines for warnings and errors (the "
        "default), or every record's JSON line as forge.log has it",
    )
    parser.add_argument(
        "--tls",
        choices=("self-signed",),
        help="serve https:// and wss:// with a certificate made for this machine's names and "
        "addresses, kept in forge's state directory (overrides [server] tls_cert/tls_key)",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Refuse a second supervisor on this state directory (`statelock`) and a config that does
    not load (ConfigError: its message, exit 2), else serve."""
    from forge import paths
    from forge.supervisor.socket import statelock

    # Made private before `--tls self-signed` writes in it; one an older forge left open is
    # closed below, once the log can say so.
    paths.state_dir().mkdir(mode=0o700, parents=True, exist_ok=True)
    # Before anything writes there: a second supervisor touches none of the first one's files.
    lock = statelock.hold(paths.state_dir())
    try:
        return _run(args, lock)
    finally:
        lock.release()


def _run(args: argparse.Namespace, lock: StateLock) -> int:
    from forge import filemodes, paths
    from forge.allocator import tune_for_long_life
    from forge.config import load_config, require_config_path
    from forge.logs import configure, get_logger, set_level
    from forge.logs_rotation import Rotation
    from forge.testhooks import SUPERVISOR_DRILLS

    overrides: dict[str, Any] = {}
    for flag, pattern in (
        ("bind", "server.bind"),
        ("port", "server.port"),
        ("log_level", "log.level"),
    ):
        if getattr(args, flag) is not None:
            overrides[pattern] = getattr(args, flag)
    if args.tls == "self-signed":
        from forge.access.cli import self_signed_overrides

        overrides.update(self_signed_overrides(sys.stdout))
    loaded = load_config(require_config_path(args.config, os.environ), overrides=overrides)
    log_file = paths.log_file()
    log = loaded.config.log
    rotation = Rotation(max_bytes=log.max_size_mib * 1024 * 1024, backups=log.backups)
    configure(log_file, console=args.log_console, process="supervisor", rotation=rotation)
    set_level(loaded.config.log.level)
    filemodes.private_dir(paths.state_dir())
    get_logger(__name__).info("allocator_tuned", tuned=tune_for_long_life())
    eventloop.run(serve(loaded, log_file=log_file, lock=lock, drills=SUPERVISOR_DRILLS.enabled()))
    return 0


async def serve(
    loaded: LoadedConfig, *, log_file: Path, lock: StateLock, drills: bool = False
) -> None:
    """Serve until SIGINT or SIGTERM; then close the socket and run the shutdown hooks."""
    from forge.access.pairing import announce
    from forge.config import page_url, record_listening, socket_url
    from forge.logs import get_logger, set_level
    from forge.supervisor.app import running_supervisor
    from forge.supervisor.socket import drills as drill_verbs
    from forge.supervisor.socket.server import SocketServer

    log = get_logger(__name__)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)

    def reloaded(new: LoadedConfig) -> None:
        set_level(new.config.log.level)

    async with running_supervisor(loaded, on_reload=reloaded) as supervisor:
        if drills:
            drill_verbs.install(supervisor)
        socket = SocketServer(supervisor)
        server = loaded.config.server
        try:
            await socket.start()
        except OSError as error:
            log.error("socket_listen_failed", bind=server.bind, port=server.port, error=str(error))
            raise _cannot_listen(server, error) from None
        record_listening(loaded.source, socket_url(server))
        lock.listening(page_url(server))
        log.info("supervisor_serving", page=page_url(server))  # after the files that name it
        print(
            f"forge supervise: serving {page_url(server)} (socket {socket_url(server)}); "
            f"log: {log_file}",
            flush=True,
        )
        announce(sys.stdout, server, terminal=sys.stdout.isatty())
        await stop.wait()
        log.info("supervisor_stopping")
        await socket.close()
    log.info("supervisor_stopped")


def _cannot_listen(server: ServerConfig, error: OSError) -> UserError:
    """The one line a person reads when the socket cannot be opened, with what to change."""
    where = f"{server.bind}:{server.port}"
    if error.errno == errno.EADDRINUSE:
        return UserError(
            f"port {server.port} on {server.bind} is already in use (another forge supervise?); "
            "stop what holds it, or pick another port with --port"
        )
    if error.errno in (errno.EACCES, errno.EPERM):
        return UserError(f"cannot listen on {where}: permission denied; pick a port above 1023")
    reason = os.strerror(error.errno).lower() if error.errno else str(error)
    return UserError(f"cannot listen on {where}: {reason}; check --bind and --port")
