"""The walker worker: one `ProcessWalker` kept across walks, so CPU shares span one interval.

Requests are answered one walk at a time (psutil's process cache is shared), each in a thread:
the worker's loop stays free for heartbeats however long `/proc` takes.
"""

from __future__ import annotations

import asyncio

from forge.ipc.worker import Worker, handles
from forge.procs import ProcessWalker
from forge.workers.walker.protocol import WALKER, ProcessRow, Walk, Walked
from forge.workers.walker.rows import process_rows


class WalkerHost(Worker):
    kind = WALKER.kind

    async def setup(self) -> None:
        self._walker = ProcessWalker()
        self._one_at_a_time = asyncio.Lock()

    @handles(Walk)
    async def walk(self, request: Walk) -> Walked:
        async with self._one_at_a_time:
            trees = await asyncio.to_thread(self._walk, request.sessions)
        return Walked(trees)

    def _walk(self, groups: list[list[int]]) -> list[list[ProcessRow]]:
        return [
            process_rows(root for sid in sids for root in self._walker.session(sid))
            for sids in groups
        ]
