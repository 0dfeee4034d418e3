"""`forge supervise`: load forge.toml, serve the socket, watch the config, stop on a signal.

Imports of the server stay inside `run`, so registering the verb costs other verbs nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from forge.config import LoadedConfig


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "supervise",
        help="serve the client socket (ws://<bind>:<port>/socket)",
        description="Serve the client socket; forge.toml is --config, else $FORGE_CONFIG, "
        "else $XDG_CONFIG_HOME/forge/forge.toml (a missing file is the embedded defaults).",
    )
    parser.add_argument("--config", metavar="PATH", help="the forge.toml to read")
    parser.add_argument("--bind", help="the address to listen on (overrides [server] bind)")
    parser.add_argument("--port", type=int, help="the TCP port (overrides [server] port)")
    parser.add_argument(
        "--tls",
        choices=("self-signed",),
        help="serve https:// and wss:// with a certificate made for this machine's names and "
        "addresses, kept in forge's state directory (overrides [server] tls_cert/tls_key)",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Refuse a config that does not load (ConfigError: its message, exit 2), else serve."""
    from forge import paths
    from forge.config import load_config, resolve_config_path
    from forge.logs import configure
    from forge.supervisor import drills

    overrides: dict[str, Any] = {}
    if args.bind is not None:
        overrides["server.bind"] = args.bind
    if args.port is not None:
        overrides["server.port"] = args.port
    if args.tls == "self-signed":
        from forge.access.cli import self_signed_overrides

        overrides.update(self_signed_overrides(sys.stdout))
    loaded = load_config(resolve_config_path(args.config, os.environ), overrides=overrides)
    configure(paths.state_dir() / "forge.log", process="supervisor")
    from forge.access.pairing import announce

    announce(sys.stdout, loaded.config.server, terminal=sys.stdout.isatty())
    asyncio.run(serve(loaded, drills=os.environ.get(drills.ENV) == "1"))
    return 0


async def serve(loaded: LoadedConfig, *, drills: bool = False) -> None:
    """Serve until SIGINT or SIGTERM; then close the socket and run the shutdown hooks."""
    from forge.config import watch_config
    from forge.logs import get_logger
    from forge.supervisor import drills as drill_verbs
    from forge.supervisor.app import running_supervisor
    from forge.supervisor.server import SocketServer

    log = get_logger(__name__)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    async with running_supervisor(loaded) as supervisor:
        if drills:
            drill_verbs.install(supervisor)
        socket = SocketServer(supervisor)
        await socket.start()
        watcher = asyncio.create_task(
            watch_config(loaded.source, loaded, supervisor.apply_config, clock=supervisor.clock)
        )
        await stop.wait()
        log.info("supervisor_stopping")
        watcher.cancel()
        await socket.close()
    log.info("supervisor_stopped")
