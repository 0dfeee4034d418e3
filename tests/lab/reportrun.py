"""A finished run whose report has something to show: a hostile transcript, a failing check
with output on both streams, a timed-out attempt (used by the report tests and report.html's
browser test and screenshots).

Variant `a` fixes the task but prints hostile markup and a token to stderr; the task's extra
check fails as a missing tool does (`python: not found` on stderr, exit 127). Variant `b` hangs
past its timeout, so its change is never verified.
"""

from __future__ import annotations

import json
from pathlib import Path

from .kit import Kit

HOSTILE = '<script>document.title="owned"</script></pre><img src=x onerror=alert(1)>'
TOKEN = "ghp_abcdefghijklmnopqrstuvwxyz0123"
MISSING_TOOL = {
    "id": "tool",
    "argv": ["sh", "-c", "echo checking the build; echo 'python: not found' >&2; exit 127"],
    "category": "build",
    "timeoutMs": 60_000,
}


def finished_run(root: Path) -> Kit:
    """Run the cohort in this process's forge (`--local`), with XDG folders of its own."""
    kit = Kit(root)
    xdg = {}
    for variable, name in (
        ("XDG_CONFIG_HOME", "config"),
        ("XDG_STATE_HOME", "state"),
        ("XDG_RUNTIME_DIR", "runtime"),
    ):
        folder = root / f"xdg-{name}"
        folder.mkdir(mode=0o700)
        xdg[variable] = str(folder)
    plan = kit.plan("t1")
    document = json.loads((kit.cohort_dir / plan).read_text())
    document["checks"].append(MISSING_TOOL)
    (kit.cohort_dir / plan).write_text(json.dumps(document))
    kit.cohort(
        a=kit.formula("a", knobs={"FAKE_NOISE": "1", "FAKE_SECRET": "1"}),
        b=kit.formula("b", knobs={"FAKE_HANG": "1"}, timeout_ms=1500),
        tasks={"t1": plan},
    )
    preview = kit.cli("--local", env=xdg)
    assert preview.returncode == 0, preview.stderr
    digest = preview.stdout.split("--approve ")[-1].split()[0]
    done = kit.cli("--local", "--approve", digest, env=xdg)
    assert done.returncode == 2, done.stderr
    return kit
