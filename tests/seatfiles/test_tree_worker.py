"""The tree worker (`python -m forge.workers.trees`): a worker like any other, with its row in
home's `workers`, restarted by the manager when it dies, its reads answering again after."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
from websockets.asyncio.client import ClientConnection

from forge.ipc.manager import WorkerManager
from forge.testing.supervised import Start as Supervise
from forge.workers.trees.protocol import TREES, ReadScan, Seen

from .rig import FRAME_S, WIRE_SEAT, Rig, Start, make_repo, next_kind, run, send

Row = dict[str, Any]


async def trees_row(
    client: ClientConnection, first: list[Row], wanted: Callable[[Row], bool]
) -> Row:
    """The tree worker's row once `wanted` holds: in `first` (home's snapshot) or in a later
    `workers_changed`."""
    rows = first
    async with asyncio.timeout(FRAME_S):
        while True:
            row = next((row for row in rows if row["name"] == "trees"), None)
            if row is not None and wanted(row):
                return row
            rows = (
                (await next_kind(client, "update"))["update"]
                .get("workers_changed", {})
                .get("workers", [])
            )


async def home(rig: Rig) -> tuple[ClientConnection, list[Row]]:
    client, _ = await rig.client()
    await send(client, {"kind": "subscribe", "what": "home"})
    return client, (await next_kind(client, "snapshot"))["data"]["workers"]


async def test_the_tree_worker_has_a_row_in_homes_workers(tree_rig: Start) -> None:
    rig = await tree_rig()
    client, workers = await home(rig)
    row = await trees_row(client, workers, lambda row: row["state"] == "ready")
    assert (row["kind"], row["restarts"]) == ("trees", 0)
    assert isinstance(row["pid"], int)


async def test_forge_supervise_lists_the_tree_worker_that_read_homes_git(
    supervise: Supervise, tmp_path: Path
) -> None:
    """The composed supervisor (`running_supervisor`): home's snapshot, whose project row git
    was just read for, lists the worker that read it."""
    tree = tmp_path / "tree"
    tree.mkdir()
    run(tree, "init", "-q", "-b", "main")
    supervised = await supervise(f'[[projects]]\norg = "acme"\nname = "p"\npath = "{tree}"\n')
    client = await supervised.greeted()
    await client.send(json.dumps({"kind": "subscribe", "what": "home"}))
    data = json.loads(await client.recv())["data"]
    assert data["projects"][0]["work"]["gate"] is True
    assert [(row["name"], row["kind"]) for row in data["workers"]] == [("trees", "trees")]


async def test_a_killed_tree_worker_is_seen_restarted_and_read_and_watched_again(
    tree_rig: Start,
) -> None:
    rig = await tree_rig()
    client, workers = await home(rig)
    seat, _ = await rig.client()
    await send(seat, {"kind": "subscribe", "what": {"session": WIRE_SEAT}})
    await next_kind(seat, "snapshot")
    ready = await trees_row(client, workers, lambda row: row["state"] == "ready")
    os.kill(ready["pid"], signal.SIGKILL)
    restarting = await trees_row(client, [], lambda row: row["state"] == "restarting")
    assert restarting["last_exit"] == "SIGKILL"
    again = await trees_row(client, [], lambda row: row["state"] == "ready")
    assert again["restarts"] == 1
    assert again["pid"] != ready["pid"]
    assert rig.watch.watched == set()  # its watch ended with it (and is watched again below)
    await send(seat, {"kind": "unsubscribe", "what": {"session": WIRE_SEAT}})
    await send(seat, {"kind": "subscribe", "what": {"session": WIRE_SEAT}})
    snapshot = await next_kind(seat, "snapshot")
    assert snapshot["data"]["work"] == {"branch": "main", "changed": 0, "gate": True}
    (rig.tree / "new.txt").write_text("n\n")
    while True:
        frame = await next_kind(seat, "update")
        if "work_changed" in frame["update"]:
            assert frame["update"]["work_changed"]["work"]["changed"] == 1
            break


async def test_a_scan_answers_the_rows_not_the_status_entries(tmp_path: Path) -> None:
    """The supervisor draws the work row and the git layer; a busy tree's status entries (here
    300 untracked files) stay in the tree worker: the answer names only the files of the
    layer's capped list."""
    make_repo(tmp_path)
    for n in range(300):
        (tmp_path / f"new-{n}.txt").write_text("x\n")
    async with WorkerManager() as manager:
        handle = manager.start(TREES.spec("trees"))
        ask = ReadScan(directory=str(tmp_path))
        reply = await handle.request(ask.method(), ask.args(), within=FRAME_S)
    seen = msgspec.convert(reply.result, Seen)
    assert seen.work.changed == 300
    assert msgspec.json.encode(reply.result).count(b"new-") < 300
