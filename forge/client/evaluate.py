"""`forge evaluate --cohort` as a client of the running supervisor.

The preview and every refusal are computed here, as `forge evaluate` always did
(`forge.lab.evaluate`); the preview's last seal line says where an approved run would go. An
approved run is handed to the supervisor (`lab_start`, our addition: `forge.wire.lab`) when one
answers, and followed on the `lab` subject: the same progress lines, the same closing lines and
the same exit code as a run in this process. Ctrl-C (or SIGTERM) sends `lab_stop` and waits for
the run to end (130, 143). `--local`, `--executor dask`, or no supervisor answering runs it here,
as before (the last said on stderr). A supervisor lost mid-run exits 1: the approve command
resumes the run, here or in the next supervisor. One that answers the dial but not `lab_start`
(a build from before the Lab on the socket) exits 1 too, after `HANDOVER_S`: it is not run here,
since a slow supervisor may yet have started it into the same `--out`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import ssl
import sys

from forge.attempt.errors import LabRefusal
from forge.client.connection import ForgeConnection
from forge.client.errors import ConnectionLost, ServerRefused, SupervisorUnreachable, TokenRefused
from forge.client.frames import Update
from forge.clock import SYSTEM_CLOCK
from forge.lab.evaluate import (
    LOCAL_RUNS,
    Prepared,
    absolute,
    check_approval,
    finish_lines,
    prepare,
    preview,
    run_here,
)
from forge.lab.live import Follower
from forge.lab.progress import ProgressDisplay
from forge.wire.lab import LAB, LabStart, LabStop, Signal

DIAL_S = 5.0
"""How long finding the supervisor may take before the run goes local."""
HANDOVER_S = 30.0
"""How long the supervisor may take to hold the `lab` subject and answer `lab_start`; an older
build answers neither (it refuses the unknown kinds without naming them)."""
LOST_EXIT = 1


async def evaluate(args: argparse.Namespace, url: str | None, tls: ssl.SSLContext | None) -> int:
    prepared = await prepare(args, os.environ)
    connection, why = (None, "") if url is None else await _dial(url, tls)
    try:
        if args.approve is None:
            sys.stdout.write(preview(prepared, _runs_line(url, connection, why)))
            return 0
        check_approval(prepared)
        if connection is None:
            if url is not None:
                sys.stderr.write(f"forge: no forge supervisor at {url} ({why}): running here\n")
            return await run_here(prepared)
        return await follow(connection, prepared)
    finally:
        if connection is not None:
            await connection.close()


def _runs_line(url: str | None, connection: ForgeConnection | None, why: str) -> str:
    if url is None:
        return LOCAL_RUNS
    if connection is None:
        return f"Runs in: this process (no forge supervisor at {url}: {why})"
    return f"Runs in: the forge supervisor at {url} (its attempt runners; --local runs it here)"


async def _dial(url: str, tls: ssl.SSLContext | None) -> tuple[ForgeConnection | None, str]:
    try:
        return await ForgeConnection.open(url, tls=tls, open_timeout=DIAL_S), ""
    except (SupervisorUnreachable, TokenRefused) as unreachable:
        return None, getattr(unreachable, "why", str(unreachable))


async def follow(connection: ForgeConnection, prepared: Prepared) -> int:
    """Start the run in the supervisor and print its progress until it ends."""
    args = prepared.args
    if prepared.probe.program is None:
        sys.stderr.write(f"forge: recipe not sandboxed: {prepared.probe.reason}\n")
    start = LabStart(
        cohort=str(absolute(args.cohort)),
        source=str(absolute(args.source)),
        out=prepared.out_text,
        approve=args.approve,
        parallel=prepared.parallel,
        keep_workspaces=args.keep_workspaces,
        env=dict(os.environ),
    )
    try:
        async with asyncio.timeout(HANDOVER_S):
            await connection.subscribe(LAB)
            answer = await connection.request(start)
    except TimeoutError:
        return _not_taken(connection.url, f"did not answer lab_start within {HANDOVER_S:g} s")
    except ServerRefused as refused:
        return _not_taken(connection.url, f"refused the run ({refused.why})")
    if not answer.get("ok"):
        raise LabRefusal(str(answer.get("why")))
    run: str = answer["run"]
    display = ProgressDisplay(sys.stderr, SYSTEM_CLOCK, live=sys.stderr.isatty())
    follower = Follower(run, SYSTEM_CLOCK.time() * 1000, SYSTEM_CLOCK.monotonic())
    stopping: list[asyncio.Task[None]] = []

    def stop(name: str) -> None:
        if not stopping:
            stopping.append(asyncio.create_task(_stop(connection, run, name)))

    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop, signal.Signals(signum).name)
    display.start()
    try:
        while follower.ended is None:
            frame = await connection.next_event()
            if isinstance(frame, Update) and isinstance(frame.update, dict):
                step = follower.step(frame.variant, frame.update[frame.variant])
                if step is not None:
                    display.show(step)
    except ConnectionLost as lost:
        await display.stop()
        sys.stderr.write(
            f"forge: lost the forge supervisor mid-run ({lost.reason}); "
            "the approve command resumes the run\n"
        )
        return LOST_EXIT
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)
        for task in stopping:
            with contextlib.suppress(Exception):
                await task
    await display.stop()
    ended = follower.ended
    finish_lines(prepared, ended.status, ended.abort_reason)
    return ended.exit_code if ended.exit_code is not None else LOST_EXIT


def _not_taken(url: str, why: str) -> int:
    sys.stderr.write(
        f"forge: the forge supervisor at {url} {why}: a build from before the Lab on the "
        "socket? The run was not started here (that supervisor may still take it into the same "
        "--out): restart the supervisor with this forge, or add --local to run it in this "
        "process\n"
    )
    return LOST_EXIT


async def _stop(connection: ForgeConnection, run: str, name: str) -> None:
    """Ask the supervisor to stop the run as this signal would; its end arrives as `lab_run`."""
    signal_name: Signal = "SIGTERM" if name == "SIGTERM" else "SIGINT"
    with contextlib.suppress(ServerRefused, ConnectionLost):
        await connection.request(LabStop(run=run, signal=signal_name))
