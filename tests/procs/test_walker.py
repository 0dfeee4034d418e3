"""The walker against real process trees: nesting, a setsid escapee, groups, sessions, kills."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator

import psutil
import pytest

from forge import procs
from forge.procs import ProcessWalker, find_by_environ, kill_processes

# A parent that starts one plain child and one that moves to its own session, then reports ready.
_TREE = """
import os, subprocess, sys, time
plain = subprocess.Popen(["sleep", "60"])
escaped = subprocess.Popen(["sleep", "61"], start_new_session=True)
for child in (plain, escaped):
    # Popen returns once exec is past its point of no return, before the kernel has laid out
    # the new environment: /proc/<pid>/environ reads empty for that moment.
    while not open(f"/proc/{child.pid}/environ", "rb").read():
        os.sched_yield()
print(plain.pid, escaped.pid, flush=True)
sys.stdin.read()
"""


@pytest.fixture
def tree() -> Iterator[tuple[subprocess.Popen[str], int, int, str]]:
    marker = uuid.uuid4().hex
    env = {**os.environ, "FORGE_TEST_MARK": marker}
    root = subprocess.Popen(
        [sys.executable, "-c", _TREE],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    assert root.stdout is not None
    plain, escaped = (int(x) for x in root.stdout.readline().split())
    yield root, plain, escaped, marker
    for pid in (plain, escaped, root.pid):
        with contextlib.suppress(psutil.NoSuchProcess):
            psutil.Process(pid).kill()
    root.communicate()


def test_tree_holds_children_including_one_in_its_own_session(
    tree: tuple[subprocess.Popen[str], int, int, str],
) -> None:
    root, plain, escaped, _ = tree
    info = ProcessWalker().tree(root.pid)
    assert info is not None
    by_pid = {p.pid: p for p in info.walk()}
    assert {root.pid, plain, escaped} <= set(by_pid)
    assert by_pid[plain].ppid == root.pid
    assert by_pid[plain].cmdline == ("sleep", "60")
    assert not by_pid[plain].own_session
    assert by_pid[escaped].own_session
    assert by_pid[escaped].sid == escaped
    assert info.rss > 0
    assert info.started <= psutil.Process(root.pid).create_time() + 1


@pytest.mark.parametrize("children_listed", [True, False], ids=["children-lists", "whole-table"])
def test_a_tree_is_the_same_read_down_the_children_lists_or_from_the_whole_table(
    tree: tuple[subprocess.Popen[str], int, int, str],
    monkeypatch: pytest.MonkeyPatch,
    children_listed: bool,
) -> None:
    root, plain, escaped, _ = tree
    if children_listed and not procs._children_listed():
        pytest.skip("this kernel does not list children in /proc")
    monkeypatch.setattr(procs, "_children_listed", lambda: children_listed)
    walker = ProcessWalker()
    for _ in range(2):  # the second walk reuses the first's handles
        info = walker.tree(root.pid)
        assert info is not None
        assert sorted(p.pid for p in info.walk()) == sorted([root.pid, plain, escaped])
        assert [(p.pid, p.ppid) for p in info.children] == [(plain, root.pid), (escaped, root.pid)]


def test_group_and_session_attribute_the_escapee_to_its_origin(
    tree: tuple[subprocess.Popen[str], int, int, str],
) -> None:
    root, plain, escaped, _ = tree
    walker = ProcessWalker()
    group_pids = {p.pid for node in walker.group(root.pid) for p in node.walk()}
    assert {root.pid, plain, escaped} <= group_pids
    session = walker.session(root.pid)
    assert [node.pid for node in session] == [root.pid]
    assert escaped in {p.pid for p in session[0].walk()}


# A root whose child (a shell) has a child of its own; the root reaps the shell when it dies.
_CHAIN = """
import subprocess, sys
middle = subprocess.Popen(["sh", "-c", "sleep 63 & echo $!; wait"], stdout=-1, text=True)
print(middle.pid, middle.stdout.readline().strip(), flush=True)
middle.wait()
print("reaped", flush=True)
sys.stdin.read()
"""


def test_a_process_gone_mid_walk_is_left_out_and_its_children_stay(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The table is read first and each process's details after: one may exit in between."""
    root = subprocess.Popen(
        [sys.executable, "-c", _CHAIN],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert root.stdout is not None
    middle, grandchild = (int(x) for x in root.stdout.readline().split())
    try:
        table = procs._links()  # read while every process lives
        psutil.Process(middle).kill()
        assert root.stdout.readline().strip() == "reaped"  # gone from the process table
        monkeypatch.setattr(procs, "_links", lambda: table)
        session = ProcessWalker().session(root.pid)
        walked = {p.pid for node in session for p in node.walk()}
        assert middle not in walked
        assert {root.pid, grandchild} <= walked
    finally:
        with contextlib.suppress(psutil.NoSuchProcess):
            psutil.Process(grandchild).kill()
        root.kill()
        root.communicate()


def test_missing_root_is_none() -> None:
    dead = subprocess.run(["sh", "-c", "echo $$"], capture_output=True, text=True, check=True)
    assert ProcessWalker().tree(int(dead.stdout)) is None


async def test_find_by_environ_and_kill_leave_nothing(
    tree: tuple[subprocess.Popen[str], int, int, str],
) -> None:
    root, plain, escaped, marker = tree
    found = find_by_environ("FORGE_TEST_MARK", marker)
    assert {root.pid, plain, escaped} <= set(found)
    signalled = await kill_processes(found, grace_s=2.0)
    assert set(signalled) == set(found)
    root.wait()
    assert all(
        not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
        for pid in (plain, escaped)
    )
    assert find_by_environ("FORGE_TEST_MARK", marker) == []


_IGNORES_TERM = (
    "import signal, time\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "print(1, flush=True)\n"
    "time.sleep(60)\n"
)


async def test_kill_escalates_to_sigkill_for_a_process_ignoring_term() -> None:
    stubborn = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _IGNORES_TERM, stdout=asyncio.subprocess.PIPE
    )
    assert stubborn.stdout is not None
    await stubborn.stdout.readline()
    await kill_processes([stubborn.pid], grace_s=0.2)
    assert await stubborn.wait() == -9
