"""Seat process views (H12, O-H7): the held seats' process trees, walked once a second.

A seat is held while at least one connection subscribes to its session (`Supervisor.on_held`).
While any seat is held, `ProcessViews` asks the walker worker once per `WALK_INTERVAL_S` for
every held seat's tree: the sessions of its live shells (`roots(seat)`), which include the
descendants that moved to a session of their own. A seat nobody holds is not walked. A walk that
`moved` from what the seat last published is published as `processes_changed{key, processes}`
and kept as the session's `processes`; a held seat whose shells are all gone is cleared to null
(its session ended). The walker starts on the first hold and is then kept for the run.

`moved` is the pure rule deciding what is worth a push, so a phone is not woken every second
by noise: a process came or went, one exec'd another program, CPU moved 5 points, RSS 10 %.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from forge.ipc.manager import WorkerHandle, WorkerManager
from forge.logs import get_logger
from forge.supervisor.service import WorkerService
from forge.supervisor.socket.core import Supervisor
from forge.wire.seats import Seat, SessionSubject, Subject
from forge.workers.walker.protocol import WALKER, ProcessRow, Walk

log = get_logger(__name__)

WALK_INTERVAL_S = 1.0
"""How often every held seat is walked (H12)."""
WALK_TIMEOUT_S = 10.0
"""A walk slower than this is abandoned (the manager's hang check covers a stuck worker)."""
CPU_POINTS = 5.0
"""A process's CPU share moving this many points (100 = one core) is worth a push."""
RSS_SHARE = 0.10
"""A process's resident memory moving by this share of what was published is worth a push."""

Roots = Callable[[Seat], list[int]]
"""The pids of a seat's live shells: each is the leader of the session walked for the seat."""
Row = Mapping[str, Any]
"""A process row as the walker sent it (`forge.workers.walker.rows.ProcessRow`)."""


def moved(previous: Sequence[Row] | None, current: Sequence[Row] | None) -> bool:
    """Whether `current` differs enough from the published `previous` to push it (O-H7).

    A process is known by pid and start time, so a reused pid counts as a new process; one that
    exec'd another program (same pid, new name or command line) also counts, since a client would
    otherwise show the shell's fork for as long as the program runs.
    """
    if previous is None or current is None:
        return previous is not current
    before = {(row["pid"], row["started_ms"]): row for row in previous}
    after = {(row["pid"], row["started_ms"]): row for row in current}
    if before.keys() != after.keys():
        return True
    return any(_row_moved(before[key], row) for key, row in after.items())


def _row_moved(before: Row, after: Row) -> bool:
    if (before["name"], before["cmdline"]) != (after["name"], after["cmdline"]):
        return True
    if abs(after["cpu_percent"] - before["cpu_percent"]) >= CPU_POINTS:
        return True
    rss_before, rss_after = int(before["rss_bytes"]), int(after["rss_bytes"])
    return rss_after != rss_before and abs(rss_after - rss_before) >= RSS_SHARE * rss_before


class ProcessViews(WorkerService):
    """Walks the held seats once a second through the walker worker and publishes what moved."""

    name = "seat_processes"

    def __init__(self, supervisor: Supervisor, manager: WorkerManager, roots: Roots) -> None:
        super().__init__(supervisor, manager)
        self._roots = roots
        self._held: dict[Seat, None] = {}
        """Held seats in the order they were first held."""
        self._wake = asyncio.Event()
        self._walker: WorkerHandle | None = None
        self._loop: asyncio.Task[None] | None = None
        self._failing = False
        self.walks: Counter[Seat] = Counter()
        """How many times each seat was walked this run."""

    @property
    def held(self) -> list[Seat]:
        """The seats walked each tick, in the order they were first held."""
        return list(self._held)

    @property
    def walker(self) -> WorkerHandle | None:
        """The walker worker, once a first hold has started it."""
        return self._walker

    def install(self) -> None:
        self.supervisor.on_held(self._on_held)
        self.supervisor.on_shutdown(self.stop)
        super().install()

    def hold(self, seat: Seat) -> None:
        """The seat gained its first holder: walk it from the next tick on."""
        self._held[seat] = None
        log.info("seat_processes_held", seat=str(seat))
        if self._loop is None:
            self._loop = asyncio.get_running_loop().create_task(self._run())
        self._wake.set()

    def release(self, seat: Seat) -> None:
        """The seat lost its last holder: no walk asks for it from now on."""
        if seat in self._held:
            del self._held[seat]
            log.info("seat_processes_released", seat=str(seat))

    async def stop(self) -> None:
        if self._loop is not None:
            self._loop.cancel()
            await asyncio.gather(self._loop, return_exceptions=True)
            self._loop = None

    async def walk_held(self) -> None:
        """One tick: walk every held seat that has a live shell, clear those that have none."""
        roots = {seat: self._roots(seat) for seat in self._held}
        for seat, pids in roots.items():
            if not pids:
                self._publish(seat, None)
        seats = [seat for seat, pids in roots.items() if pids]
        if not seats:
            return
        log.debug("seat_processes_walk", seats=[str(seat) for seat in seats])
        self.walks.update(seats)
        walked = await self.ask_or_log(
            self.walker_handle(),
            Walk(sessions=[roots[seat] for seat in seats]),
            "seat_processes_walk_failed",
            within=WALK_TIMEOUT_S,
            expected=self._failing,  # a walker that keeps failing is recorded once
        )
        if walked is None:
            self._failing = True
            return
        self._failing = False
        for seat, rows in zip(seats, walked.trees, strict=True):
            self._publish(seat, rows)

    def _on_held(self, subject: Subject, held: bool) -> None:
        if isinstance(subject, SessionSubject):
            if held:
                self.hold(subject.session)
            else:
                self.release(subject.session)

    async def _run(self) -> None:
        clock = self.supervisor.clock
        while True:
            if not self._held:
                self._wake.clear()
                await self._wake.wait()
            started = clock.monotonic()
            try:
                await self.walk_held()
            except Exception:  # a bug in one tick must not end the process views of the run
                log.exception("seat_processes_tick_failed")
            await clock.sleep(max(started + WALK_INTERVAL_S - clock.monotonic(), 0.0))

    def walker_handle(self) -> WorkerHandle:
        """The walker worker, started on first use and kept for the run (the Lab walks with it
        too)."""
        if self._walker is None:
            self._walker = self.manager.start(WALKER.spec("walker"))
        return self._walker

    def _publish(self, seat: Seat, rows: list[ProcessRow] | None) -> None:
        state = self.supervisor.seats.get(seat)
        if state is None or not moved(state.processes, rows):
            return
        state.processes = rows
        self.supervisor.publish_seat_update(
            seat, "processes_changed", {"key": seat, "processes": rows}
        )


def install(supervisor: Supervisor, manager: WorkerManager, roots: Roots) -> ProcessViews:
    """Walk the held seats of `supervisor` with a walker worker started by `manager`."""
    views = ProcessViews(supervisor, manager, roots)
    views.install()
    return views
