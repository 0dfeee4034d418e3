"""X3: a run handed to a real `forge supervise`: its runners on home, its attempts' process trees
on the `lab` subject, Ctrl-C in the CLI stops it as SIGINT does and the resume reports what an
uninterrupted run reports; a supervisor killed with -9 mid-run leaves nothing running and the
next `forge evaluate` resumes the run."""

from __future__ import annotations

import asyncio
import json
import signal
from typing import Any

import psutil
from websockets.asyncio.client import ClientConnection

from forge.testing.supervised import Start, Supervised

from .kit import HELD_MS, Kit, marker_processes, normalised, wait_for, wait_until


def gated(kit: Kit, **knobs: str) -> None:
    """Two repetitions of one task, every harness held at its gate until `<ctl>/go` exists."""
    held = {"FAKE_GATE": "1", **knobs}
    kit.cohort(
        a=kit.formula("a", knobs=held, timeout_ms=HELD_MS),
        b=kit.formula(
            "b",
            knobs={**held, "FAKE_ACTION": "none", "FAKE_OUTCOME": "no-change"},
            timeout_ms=HELD_MS,
        ),
        tasks={"t1": kit.plan("t1")},
        repetitions=2,
    )


async def subscribed(supervised: Supervised, what: str) -> tuple[ClientConnection, Any]:
    client = await supervised.greeted()
    await client.send(json.dumps({"kind": "subscribe", "what": what}))
    while True:
        frame = json.loads(await client.recv())
        if frame["kind"] == "snapshot":
            return client, frame["data"]


async def update(client: ClientConnection, variant: str, test: Any = None) -> dict[str, Any]:
    """The next update `variant` (whose body passes `test`) on `client`."""
    async with asyncio.timeout(90):
        while True:
            frame = json.loads(await client.recv())
            body = frame.get("update")
            if isinstance(body, dict) and variant in body and (test is None or test(body[variant])):
                return dict(body[variant])


async def ask(client: ClientConnection, message: dict[str, Any]) -> dict[str, Any]:
    """Send `message` with a reply_to and return its reply's body (other frames skipped)."""
    await client.send(json.dumps({**message, "reply_to": "ask"}))
    async with asyncio.timeout(90):
        while True:
            frame = json.loads(await client.recv())
            if frame["kind"] == "reply" and frame["reply_to"] == "ask":
                return dict(frame["body"])


def clean_report(kit: Kit) -> dict[str, Any]:
    """The report of the same cohort run uninterrupted, in this process."""
    out = kit.root / "clean"
    (kit.ctl / "go").write_text("")
    clean = kit.cli("--approve", kit.digest(out=out), "--local", out=out)
    assert clean.returncode == 2, clean.stderr
    report = normalised(json.loads((out / "report.json").read_text()))
    report.pop("approval")
    return report


def recorded(kit: Kit) -> dict[str, Any]:
    """Why each recorded attempt ended (outcome, error, notes, failed checks), for a failure's
    message: the progress line alone says only `incomplete`."""
    keys = ("outcome", "error", "notes", "failedCheckOutput")
    return {
        str(path.parent.relative_to(kit.out / "attempts")): {
            k: v for k, v in json.loads(path.read_text()).items() if k in keys
        }
        for path in sorted((kit.out / "attempts").rglob("attempt.json"))
    }


def resumed_report(kit: Kit) -> dict[str, Any]:
    report = normalised(kit.report())
    report.pop("approval")
    return report


async def test_a_run_in_the_supervisor_shows_and_stops_like_sigint(
    kit: Kit, supervise: Start
) -> None:
    supervised = await supervise()
    gated(kit)
    digest = kit.digest()
    preview = kit.cli("--url", supervised.url)
    assert f"Runs in: the forge supervisor at {supervised.url}" in preview.stdout
    lab, snapshot = await subscribed(supervised, "lab")
    assert snapshot == {"runs": []}
    home, _ = await subscribed(supervised, "home")
    process = kit.start("--approve", digest, "--parallel", "2", "--url", supervised.url)
    await asyncio.to_thread(wait_for, kit.ctl, "started-*", 2, process)

    started = await update(lab, "lab_run")
    run = started["run"]["run"]
    assert started["run"]["out"] == str(kit.out)
    workers = await update(
        home,
        "workers_changed",
        lambda body: sum(w["kind"] == "lab-attempt" for w in body["workers"]) == 2,
    )
    names = sorted(w["name"] for w in workers["workers"] if w["kind"] == "lab-attempt")
    assert names == [f"lab-{run}-1", f"lab-{run}-2"]
    harnesses = {p.pid for p in kit.harnesses()}
    assert len(harnesses) == 2
    seen: set[int] = set()
    while not harnesses <= seen:
        trees = await update(lab, "lab_processes")
        assert trees["run"] == run
        seen |= {row["pid"] for row in trees["processes"] or []}
    _, snapshot = await subscribed(supervised, "lab")
    attempts = snapshot["runs"][0]["attempts"]
    assert [(a["label"], a["state"]) for a in attempts] == [
        ("t1/a/rep-1", "running"),
        ("t1/b/rep-1", "running"),
        ("t1/a/rep-2", "pending"),
        ("t1/b/rep-2", "pending"),
    ]
    assert {a["runner"] for a in attempts[:2]} == set(names)
    early = await ask(lab, {"kind": "lab_report", "run": run})
    assert early == {"ok": False, "why": f"run {run} has not ended"}

    process.send_signal(signal.SIGINT)
    _, stderr = await asyncio.to_thread(process.communicate, timeout=90)
    assert process.returncode == 130, stderr
    assert "forge: run aborted: interrupted by SIGINT" in stderr
    ended = await update(lab, "lab_run", lambda body: body["run"]["exit_code"] is not None)
    assert (ended["run"]["status"], ended["run"]["exit_code"]) == ("aborted", 130)
    assert marker_processes(str(kit.ctl)) == []
    assert not list((kit.out / "attempts").rglob("attempt.json"))
    assert kit.report()["abortReason"] == "interrupted by SIGINT"
    await update(  # the run's runners leave home's table with it
        home,
        "workers_changed",
        lambda body: all(w["kind"] != "lab-attempt" for w in body["workers"]),
    )

    (kit.ctl / "go").write_text("")
    resumed = await asyncio.to_thread(kit.cli, "--approve", digest, "--url", supervised.url)
    assert resumed.returncode == 2, resumed.stderr
    assert "[4/4] t1/b/rep-2: failed" in resumed.stderr, (resumed.stderr, recorded(kit))
    assert "complete: report in" in resumed.stdout
    assert resumed_report(kit) == clean_report(kit)
    asker = await supervised.greeted()  # `lab`, unread since, may have lost its keepalive
    page = await ask(asker, {"kind": "lab_report", "run": run})
    assert page == {"ok": True, "run": run, "html": (kit.out / "report.html").read_text()}
    for wrong in (f"../{run}", f"{run}/../{run}", str(kit.out / "report.html"), "../../etc/passwd"):
        refused = await ask(asker, {"kind": "lab_report", "run": wrong})
        assert refused == {"ok": False, "why": f"no run {wrong!r} here"}
    log = [json.loads(line) for line in (kit.out / "lab.log").read_text().splitlines()]
    assert sum(r["record"] == "lab_attempt_recorded" for r in log) == 4


async def test_a_supervisor_killed_mid_run_leaves_nothing_and_the_next_run_resumes(
    kit: Kit, supervise: Start
) -> None:
    supervised = await supervise()
    gated(kit, FAKE_STRAY="1")
    digest = kit.digest()
    process = kit.start("--approve", digest, "--parallel", "2", "--url", supervised.url)
    await asyncio.to_thread(wait_for, kit.ctl, "started-*", 2, process)
    await asyncio.to_thread(wait_for, kit.ctl, "stray-*", 2, process)
    runners = [
        p
        for p in psutil.Process(supervised.process.pid).children()
        if "forge.workers.lab" in " ".join(p.cmdline())
    ]
    assert len(runners) == 2
    supervised.process.kill()
    await supervised.process.wait()
    _, stderr = await asyncio.to_thread(process.communicate, timeout=90)
    assert process.returncode == 1, stderr
    assert "lost the forge supervisor mid-run" in stderr
    await asyncio.to_thread(
        wait_until,
        lambda: not marker_processes(str(kit.ctl)) and not any(r.is_running() for r in runners),
        "the runners, harnesses and strays to die with the supervisor",
    )

    (kit.ctl / "go").write_text("")
    resumed = await asyncio.to_thread(kit.cli, "--approve", digest, "--url", supervised.url)
    assert resumed.returncode == 2, resumed.stderr
    assert f"no forge supervisor at {supervised.url}" in resumed.stderr
    assert resumed_report(kit) == clean_report(kit)
