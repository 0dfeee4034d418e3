"""`forge status` as a person runs it: a subprocess against a real supervisor, exit codes 0/1/3."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime

from forge.client.connection import ForgeConnection, connect
from forge.client.frames import Update
from forge.ipc.manager import WorkerManager
from forge.testing.misbehaving_protocol import MISBEHAVING
from forge.testing.supervised import Start
from forge.wire.client import TerminalView
from forge.wire.seats import HOME, Seat

from .conftest import InProcess, forge


async def test_status_finds_the_supervisor_from_forge_toml_and_answers_0(
    supervise: Start, project_toml: str, free_port: int
) -> None:
    supervised = await supervise(f"[server]\nport = {free_port}\n{project_toml}")
    code, out, err = await forge("status", "--config", str(supervised.config))
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].endswith(f"at ws://127.0.0.1:{free_port}/socket")
    assert lines[0].startswith("forge 0.")
    assert "  acme/proj  " in out
    assert "seats: none started" in out
    assert "workers (1)" in out  # the tree worker alone
    assert "  trees  trees  " in out


async def test_a_broken_forge_toml_still_finds_the_supervisor_serving_it(
    supervise: Start, project_toml: str, free_port: int
) -> None:
    """Issue 13 item 12: the supervisor keeps serving the last forge.toml that loaded, so while
    the file is broken `forge status` dials the address that supervisor listens on, says on
    stderr that the file does not load, and answers (it exited 2)."""
    supervised = await supervise(project_toml)
    supervised.config.write_text('[server]\nport = "x"\n', encoding="utf-8")
    code, out, err = await forge("status", "--config", str(supervised.config))
    url = f"ws://127.0.0.1:{free_port}/socket"
    assert code == 0
    assert out.splitlines()[0].endswith(f"at {url}")
    assert err == (
        f"forge: {supervised.config} line 2: server.port: expected an integer from 1 to 65535, "
        f'got "x"\nforge: forge.toml does not load; dialling {url} (where its supervisor last '
        "listened)\n"
    )


async def test_status_json_is_the_home_subjects_facts(supervise: Start, project_toml: str) -> None:
    supervised = await supervise(project_toml)
    code, out, _ = await forge("status", "--json", "--url", supervised.url)
    assert code == 0
    decoded = json.loads(out)
    async with connect(supervised.url) as connection:
        home = await connection.subscribe(HOME)
    assert decoded["boot_id"] == home["boot_id"]
    assert decoded["projects"] == home["projects"]
    assert decoded["seats"] == home["agents"] == []
    assert [row["name"] for row in decoded["workers"]] == ["trees"]  # the tree worker alone


async def test_no_supervisor_exits_3_with_the_reason(free_port: int) -> None:
    url = f"ws://127.0.0.1:{free_port}/socket"
    code, out, err = await forge("status", "--url", url)
    assert (code, out) == (3, "")
    assert err == (
        f"forge: no forge supervisor at {url}: connection refused — "
        "start it with `forge supervise`\n"
    )


async def test_a_failed_worker_exits_1_and_shows_why(in_process: InProcess, free_port: int) -> None:
    async with WorkerManager() as manager:
        await in_process.start(manager)
        healthy = manager.start(MISBEHAVING.spec("steady"))
        broken = manager.start(MISBEHAVING.spec("misconfigured", config={"config_error": True}))
        steady = await healthy.wait_for(lambda row: row.state == "ready", 60.0)
        await broken.wait_for(lambda row: row.state == "failed", 60.0)
        code, out, _ = await forge("status", "--url", f"ws://127.0.0.1:{free_port}/socket")
        json_code, json_out, _ = await forge(
            "status", "--json", "--url", f"ws://127.0.0.1:{free_port}/socket"
        )
    assert code == json_code == 1
    assert out.splitlines()[2].startswith(
        "fatal error: worker misconfigured (misbehaving) failed: config_error was asked for; "
        "configuration error (exit code 78); not restarting (at "
    )
    rows = {line.split()[0]: line for line in out.splitlines() if line.startswith("  ")}
    assert rows["steady"].split()[1:4] == ["misbehaving", str(steady.pid), "ready"]
    assert rows["misconfigured"].split(None, 6)[1:] == [
        "misbehaving", "-", "failed", "0", "78",
        "config_error was asked for; configuration error (exit code 78); not restarting",
    ]  # fmt: skip
    states = {
        w["name"]: w["state"] for w in json.loads(json_out)["workers"] if w["kind"] != "trees"
    }
    assert states == {"steady": "ready", "misconfigured": "failed"}


async def test_the_help_documents_the_exit_codes() -> None:
    code, out, _ = await forge("status", "--help")
    assert code == 0
    flat = " ".join(out.split())
    assert "0 the supervisor answered; 1 it answered and a worker is `failed`" in flat
    assert "3 no supervisor answered at the URL" in flat


async def test_an_open_terminal_shows_its_seat_and_its_host_worker(
    supervise: Start, project_toml: str
) -> None:
    supervised = await supervise(project_toml)
    async with connect(supervised.url) as client:
        reply = await client.request(TerminalView(seat=Seat("acme", "proj", "lead")))
        assert reply["ok"]
        code, out, _ = await forge("status", "--url", supervised.url)
    assert code == 0
    rows = [line.split() for line in out.splitlines() if line.startswith("  ")]
    assert rows[3][:2] == ["acme/proj/lead", "idle"]
    worker = next(row for row in rows if row[0] == "terminal-1")
    assert worker[1] == "terminal"
    assert worker[3] == "ready"


async def test_a_seats_last_activity_is_its_terminals_last_output(
    supervise: Start, project_toml: str
) -> None:
    """Issue 36, item 3: last activity said "-" (home: "never") whatever a seat did. The shell's
    output and keystrokes move it; home hears of it, and `forge status` shows the time."""
    supervised = await supervise(project_toml)
    seat = Seat("acme", "proj", "lead")
    async with connect(supervised.url) as client:
        home = await client.subscribe(HOME)
        assert home["agents"] == []
        reply = await client.request(TerminalView(seat=seat))
        assert reply["ok"]
        active_ms = await asyncio.wait_for(activity_announced(client), 60)
        code, out, _ = await forge("status", "--url", supervised.url)
        json_code, json_out, _ = await forge("status", "--json", "--url", supervised.url)
    assert code == json_code == 0
    row = next(line.split() for line in out.splitlines() if line.startswith("  acme/proj/lead"))
    assert row[1] == "idle"
    shown = datetime.strptime(" ".join(row[2:4]), "%Y-%m-%d %H:%M:%SZ").replace(tzinfo=UTC)
    assert abs(shown.timestamp() * 1000 - active_ms) < 1000
    (listed,) = json.loads(json_out)["seats"]
    assert listed["last_active_ms"] >= active_ms


async def activity_announced(client: ForgeConnection) -> int:
    """The first last activity home announces (the seat's row comes when it starts, with none,
    and again once its shell wrote)."""
    while True:
        event = await client.next_event()
        if not isinstance(event, Update) or event.variant != "seat_changed":
            continue
        active: int | None = event.body["row"]["last_active_ms"]
        if active is not None:
            return active
