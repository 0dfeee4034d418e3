"""Bounded commands: a fork bomb, a memory hog, a disk filler and a file hoarder each end on their
limit, named, with real bubblewrap and the real kernel; strays are counted as they are killed.

Every attack runs twice where the mechanism matters: under this machine's cgroups (v1 here and in
CI, v2 where delegated) and under the rlimit fallback, forced. The limits are small (64 processes,
128 MiB, 16 MiB, 64 files) so the attacks stay light on a shared 2-core machine; the fork bomb the
fallback gets is a bounded one (a loop of 1000 forks): the fallback samples, and a real bomb would
run between two samples.
"""

from __future__ import annotations

import asyncio
import os
import resource
import shutil
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

import psutil
import pytest
from structlog.testing import capture_logs

from forge.attempt.command import MARKER_ENV, CommandResult, run_command
from forge.attempt.limits import (
    MIB,
    PREFERENCE,
    Bounds,
    Limits,
    Mechanism,
    capped,
    cgroup_mounts,
    cgroup_paths,
    event_count,
    find_host,
    make_v1_group,
    make_v2_group,
    proportional_kib,
    this_host,
    tree_bytes,
)
from forge.attempt.sandbox import PRIVATE_TMP, Sandbox, Trees, probe
from forge.attempt.settings import LabSettings, limits_from_config
from forge.clock import SYSTEM_CLOCK
from forge.config import load_config
from forge.procs import descendants, find_by_environ, namespace_pids

SMALL = Limits(pids=64, memory_bytes=128 * MIB, disk_bytes=16 * MIB, open_files=64)
TIMEOUT_S = 90.0
"""Far above any attack's end here: a result that timed out failed the test."""
CGROUPS: tuple[Mechanism, ...] = ("cgroup2", "cgroup1")


@pytest.fixture
def bwrap() -> str:
    found = probe(os.environ)
    if found.program is None:
        pytest.skip(f"bubblewrap cannot run here: {found.reason}")
    return found.program


@pytest.fixture(params=["cgroup", "rlimit"])
def mechanisms(request: pytest.FixtureRequest) -> tuple[Mechanism, ...]:
    """This machine's cgroups, then the fallback, forced."""
    if request.param == "rlimit":
        return ("rlimit",)
    host = this_host()
    if host.v2 is None and host.v1 is None:
        pytest.skip(f"no cgroup this process may make groups in: {host.why_not}")
    return PREFERENCE


@pytest.fixture
def work(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    return folder


@pytest.fixture(autouse=True)
def no_group_left() -> Iterator[None]:
    """Every command's group is gone after it (this process's runner leaf, under v2, stays)."""
    yield
    host = this_host()
    parents = [*([host.v2] if host.v2 else []), *(host.v1 or ())]
    ours = f"forge-{os.getpid()}-"
    left = [
        entry
        for parent in parents
        for entry in parent.iterdir()
        if entry.name.startswith(ours) and not entry.name.endswith("-runner")
    ]
    assert left == []


async def run(
    argv: Sequence[str],
    work: Path,
    *,
    bounds: Bounds | None,
    sandbox: Sandbox | None,
    marker: str | None = None,
    env: dict[str, str] | None = None,
) -> CommandResult:
    marker = marker or f"limits-{uuid.uuid4().hex}"
    result = await run_command(
        argv,
        cwd=work,
        env={"PATH": os.environ["PATH"], MARKER_ENV: marker, **(env or {})},
        timeout_s=TIMEOUT_S,
        clock=SYSTEM_CLOCK,
        output_cap=1 << 20,
        sandbox=sandbox,
        bounds=bounds,
    )
    assert find_by_environ(MARKER_ENV, marker) == []
    return result


def boxed(bwrap: str, work: Path) -> Sandbox:
    """The attempt's sandbox with `work` its only writable tree."""
    box = Sandbox.for_attempt(bwrap, hidden=[], mounts=[], tmpfs_bytes=SMALL.disk_bytes)
    return box.with_trees(Trees(writable=(str(work),)))


def python(code: str) -> list[str]:
    return ["python3", "-c", code]


def running_with(token: str) -> list[int]:
    """Processes on the host whose command line holds `token` (a test's unique sleep length)."""
    found = []
    for process in psutil.process_iter(["cmdline", "status"]):
        mine = token in " ".join(process.info["cmdline"] or []) and process.pid != os.getpid()
        if mine and process.info["status"] != psutil.STATUS_ZOMBIE:
            found.append(process.pid)
    return found


def unique_sleep() -> str:
    """A sleep length no other process uses, to find its sleepers by command line."""
    return f"{10_000 + uuid.uuid4().int % 10_000}.{uuid.uuid4().int % 10**6:06d}"


# -- processes ---------------------------------------------------------------------------------

BASH_BOMB = ["bash", "-c", ":(){ :|:& };:; wait"]
"""The classic, its first shell waiting on it: one that exits at once leaves the bomb to the sweep,
which may kill it before it reaches the bound (then it is counted as strays, no limit named)."""
LOOP_OF_FORKS = python(
    "import os, time\n"
    "for _ in range(1000):\n"
    "    if os.fork() == 0:\n"
    "        time.sleep(1000)\n"
    "        os._exit(0)\n"
    "time.sleep(1000)\n"
)


async def test_a_fork_bomb_ends_on_the_pids_limit_while_a_sibling_carries_on(
    bwrap: str, mechanisms: tuple[Mechanism, ...], tmp_path: Path
) -> None:
    bomb_work, sibling_work = tmp_path / "bomb", tmp_path / "sibling"
    bomb_work.mkdir()
    sibling_work.mkdir()
    bomb = BASH_BOMB if mechanisms != ("rlimit",) else LOOP_OF_FORKS
    sibling_argv = ["sh", "-c", "for i in $(seq 30); do /bin/true; done; echo carried on"]
    bombed, sibling = await asyncio.gather(
        run(
            bomb,
            bomb_work,
            bounds=Bounds(SMALL, [bomb_work], mechanisms=mechanisms),
            sandbox=boxed(bwrap, bomb_work),
        ),
        run(
            sibling_argv,
            sibling_work,
            bounds=Bounds(SMALL, [sibling_work], mechanisms=mechanisms),
            sandbox=boxed(bwrap, sibling_work),
        ),
    )
    assert (bombed.limit, bombed.timed_out, bombed.ok) == ("pids", False, False)
    assert (bombed.bounded_by in CGROUPS) is (mechanisms != ("rlimit",))
    assert (sibling.ok, sibling.stdout, sibling.limit) == (True, b"carried on\n", None)


# -- memory ------------------------------------------------------------------------------------

ONE_HOG = python("hoard = []\nwhile True:\n    hoard.append(bytearray(1 << 20))\n")
THREE_HOGS = python(
    "import os, time\n"
    "for _ in range(3):\n"
    "    if os.fork() == 0:\n"
    "        held = bytearray(60 << 20)\n"
    "        held[::4096] = b'x' * len(held[::4096])\n"
    "        time.sleep(1000)\n"
    "time.sleep(1000)\n"
)


async def test_a_memory_hog_ends_on_the_memory_limit(
    bwrap: str, mechanisms: tuple[Mechanism, ...], work: Path
) -> None:
    """Under cgroups one hog is OOM-killed in its group; under rlimits three, each within its
    own RLIMIT_DATA, pass the bound together and the watch ends them."""
    hog = THREE_HOGS if mechanisms == ("rlimit",) else ONE_HOG
    bounds = Bounds(SMALL, [work], mechanisms=mechanisms)
    result = await run(hog, work, bounds=bounds, sandbox=boxed(bwrap, work))
    assert (result.limit, result.timed_out, result.ok) == ("memory", False, False)


PAST_THE_BOUND = python("held = bytearray(2 * 128 << 20)\n")
"""One allocation twice SMALL's memory: RLIMIT_DATA refuses it before a page is resident (a hog
growing 1 MiB at a time may instead meet the watch first, its libraries counted in its PSS)."""


async def test_under_rlimits_one_process_cannot_allocate_past_the_bound(
    bwrap: str, work: Path
) -> None:
    bounds = Bounds(SMALL, [work], mechanisms=("rlimit",))
    result = await run(PAST_THE_BOUND, work, bounds=bounds, sandbox=boxed(bwrap, work))
    assert result.exit_code == 1
    assert b"MemoryError" in result.stderr
    assert result.bounded_by == "rlimit"


# -- disk --------------------------------------------------------------------------------------

MANY_FILES = python(
    "import itertools\n"
    "for n in itertools.count():\n"
    "    with open(f'fill-{n}', 'wb') as out:\n"
    "        out.write(b'x' * (1 << 20))\n"
)
ONE_BIG_FILE = python(
    "with open('big', 'wb') as out:\n    while True:\n        out.write(b'x' * (1 << 20))\n"
)
FULL_TMP = python(
    "import itertools, time\n"
    "try:\n"
    "    for n in itertools.count():\n"
    "        with open(f'/tmp/fill-{n}', 'wb') as out:\n"
    "            out.write(b'x' * (1 << 20))\n"
    "except OSError as error:\n"
    "    print(error.strerror, flush=True)\n"
    "time.sleep(1000)\n"
)


async def test_a_disk_filler_ends_on_the_disk_limit(
    bwrap: str, mechanisms: tuple[Mechanism, ...], work: Path
) -> None:
    """Files of 1 MiB each, none past the per-file bound: the watch of the trees ends it."""
    (work / "before").write_bytes(b"x" * (20 * MIB))  # the workspace as checked out: not written
    bounds = Bounds(SMALL, [work], mechanisms=mechanisms)
    result = await run(MANY_FILES, work, bounds=bounds, sandbox=boxed(bwrap, work))
    assert (result.limit, result.timed_out, result.exit_code) == ("disk", False, None)


async def test_one_file_stops_at_the_disk_bound(
    bwrap: str, mechanisms: tuple[Mechanism, ...], work: Path
) -> None:
    """RLIMIT_FSIZE: the write past the bound kills the writer (SIGXFSZ) before any watch."""
    bounds = Bounds(SMALL, [work], mechanisms=mechanisms)
    result = await run(ONE_BIG_FILE, work, bounds=bounds, sandbox=boxed(bwrap, work))
    assert (result.limit, result.timed_out) == ("disk", False)
    assert (work / "big").stat().st_size == SMALL.disk_bytes


async def test_a_full_private_tmp_ends_on_the_disk_limit(
    bwrap: str, mechanisms: tuple[Mechanism, ...], work: Path
) -> None:
    """The sandbox's /tmp is a tmpfs of the disk bound: the writer sees ENOSPC, and the watch,
    looking through the sandbox's root, names the limit."""
    bounds = Bounds(SMALL, [work], mechanisms=mechanisms)
    result = await run(FULL_TMP, work, bounds=bounds, sandbox=boxed(bwrap, work))
    assert (result.limit, result.timed_out, result.stdout) == (
        "disk",
        False,
        b"No space left on device\n",
    )


async def test_another_filesystem_at_a_scratch_path_is_not_counted_as_written(
    bwrap: str, work: Path
) -> None:
    """While bubblewrap sets up, a sandboxed process's /tmp shows filesystems that are not its
    scratch: bubblewrap's own scratch root (an unsized tmpfs, as here), the host's root under
    the old root (40 GB used). Counting them ended sound commands on a `disk` limit under load;
    only a scratch folder of the bound's size counts."""
    filler = f"head -c {SMALL.disk_bytes + MIB} /dev/zero > /tmp/filler && echo ready"
    shown = [bwrap, "--dev-bind", "/", "/", "--tmpfs", "/tmp", "--unshare-pid"]
    setting_up = await asyncio.create_subprocess_exec(
        *shown,
        "--die-with-parent",
        "--",
        "sh",
        "-c",
        f"{filler} && exec sleep {unique_sleep()}",
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert setting_up.stdout is not None
        assert await setting_up.stdout.readline() == b"ready\n"
        bounded = await Bounds(SMALL, [work], mechanisms=("rlimit",)).command(tmpfs=PRIVATE_TMP)
        assert await bounded.settle(setting_up.pid) is None
    finally:
        setting_up.kill()  # its namespace dies with it (--die-with-parent)
        await setting_up.communicate()


# -- open files --------------------------------------------------------------------------------


async def test_opening_past_the_file_limit_fails_inside(
    bwrap: str, mechanisms: tuple[Mechanism, ...], work: Path
) -> None:
    hoard = python(
        "import errno\nheld = []\ntry:\n"
        "    while True:\n        held.append(open('/dev/null'))\n"
        "except OSError as error:\n"
        "    print(errno.errorcode[error.errno], max(f.fileno() for f in held) + 1)\n"
    )
    bounds = Bounds(SMALL, [work], mechanisms=mechanisms)
    result = await run(hoard, work, bounds=bounds, sandbox=boxed(bwrap, work))
    assert result.ok, result.stderr
    assert result.stdout == f"EMFILE {SMALL.open_files}\n".encode()


# -- strays ------------------------------------------------------------------------------------


async def test_sleepers_without_the_marker_are_killed_and_counted(bwrap: str, work: Path) -> None:
    """50 sleepers started with an empty environment outlive the command in its sandbox: the
    sweep finds them under the sandbox's init, kills and counts them, and logs it once."""
    length = unique_sleep()
    script = f"for i in $(seq 50); do env -i /bin/sleep {length} & done; echo started"
    with capture_logs() as records:
        result = await run(["bash", "-c", script], work, bounds=None, sandbox=boxed(bwrap, work))
    assert (result.ok, result.stdout, result.strays_killed) == (True, b"started\n", 50)
    assert running_with(length) == []
    logged = [r for r in records if r["event"] == "lab_strays_killed"]
    assert [r["count"] for r in logged] == [50]


async def test_a_stray_named_like_bubblewrap_is_still_counted(bwrap: str, work: Path) -> None:
    """A name is the recipe's to choose: only the kernel's word (the init of the sandbox's PID
    namespace) spares bubblewrap's own process from the count."""
    shutil.copy("/bin/sleep", work / "bwrap")
    length = unique_sleep()
    script = f"for i in 1 2 3 4 5; do ./bwrap {length} & done"
    result = await run(["bash", "-c", script], work, bounds=None, sandbox=boxed(bwrap, work))
    assert result.strays_killed == 5
    assert running_with(length) == []


async def test_detached_strays_outside_a_sandbox_are_found_by_their_group(work: Path) -> None:
    """Without the sandbox, sleepers in sessions of their own without the marker escape every
    lookup but the cgroup, which they cannot leave."""
    host = this_host()
    if host.v2 is None and host.v1 is None:
        pytest.skip(f"no cgroup this process may make groups in: {host.why_not}")
    length = unique_sleep()
    script = f"for i in $(seq 10); do setsid env -i /bin/sleep {length} & done"
    bounds = Bounds(SMALL, [work])
    result = await run(["bash", "-c", script], work, bounds=bounds, sandbox=None)
    assert (result.ok, result.strays_killed, result.bounded_by in CGROUPS) == (True, 10, True)
    assert running_with(length) == []


async def test_a_command_that_leaves_nothing_logs_no_strays(bwrap: str, work: Path) -> None:
    with capture_logs() as records:
        result = await run(
            ["sh", "-c", "echo quiet"],
            work,
            bounds=Bounds(SMALL, [work]),
            sandbox=boxed(bwrap, work),
        )
    assert (result.ok, result.strays_killed, result.limit) == (True, 0, None)
    assert [r for r in records if r["event"] == "lab_strays_killed"] == []


# -- the pure parts ------------------------------------------------------------------------------

HYBRID = """9:name=systemd:/
8:pids:/
4:memory:/process_api/abc
1:cpu,cpuacct:/
0::/
"""


def test_cgroup_paths_reads_v1_and_v2_lines() -> None:
    paths = cgroup_paths(HYBRID)
    assert (paths["pids"], paths["memory"], paths["cpuacct"], paths[""]) == (
        "/",
        "/process_api/abc",
        "/",
        "/",
    )
    assert cgroup_paths("0::/user.slice/user-1000.slice/app.slice/x.scope\n") == {
        "": "/user.slice/user-1000.slice/app.slice/x.scope"
    }


def test_cgroup_mounts_finds_each_hierarchy() -> None:
    mounts = [
        ("/sys/fs/cgroup", "tmpfs", "rw"),
        ("/sys/fs/cgroup/cpu", "cgroup", "rw,relatime,cpu"),
        ("/sys/fs/cgroup/memory", "cgroup", "rw,relatime,memory"),
        ("/sys/fs/cgroup/pids", "cgroup", "rw,relatime,pids"),
        ("/sys/fs/cgroup/unified", "cgroup2", "rw,relatime"),
    ]
    assert cgroup_mounts(mounts) == {
        "memory": Path("/sys/fs/cgroup/memory"),
        "pids": Path("/sys/fs/cgroup/pids"),
        "": Path("/sys/fs/cgroup/unified"),
    }


def test_event_counts_and_caps() -> None:
    assert event_count("max 3\n", "max") == 3
    assert event_count("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n", "oom_kill") == 2
    assert event_count("low 0\nhigh 0\nmax 9\noom 1\n", "oom_kill") == 0
    assert event_count("", "max") == 0
    assert capped(4096, 1024) == 1024
    assert capped(4096, resource.RLIM_INFINITY) == 4096
    assert proportional_kib("Rss: 1684 kB\nPss: 192 kB\nPss_Dirty: 116 kB\n") == 192


def fake_v2(root: Path, controllers: str) -> Path:
    """A cgroup2 mount as plain files: enough to test which mechanism is chosen and what is
    written (the kernel's side is what the tests above run against)."""
    own = root / "user.slice" / "forge.scope"
    own.mkdir(parents=True)
    (own / "cgroup.controllers").write_text(controllers)
    return own


def test_find_host_takes_v2_only_with_its_controllers_delegated(tmp_path: Path) -> None:
    own = fake_v2(tmp_path, "cpu io memory pids\n")
    mounts = [(str(tmp_path), "cgroup2", "rw")]
    host = find_host("0::/user.slice/forge.scope\n", mounts)
    assert (host.v2, host.v1) == (own, None)
    assert "cgroup1" in host.why_not
    (own / "cgroup.controllers").write_text("cpu io\n")
    refused = find_host("0::/user.slice/forge.scope\n", mounts)
    assert refused.v2 is None
    assert "not delegated" in refused.why_not["cgroup2"]


def test_a_v2_group_writes_its_limits_and_reads_its_events(tmp_path: Path) -> None:
    parent = fake_v2(tmp_path, "memory pids\n")
    group = make_v2_group(parent, "forge-1-1", SMALL)
    folder = parent / "forge-1-1"
    assert (folder / "pids.max").read_text() == "64"
    assert (folder / "memory.max").read_text() == str(128 * MIB)
    assert not (folder / "memory.swap.max").exists()  # written only where the kernel offers it
    assert group.reached() is None
    (folder / "memory.events").write_text("low 0\nhigh 0\nmax 4\noom 1\noom_kill 1\n")
    assert group.reached() == "memory"
    (folder / "pids.events").write_text("max 1\n")
    assert group.reached() == "pids"
    (folder / "cgroup.procs").write_text("12\n34\n")
    assert group.members() == {12, 34}
    assert group.procs_files() == [folder / "cgroup.procs"]


def test_a_v1_pair_that_cannot_be_made_leaves_nothing(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    pids.mkdir()
    with pytest.raises(FileNotFoundError):
        make_v1_group(pids, tmp_path / "no-memory-hierarchy", "forge-1-1", SMALL)
    assert list(pids.iterdir()) == []


def test_tree_bytes_counts_blocks_once_and_follows_no_link(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    (tree / "sub" / "data").write_bytes(os.urandom(MIB))
    os.link(tree / "sub" / "data", tree / "again")
    (tree / "outside").symlink_to("/usr")
    with open(tree / "sparse", "wb") as sparse:
        sparse.truncate(1 << 30)
    total = tree_bytes([tree])
    assert MIB <= total < 2 * MIB
    assert tree_bytes([tmp_path / "absent"]) == 0


def test_descendants_stop_at_the_bound_and_namespace_pids_know_the_level() -> None:
    assert namespace_pids(os.getpid())[-1] == os.getpid()
    assert namespace_pids(2**22 + 1) == ()
    assert len(descendants(1, at_most=3)) <= 3


def test_limits_in_forge_toml_reach_the_settings(tmp_path: Path) -> None:
    """The `[lab]` keys' defaults are `Limits`' own, and a set key reaches them in its units."""
    default = tmp_path / "default.toml"
    default.write_text("")
    assert limits_from_config(load_config(default).config.lab) == Limits() == LabSettings().limits
    chosen = tmp_path / "forge.toml"
    chosen.write_text(
        "[lab]\nlimit_pids = 64\nlimit_memory_mib = 128\nlimit_disk_mib = 16\n"
        "limit_open_files = 64\n"
    )
    assert limits_from_config(load_config(chosen).config.lab) == SMALL
