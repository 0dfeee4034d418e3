"""A process that runs a `WorkerManager`, so a test can SIGKILL it and look for orphans.

`python -m forge.testing.manager_host N` starts N misbehaving workers, each with a child that
dies with it, prints one JSON line `{"manager": pid, "workers": [...], "children": [...]}` once
all are ready, and then waits to be killed.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys

from forge import eventloop, logs
from forge.ipc.manager import WorkerManager
from forge.ipc.protocol import call
from forge.testing.misbehaving_protocol import MISBEHAVING, Children, Pid


async def host(count: int) -> None:
    async with WorkerManager() as manager:
        spawning = {"spawn_child": "pdeathsig"}
        handles = [
            manager.start(MISBEHAVING.spec(f"orphan-{index}", config=spawning))
            for index in range(count)
        ]
        workers = [await call(handle, Pid(), within=30.0) for handle in handles]
        children = [pid for handle in handles for pid in await call(handle, Children())]
        report = {"manager": os.getpid(), "workers": workers, "children": children}
        print(json.dumps(report), flush=True)
        await asyncio.Event().wait()


if __name__ == "__main__":
    logs.configure(None, to_stderr=True, console="json", process="manager_host")
    eventloop.run(host(int(sys.argv[1]) if len(sys.argv) > 1 else 2))
