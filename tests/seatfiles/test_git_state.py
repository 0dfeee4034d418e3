"""A seat's git state on its session subject, and `work_changed` pushed as its tree moves."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from websockets.asyncio.client import ClientConnection

from forge.testing.clock import ManualClock
from forge.wire.git import DIFF_FILES_MAX, WORKTREE_FILES_MAX

from .rig import FRAME_S, WIRE_SEAT, Rig, Start, identify, next_kind, run, send


async def subscribe(rig: Rig) -> tuple[ClientConnection, dict[str, Any]]:
    client, _ = await rig.client()
    await send(client, {"kind": "subscribe", "what": {"session": WIRE_SEAT}})
    snapshot = await next_kind(client, "snapshot")
    return client, snapshot["data"]


def commit(tree: Path, name: str, text: str, message: str) -> None:
    (tree / name).write_text(text)
    run(tree, "add", name)
    run(tree, "commit", "-qm", message)


async def test_the_session_carries_work_git_and_diff_against_the_upstream(
    tree_rig: Start, tmp_path: Path
) -> None:
    rig = await tree_rig()
    tree = rig.tree
    commit(tree, "base.txt", "one\n", "base")
    remote = tmp_path / "remote.git"
    run(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    run(tree, "remote", "add", "origin", str(remote))
    run(tree, "push", "-q", "-u", "origin", "main")
    other = tmp_path / "other"
    run(tmp_path, "clone", "-q", str(remote), str(other))
    identify(other)
    commit(other, "theirs.txt", "x\n", "upstream moved")
    run(other, "push", "-q", "origin", "main")
    run(tree, "fetch", "-q")
    run(tree, "checkout", "-q", "-b", "feat", "main")
    run(tree, "branch", "-q", "--set-upstream-to=origin/main")
    commit(tree, "base.txt", "one\ntwo\n", "feat: two")
    commit(tree, "new.txt", "n\n", "feat: new")
    (tree / "base.txt").write_text("one\ntwo\nthree\n")
    (tree / "scratch.md").write_text("# notes\n")

    _, data = await subscribe(rig)
    assert data["work"] == {"branch": "feat", "changed": 2, "gate": True}
    git = data["git"]
    assert (git["default_branch"], git["base"], git["base_error"]) == (
        "origin/main",
        "unverified",
        None,
    )
    assert [(f["path"], f["status"], f["added"]) for f in git["worktree"]["files"]] == [
        ("base.txt", "modified", 1),
        ("scratch.md", "untracked", None),
    ]
    ahead = git["ahead"]
    assert (ahead["commit_count"], ahead["behind"], ahead["truncated"]) == (2, 1, False)
    assert [c["subject"] for c in ahead["commits"]] == ["feat: new", "feat: two"]
    assert ahead["commits"][0]["stats"]["busiest"] == [
        {"path": "new.txt", "old_path": None, "status": "added", "added": 1, "removed": 0}
    ]
    assert (ahead["stats"]["files"], ahead["stats"]["added"]) == (2, 2)
    diff = data["diff"]
    assert diff["worktree"]["state"] == "populated"
    assert [f["path"] for f in diff["worktree"]["files"]] == ["base.txt", "scratch.md"]
    [hunk] = diff["worktree"]["files"][0]["hunks"]
    assert hunk["lines"][-1] == {"kind": "added", "text": "three", "old": None, "new": 3}
    assert diff["branch_ahead"]["state"] == "populated"
    assert (diff["base"], diff["base_error"]) == ("unverified", None)


async def wait_for(
    client: ClientConnection, check: Callable[[dict[str, Any]], bool]
) -> tuple[dict[str, Any], float]:
    """The first `work_changed` body `check` accepts, and how long it took to come."""
    began = time.monotonic()
    async with asyncio.timeout(FRAME_S):
        while True:
            frame = json.loads(await client.recv())
            if frame["kind"] == "update" and "work_changed" in frame["update"]:
                body = frame["update"]["work_changed"]
                assert body["key"] == WIRE_SEAT
                assert isinstance(frame["seq"], int)
                if check(body):
                    return body, time.monotonic() - began


def files(body: dict[str, Any]) -> list[tuple[str, str]]:
    worktree = body["git"]["worktree"]
    return [(f["path"], f["status"]) for f in worktree["files"]] if worktree else []


async def test_each_change_of_the_tree_pushes_work_changed(tree_rig: Start) -> None:
    rig = await tree_rig()
    tree = rig.tree
    commit(tree, "a.txt", "a\n", "first")
    client, data = await subscribe(rig)
    assert data["git"]["worktree"] is None
    took = []

    (tree / "b.txt").write_text("b\n")
    body, seconds = await wait_for(client, lambda b: files(b) == [("b.txt", "untracked")])
    took.append(seconds)
    assert body["work"] == {"branch": "main", "changed": 1, "gate": True}

    (tree / "a.txt").write_text("a\nmore\n")
    _, seconds = await wait_for(client, lambda b: ("a.txt", "modified") in files(b))
    took.append(seconds)

    run(tree, "add", "b.txt")
    _, seconds = await wait_for(client, lambda b: ("b.txt", "added") in files(b))
    took.append(seconds)

    run(tree, "commit", "-qam", "second")
    body, seconds = await wait_for(client, lambda b: b["git"]["worktree"] is None)
    took.append(seconds)
    assert body["work"]["changed"] == 0

    run(tree, "checkout", "-q", "-b", "other")
    _, seconds = await wait_for(client, lambda b: b["work"]["branch"] == "other")
    took.append(seconds)
    print("work_changed after each change (s):", [f"{s:.3f}" for s in took])


async def unsubscribe(client: ClientConnection) -> None:
    await send(client, {"kind": "unsubscribe", "what": {"session": WIRE_SEAT}})
    await send(client, {"kind": "ping"})
    await next_kind(client, "pong")


async def test_home_hears_a_watched_seats_work_and_an_unheld_tree_lingers_then_ends(
    tree_rig: Start,
) -> None:
    clock = ManualClock()
    rig = await tree_rig(clock=clock, linger_s=30.0)
    commit(rig.tree, "a.txt", "a\n", "first")
    home, _ = await rig.client()
    await send(home, {"kind": "subscribe", "what": "home"})
    await next_kind(home, "snapshot")
    seat, _ = await subscribe(rig)
    (rig.tree / "c.txt").write_text("c\n")
    await wait_for(home, lambda b: b["work"]["changed"] == 1)
    await wait_for(seat, lambda b: b["work"]["changed"] == 1)
    await unsubscribe(seat)
    assert rig.watch.watched == {rig.tree}  # it lingers, so a reopened page finds it up
    (rig.tree / "d.txt").write_text("d\n")
    await send(seat, {"kind": "subscribe", "what": {"session": WIRE_SEAT}})
    assert (await next_kind(seat, "snapshot"))["data"]["work"]["changed"] == 2
    (rig.tree / "e.txt").write_text("e\n")
    await wait_for(seat, lambda b: b["work"]["changed"] == 3)
    await unsubscribe(seat)
    clock.advance(30.0)
    for _ in range(1000):  # the linger's wake-up runs on this loop's next turns
        if not rig.watch.watched:
            break
        await asyncio.sleep(0)
    assert rig.watch.watched == set()


async def test_a_5000_file_change_stays_inside_the_caps_and_says_so(tree_rig: Start) -> None:
    rig = await tree_rig()
    tree = rig.tree
    for n in range(5000):
        (tree / f"f{n:04d}.txt").write_text(f"{n}\n")
    run(tree, "add", ".")
    run(tree, "commit", "-qm", "many")
    for n in range(5000):
        (tree / f"f{n:04d}.txt").write_text(f"{n}\nchanged\n")
    client, _ = await rig.client()
    await send(client, {"kind": "subscribe", "what": {"session": WIRE_SEAT}})
    raw = await client.recv()
    data = json.loads(raw)["data"]
    worktree = data["git"]["worktree"]
    assert len(worktree["files"]) == WORKTREE_FILES_MAX
    assert worktree["truncated"] is True
    assert (worktree["stats"]["files"], worktree["stats"]["added"]) == (5000, 5000)
    layer = data["diff"]["worktree"]
    assert layer["state"] == "populated"
    assert len(layer["files"]) == DIFF_FILES_MAX
    assert layer["files_total"] == 5000
    assert layer["capped"] == {"files": True, "bytes": False}
    assert len(raw) < 512 * 1024
