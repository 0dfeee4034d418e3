"""The seat files as one feature on the core: the tree worker and everything that reads with it.

The core knows nothing of git: this registers the tree worker's `work` reader for home's project
and agent rows, lays each seat's `work`, `git` and `diff` over its session snapshot (what the
snapshot told its holders is kept in `SeatState.told`, so the watch does not push it again), serves
the document verbs and watches held seats' trees (`gitwatch`).
"""

from __future__ import annotations

import functools
from typing import Any

from forge.ipc.manager import WorkerManager
from forge.supervisor.seatfiles import documents
from forge.supervisor.seatfiles.gitwatch import LINGER_S, GitWatch
from forge.supervisor.seatfiles.gitwatch import install as watch_held_trees
from forge.supervisor.seatfiles.trees import TreeReads, TreeWorker
from forge.supervisor.socket.core import Supervisor
from forge.supervisor.socket.seats import SeatState


def install(
    supervisor: Supervisor, manager: WorkerManager, *, linger_s: float = LINGER_S
) -> GitWatch:
    """Start the tree worker and register the seat files' readers, verbs and watches."""
    trees = TreeWorker(supervisor, manager)
    trees.install()
    supervisor.register_work_reader(trees.work)
    supervisor.register_session_layer(functools.partial(git_layers, trees))
    documents.install(supervisor, trees)
    return watch_held_trees(supervisor, trees, linger_s=linger_s)


async def git_layers(trees: TreeReads, state: SeatState) -> dict[str, Any]:
    """A seat's `work` row, `git` layer and `diff`, read now; what they tell is remembered."""
    found, diff = await trees.record(state.directory)
    state.told.add(found.told)
    return {"work": found.work, "git": found.git, "diff": diff}
