"""`forge supervise` as a person runs it (issue 13 items 11, 15, 16): what it prints, how it
refuses an address it cannot take, what it logs at which level, what a dead host's record says."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import psutil
import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import InvalidStatus
from websockets.typing import Origin

from forge.testing.supervised import STARTUP_S, Start, Supervised, quiet
from tests.client.pty_run import FORGE, PtyRun

SEAT = {"org": "acme", "project": "proj", "label": "lead"}


def project_toml(tmp_path: Path) -> str:
    project = tmp_path / "proj"
    project.mkdir(exist_ok=True)
    return f'[[projects]]\norg = "acme"\nname = "proj"\npath = "{project}"\nshell = "/bin/sh"\n'


async def supervise_process(*args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "forge.cli", "supervise", *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip


async def test_supervise_prints_where_it_serves_and_where_it_logs(
    forge_dirs: dict[str, Path], free_port: int
) -> None:
    """Issue 13 item 11: once it listens, `forge supervise` prints one line: the page URL, the
    socket URL and the log's path (it printed nothing)."""
    process = await supervise_process("--port", str(free_port))
    try:
        assert process.stdout is not None
        async with asyncio.timeout(STARTUP_S):
            line = (await process.stdout.readline()).decode()
        log = forge_dirs["state"] / "forge" / "forge.log"
        assert line == (
            f"forge supervise: serving http://127.0.0.1:{free_port}/ "
            f"(socket ws://127.0.0.1:{free_port}/socket); log: {log}\n"
        )
    finally:
        process.send_signal(signal.SIGTERM)
        out, err = await process.communicate()
    assert (process.returncode, out, err) == (0, b"", b"")


async def test_a_port_in_use_is_one_line_and_exit_2(
    forge_dirs: dict[str, Path], free_port: int
) -> None:
    """Issue 13 item 11: a port already in use is one line naming the port and `--port`, exit 2,
    never a traceback."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", free_port))
        taken.listen()
        process = await supervise_process("--port", str(free_port))
        out, err = await process.communicate()
    assert (process.returncode, out) == (2, b"")
    assert err.decode() == (
        f"forge: port {free_port} on 127.0.0.1 is already in use (another forge supervise?); "
        "stop what holds it, or pick another port with --port\n"
    )


async def read_json(client: ClientConnection, kind: str) -> dict[str, Any]:
    """The next JSON frame of `kind`, skipping binary frames and other kinds."""
    while True:
        message = await client.recv()
        if isinstance(message, str) and (decoded := json.loads(message))["kind"] == kind:
            found: dict[str, Any] = decoded
            return found


async def open_held_terminal(supervised: Supervised) -> ClientConnection:
    """A client viewing the seat's terminal and holding its session, after its first walk."""
    client = await supervised.greeted()
    await client.send(json.dumps({"kind": "terminal_view", "seat": SEAT, "reply_to": 1}))
    assert (await read_json(client, "reply"))["body"]["ok"] is True
    await client.send(json.dumps({"kind": "subscribe", "what": {"session": SEAT}}))
    while "processes_changed" not in (await read_json(client, "update"))["update"]:
        pass
    return client


async def test_log_level_is_read_and_the_walk_is_not_logged_at_info(
    supervise: Start, tmp_path: Path
) -> None:
    """Issue 13 item 15: `[log] level` (default info) is what is written: a held seat walked
    every second writes no `seat_processes_walk` line and a dropped frame no debug record; after a
    reload to debug, both are written."""
    toml = project_toml(tmp_path)
    supervised = await supervise(toml, log_level=None)
    client = await open_held_terminal(supervised)
    await client.send(bytes([9]))
    await quiet(client)
    assert supervised.records("seat_processes_held")
    assert supervised.records("seat_processes_walk") == []
    assert supervised.records("socket_binary_dropped") == []

    supervised.config.write_text(toml + '[log]\nlevel = "debug"\n', encoding="utf-8")
    supervised.process.send_signal(signal.SIGHUP)
    await supervised.record("config_reloaded")
    await client.send(bytes([9]))
    await supervised.record("socket_binary_dropped", reason="unknown binary kind 9")
    await supervised.record("seat_processes_walk", seats=["acme/proj/lead"])


async def test_a_killed_terminal_host_is_logged_as_not_restarted(
    supervise: Start, tmp_path: Path
) -> None:
    """Issue 13 item 16: terminal hosts are not restarted, so a killed one's record says so
    (`worker_exited_not_restarted`) and no `worker_restart_scheduled` is written."""
    supervised = await supervise(project_toml(tmp_path))
    client = await open_held_terminal(supervised)
    spawned = await supervised.record("worker_spawned", kind="terminal")
    os.kill(spawned["pid"], signal.SIGKILL)
    exited = await supervised.record("worker_exited_not_restarted", worker=spawned["worker"])
    assert exited["exit"] == "SIGKILL"
    refused = await read_json(client, "error")
    assert refused["what"] == "terminal_view"
    await quiet(client)
    assert supervised.records("worker_restart_scheduled") == []
    assert supervised.records("worker_exited") == []


async def test_the_log_rotation_reaches_every_worker(supervise: Start, tmp_path: Path) -> None:
    """`[log] max_size_mib` and `backups` bound forge.log in every process that writes it: a
    worker is started with them (`FORGE_LOG_ROTATION`) as it is with the log's path."""
    toml = project_toml(tmp_path) + "[log]\nmax_size_mib = 3\nbackups = 2\n"
    supervised = await supervise(toml)
    await open_held_terminal(supervised)
    spawned = await supervised.record("worker_spawned", kind="terminal")
    environ = psutil.Process(spawned["pid"]).environ()
    assert environ["FORGE_LOG_ROTATION"] == f"{3 * 1024 * 1024}:2"
    assert environ["FORGE_LOG_FILE"] == str(supervised.log)


@pytest.fixture
def git_project(tmp_path: Path) -> Path:
    """forge.toml naming one project whose tree is a git repository with one commit."""
    config = tmp_path / "forge.toml"
    config.write_text(project_toml(tmp_path), encoding="utf-8")
    for git in (["init", "-q", "-b", "main"], ["commit", "-q", "--allow-empty", "-m", "base"]):
        subprocess.run(
            [
                "git",
                "-C",
                str(tmp_path / "proj"),
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                *git,
            ],
            check=True,
        )
    return config


async def test_ctrl_c_stops_it_with_no_traceback_from_any_child(
    forge_dirs: dict[str, Path], free_port: int, tmp_path: Path, git_project: Path
) -> None:
    """Ctrl-C in the terminal sends SIGINT to its whole foreground process group: the supervisor
    stops in order (exit 0) and no process it started prints a KeyboardInterrupt traceback (its
    tree worker, which answers git reads, did, once it had served one)."""
    del forge_dirs
    config = git_project
    # A session of its own, as a shell gives a foreground job: its group is what Ctrl-C signals.
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "forge.cli", "supervise", "--config", str(config),
        "--port", str(free_port), start_new_session=True,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    supervised = Supervised(process, free_port, config, tmp_path / "unused.log")
    try:
        assert process.stdout is not None
        async with asyncio.timeout(STARTUP_S):
            assert b"forge supervise: serving" in await process.stdout.readline()
        client = await supervised.greeted()
        await client.send(json.dumps({"kind": "terminal_view", "seat": SEAT, "reply_to": 1}))
        await client.send(json.dumps({"kind": "subscribe", "what": {"session": SEAT}}))
        async with asyncio.timeout(STARTUP_S):
            snapshot = await read_json(client, "snapshot")
        assert snapshot["data"]["work"]["branch"] == "main"  # the tree worker has answered
    finally:
        os.killpg(process.pid, signal.SIGINT)
        _, err = await process.communicate()
    assert "Traceback" not in err.decode(), err.decode()
    assert (process.returncode, err) == (0, b"")


async def test_a_second_supervisor_on_the_same_state_directory_is_refused(
    supervise: Start, forge_dirs: dict[str, Path], tmp_path: Path
) -> None:
    """Issue 36 item 7: a second `forge supervise` on the same state directory (another port, so
    the socket alone would not stop it) is one line naming the first one's pid and URL, exit 2,
    and `listening.json` still names the first one's port; a first one killed outright leaves no
    lock behind."""
    first = await supervise(project_toml(tmp_path))
    state = forge_dirs["state"] / "forge"
    await first.record("supervisor_serving")  # listening.json and supervisor.json are written
    listening = (state / "listening.json").read_bytes()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        other_port = probe.getsockname()[1]
    second = await supervise_process("--config", str(first.config), "--port", str(other_port))
    try:
        async with asyncio.timeout(STARTUP_S):
            out, err = await second.communicate()
    finally:
        if second.returncode is None:  # it started: what this test stands against
            second.kill()
            await second.wait()
    assert (second.returncode, out) == (2, b"")
    assert err.decode() == (
        f"forge: another forge supervise (pid {first.process.pid}) serves "
        f"http://127.0.0.1:{first.port}/ from {state}; stop it first, or give this one its own "
        "state directory (XDG_STATE_HOME)\n"
    )
    assert (state / "listening.json").read_bytes() == listening

    first.process.kill()
    await first.stop()
    third = await supervise_process("--config", str(first.config), "--port", str(other_port))
    try:
        assert third.stdout is not None
        async with asyncio.timeout(STARTUP_S):
            assert (await third.stdout.readline()).startswith(b"forge supervise: serving")
    finally:
        third.send_signal(signal.SIGTERM)
        await third.communicate()
    assert third.returncode == 0


async def refused_origin(port: int) -> None:
    """A page elsewhere dials the socket: the supervisor refuses it with a warning."""
    with pytest.raises(InvalidStatus):
        await connect(f"ws://127.0.0.1:{port}/socket", origin=Origin("https://evil.example"))


async def test_the_terminal_shows_human_lines_and_the_json_goes_to_the_log(
    forge_dirs: dict[str, Path], free_port: int, tmp_path: Path
) -> None:
    """Issue 36 item 4: on a terminal, `forge supervise` prints its URL and then only the log's
    warnings and errors, each one short human line (it printed every record's JSON, thousands an
    hour, and the pairing URL scrolled away); forge.log keeps every record as JSON."""
    config = tmp_path / "forge.toml"
    config.write_text(project_toml(tmp_path), encoding="utf-8")
    argv = [*FORGE, "supervise", "--config", str(config), "--port", str(free_port)]
    with PtyRun(argv) as run:
        await run.expect(b"Open in a browser on this machine:")
        await refused_origin(free_port)
        await run.expect(b" warning socket_origin_refused origin=https://evil.example peer=")
        run.process.kill(signal.SIGTERM)
        assert await run.finish() == 0
    lines = run.output.decode().splitlines()
    assert f"forge supervise: serving http://127.0.0.1:{free_port}/" in run.output.decode()
    assert not [line for line in lines if line.startswith("{") or '"record"' in line]
    (warning,) = [line for line in lines if "socket_origin_refused" in line]
    assert re.fullmatch(
        r"\d\d:\d\d:\d\d warning socket_origin_refused origin=https://evil\.example "
        r"peer=127\.0\.0\.1:\d+",
        warning,
    ), warning
    log = (forge_dirs["state"] / "forge" / "forge.log").read_text(encoding="utf-8")
    names = {json.loads(line)["record"] for line in log.splitlines()}
    assert {"socket_listening", "socket_origin_refused", "supervisor_stopped"} <= names


async def test_log_console_json_prints_the_records_as_before(
    forge_dirs: dict[str, Path], free_port: int, tmp_path: Path
) -> None:
    """`--log-console json` keeps the old console: every record's JSON line, info included."""
    del forge_dirs
    config = tmp_path / "forge.toml"
    config.write_text(project_toml(tmp_path), encoding="utf-8")
    argv = [*FORGE, "supervise", "--config", str(config), "--port", str(free_port)]
    with PtyRun([*argv, "--log-console", "json"]) as run:
        await run.expect(b'"record": "socket_listening"')
        run.process.kill(signal.SIGTERM)
        assert await run.finish() == 0
