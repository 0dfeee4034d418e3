"""A real coding harness for tests: behaviour chosen by FAKE_* variables (Formula argv or issue).

It honours the harness contract (task JSON on stdin, one JSON report on stdout) unless told to
misbehave. See tests/lab/kit.py for the knobs.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

env = dict(os.environ)
cwd = Path.cwd()
stdin = sys.stdin.read()
# Per-task knobs ride in the issue body (pinned like the Formula's): lines `FAKE_X=value`.
for line in json.loads(stdin)["body"].splitlines():
    if line.startswith("FAKE_") and "=" in line:
        name, value = line.split("=", 1)
        env[name] = value
if env.get("FAKE_TRANSIENT_FILE") and Path(env["FAKE_TRANSIENT_FILE"]).exists():
    env["FAKE_TRANSIENT"] = Path(env["FAKE_TRANSIENT_FILE"]).read_text().strip()
started = time.time_ns()
# FORGE_ATTEMPT_ID is `<task>.<variant>.rep-<n>.<hex>`; task and variant names hold no dot.
coordinate = "/".join(env.get("FORGE_ATTEMPT_ID", "").split(".")[:3])
ctl = Path(env["FAKE_CTL"]) if env.get("FAKE_CTL") else None


def publish(name: str, text: str) -> None:
    """Write a control file whole (temp, then rename): a test polling it never reads it empty."""
    assert ctl is not None
    temp = ctl / f".{name}.{os.getpid()}"
    temp.write_text(text)
    os.replace(temp, ctl / name)


def git(*args: str) -> str:
    result = subprocess.run(["git", *args], capture_output=True, text=True)
    return result.stdout.strip() if result.returncode == 0 else f"<exit {result.returncode}>"


if env.get("FAKE_STRAY") == "1":
    # Double fork into a session of its own: the classic escape from a process group. Before the
    # gate, so a test that holds the attempt there finds the stray running (`stray-*` names it).
    os.environ.update(env)
    if os.fork() == 0:
        os.setsid()
        stray = os.fork()
        if stray == 0:
            os.execvp("sleep", ["sleep", "300"])
        if ctl is not None:
            publish(f"stray-{coordinate.replace('/', '_')}", str(stray))
        os._exit(0)
    os.wait()

if ctl is not None and env.get("FAKE_GATE") == "1":
    publish(f"started-{coordinate.replace('/', '_')}", str(os.getpid()))
    while not (ctl / "go").exists():
        time.sleep(0.02)

action = env.get("FAKE_ACTION", "fix")
calc = cwd / "calc.py"
if action in ("fix", "outside", "break", "retest"):
    calc.write_text(calc.read_text().replace("return a - b", "return a + b"))
if action == "break":
    calc.write_text(calc.read_text().replace("return a * b", "return a * b + 1"))
if action == "outside":
    (cwd / "README").write_text("changed\n")
if action == "retest":
    # The task changes mul's contract and updates its own test to match.
    calc.write_text(calc.read_text().replace("return a * b", "return str(a * b)"))
    test = cwd / "tests" / "test_calc.py"
    test.write_text(test.read_text().replace("== 6", '== "6"').replace("== 0", '== "0"'))
if action == "big":
    (cwd / "calc.py").write_text(
        calc.read_text() + "".join(f"# line {i:08d} {'x' * 60}\n" for i in range(90_000))
    )
if action.startswith("tamper:"):
    target = Path(action.split(":", 1)[1])
    target.chmod(0o600)
    target.write_text(target.read_text() + "\n# tampered\n")

if env.get("FAKE_SLEEP_S"):
    time.sleep(float(env["FAKE_SLEEP_S"]))
if env.get("FAKE_HANG") == "1":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    while True:
        time.sleep(1)

outcome = env.get("FAKE_OUTCOME", "completed")
served = env.get("FAKE_MODEL", env.get("FORGE_MODEL", ""))
if env.get("FAKE_MODEL_ON_REP") and not coordinate.endswith(f"/rep-{env['FAKE_MODEL_ON_REP']}"):
    served = env.get("FORGE_MODEL", "")
usage: dict[str, object] = {"model": served}
if env.get("FAKE_COST", "none") != "none":
    usage["costUsd"] = float(env["FAKE_COST"])
    usage["costBasis"] = env.get("FAKE_BASIS", "reported")
report: dict[str, object] = {"schemaVersion": "v1", "outcome": outcome, "usage": usage}

if env.get("FAKE_TRANSIENT"):
    count_file = Path(env["HOME"]) / "transient-count"
    count = int(count_file.read_text()) if count_file.exists() else 0
    count_file.write_text(str(count + 1))
    limit, text = env["FAKE_TRANSIENT"].split(":", 1)
    if count < int(limit):
        report.update(outcome="failed", terminalReason="api_error", error=text)

if ctl is not None:
    probe = {
        "coordinate": coordinate,
        "cwd": str(cwd),
        "pgid": os.getpgid(0),
        "sid": os.getsid(0),
        "env": dict(env),
        "stdin": stdin,
        "taskFile": Path(env["FORGE_TASK_FILE"]).read_text()
        if env.get("FORGE_TASK_FILE")
        else None,
        "start": started,
        "end": time.time_ns(),
        "revList": git("rev-list", "--all").split(),
        "origin": git("remote", "get-url", "origin"),
        "refspec": git("config", "remote.origin.fetch"),
        "fetchHead": (cwd / git("rev-parse", "--git-common-dir") / "FETCH_HEAD").exists(),
        "head": git("rev-parse", "HEAD"),
        "visible": {p: os.path.exists(p) for p in env.get("FAKE_PEEK", "").split(":") if p},
        "mountinfo": Path("/proc/self/mountinfo").read_text(),
        "init": Path("/proc/1/cmdline").read_bytes().decode(errors="replace"),
        "interfaces": sorted(
            line.split(":")[0].strip()
            for line in Path("/proc/net/dev").read_text().splitlines()[2:]
        ),
    }
    with open(ctl / "probes.jsonl", "a") as handle:
        handle.write(json.dumps(probe) + "\n")

if env.get("FAKE_NOISE") == "1":
    # Hostile text for the transcript and report.html: markup that must stay text.
    hostile = '<script>document.title="owned"</script></pre><img src=x onerror=alert(1)>'
    print(hostile, file=sys.stderr)
    print("noise line two", file=sys.stderr)

if env.get("FAKE_SECRET") == "1":
    print("token ghp_abcdefghijklmnopqrstuvwxyz0123", file=sys.stderr)

mode = env.get("FAKE_STDOUT", "json")
if mode == "json":
    print(json.dumps(report))
elif mode == "garbage":
    print("this is not json ghp_abcdefghijklmnopqrstuvwxyz0123")
elif mode == "two":
    print(json.dumps(report))
    print(json.dumps(report))
