"""The walker worker: one `ProcessWalker` kept across walks, so CPU shares span one interval.

Requests are answered one walk at a time (psutil's process cache is shared), each in a thread:
the worker's loop stays free for heartbeats however long `/proc` takes.
"""

from __future__ import annotations

import asyncio
from typing import Any

from forge.ipc.errors import RequestFailed
from forge.ipc.messages import Request
from forge.ipc.worker import Worker, handles
from forge.procs import ProcessWalker
from forge.workers.walker.rows import ProcessRow, process_rows

KIND = "walker"


class WalkerHost(Worker):
    kind = KIND

    async def setup(self) -> None:
        self._walker = ProcessWalker()
        self._one_at_a_time = asyncio.Lock()

    @handles("walk")
    async def walk(self, request: Request) -> dict[str, list[list[ProcessRow]]]:
        """`{sessions: [[sid, ...], ...]}`: per group, every process of those sessions plus
        descendants that moved to a session of their own."""
        groups = _session_groups(request.args)
        async with self._one_at_a_time:
            trees = await asyncio.to_thread(self._walk, groups)
        return {"trees": trees}

    def _walk(self, groups: list[list[int]]) -> list[list[ProcessRow]]:
        return [
            process_rows(root for sid in sids for root in self._walker.session(sid))
            for sids in groups
        ]


def _session_groups(args: Any) -> list[list[int]]:
    sessions = args.get("sessions") if isinstance(args, dict) else None
    if not isinstance(sessions, list) or not all(
        isinstance(group, list) and all(type(sid) is int and sid > 0 for sid in group)
        for group in sessions
    ):
        raise RequestFailed(
            "bad_request", f"walk takes sessions: a list of lists of session ids, not {args!r}"
        )
    return sessions
