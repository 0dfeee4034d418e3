"""Record the screen tests' sequences: real commands in a real shell through the real terminal host.

    .venv/bin/python -m tests.screen.record [NAME ...]     # all scenarios when none is named

Each scenario types commands into bash in a terminal host worker (the same worker `forge
supervise` runs), resizes it as a phone or a desktop would by taking control, and writes
`sequences/NAME.json`: the first size and the events in the order the host saw them, ["w",
base64 bytes] for each output frame, ["r", cols, rows] for each resize, ["v"] where a viewer
attaches. A step waits for the text it expects and then for a quiet moment, so a resize lands
between frames as it did in the host. The recordings are committed: CI replays them, it does not
record (bash, git, less and vim versions would change the bytes).
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from forge.ipc.manager import WorkerManager
from forge.ipc.messages import StreamFrame
from forge.ipc.policy import LifecycleTimings
from forge.ipc.protocol import call
from forge.ptyinput import PtyInput
from forge.wire.binary import TERMINAL_OUTPUT_HEADER
from forge.workers.terminal.protocol import (
    OUTPUT_STREAM,
    TERMINAL,
    Resize,
    View,
    read_output_meta,
)

HERE = Path(__file__).parent
SEQUENCES = HERE / "sequences"
BASH = ["/bin/bash", "--noprofile", "--norc", "-i"]
QUIET = 0.4
"""Seconds without output after which a step's output is taken as finished."""


@dataclass(frozen=True)
class Type:
    keys: bytes
    expect: bytes


@dataclass(frozen=True)
class Size:
    cols: int
    rows: int
    expect: bytes = b""


@dataclass(frozen=True)
class Attach:
    """A viewer attaches here (the test asks a view at this point)."""


Step = Type | Size | Attach

README = "# forge\n\nA supervisor.\n\n\n## Use\n\nRun it.\n\n\n\n## End\n"
TEXT = "".join(f"line {n} of the file, long enough to wrap on a phone\n" for n in range(200))
WIDE = (
    "日本語のテキストは二つの升を使います。これは折り返されるはずです。\n"
    "mixed 漢字 and ascii, 한국어 문장도 있습니다 and more 中文字符 here\n"
    "emoji 🙂🚀✨ between words 🙂🚀✨ and again 🙂🚀✨ to the end\n"
)

SCENARIOS: dict[str, tuple[tuple[int, int], list[Step]]] = {
    # Issue 36, item 1: a desktop prints, shrinks, a phone runs a command, the desktop returns.
    "phone-then-desktop": (
        (100, 30),
        [
            Type(b"seq -f 'OLD-%g' 1 40\r", b"OLD-40"),
            Size(40, 20),
            Type(b"printf 'NEW-A\\n\\n\\n\\n\\n\\nNEW-B\\n'\r", b"NEW-B\r\n"),
            Attach(),
            Size(100, 30),
        ],
    ),
    # Issue 36, item 1's second run: git log, then a file with blank lines, then fewer rows.
    "git-log-then-cat": (
        (100, 30),
        [
            Type(b"git --no-pager log --oneline\r", b"notes"),
            Type(b"cat README.md\r", b"## End"),
            Size(40, 12),
            Attach(),
            Size(100, 30),
            Type(b"clear; cat README.md\r", b"## End"),
            Size(100, 9),
            Attach(),
            Size(100, 30),
        ],
    ),
    "less-alternate-screen": (
        (80, 24),
        [
            Type(b"less -S file.txt\r", b"line 20"),
            Attach(),
            Size(50, 15, b"line"),
            Type(b" ", b"line 2"),
            Attach(),
            Type(b"q", b"$ "),
            Attach(),
            Size(100, 30),
        ],
    ),
    "vim-full-screen": (
        (80, 24),
        [
            Type(b"vim -u NONE -i NONE -N file.txt\r", b"line 20"),
            Type(b":set number\r", b"  1 "),
            Type(b"40Gdd", b""),
            Attach(),
            Size(45, 14),
            Type(b"ggOnew first line\x1b", b"new first"),
            Attach(),
            Size(90, 26),
            Type(b":q!\r", b"$ "),
            Attach(),
        ],
    ),
    "wide-characters": (
        (60, 16),
        [
            Type(b"cat wide.txt\r", b"end"),
            Size(15, 16),
            Attach(),
            Size(21, 16),
            Type(b"cat wide.txt\r", b"end"),
            Size(90, 16),
            Attach(),
            Size(33, 10),
        ],
    ),
    "narrower-and-wider": (
        (80, 20),
        [
            Type(b"printf '%0150d\\n' 1; seq -s ' ' 1 60; echo short\r", b"short\r\n"),
            Size(30, 20),
            Attach(),
            Size(120, 20),
            Attach(),
            Type(b"printf '\\033[32m%0200d\\033[0m\\n' 2\r", b"002"),
            Size(45, 8),
            Attach(),
            Size(80, 24),
        ],
    ),
}


def repository(root: Path) -> None:
    """The directory the shell starts in: a git repository with a few commits and files."""
    (root / "README.md").write_text(README)
    (root / "file.txt").write_text(TEXT)
    (root / "wide.txt").write_text(WIDE)
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    subprocess.run(["git", "init", "-q", str(root)], check=True, env=env)
    for message in ("start", "readme", "notes", "more notes"):
        subprocess.run(
            ["git", "-C", str(root), "commit", "-q", "--allow-empty", "-m", message],
            check=True,
            env=env,
        )


class Recorder:
    def __init__(self) -> None:
        self.events: list[list[Any]] = []
        self.output = b""
        self.changed = asyncio.Event()

    def on_frame(self, frame: StreamFrame) -> None:
        seq = read_output_meta(frame.meta)
        if isinstance(seq, int):
            data = bytes(frame.payload[TERMINAL_OUTPUT_HEADER.size :])
            self.events.append(["w", base64.b64encode(data).decode(), seq])
            self.output += data
            self.changed.set()

    def on_end(self, stream_id: str, reason: str) -> None:
        self.changed.set()

    async def settle(self, start: int, expect: bytes, *, quiet: bool) -> None:
        """Until `expect` is in the output since `start`; with `quiet`, then until no output
        came for `QUIET` seconds (a recording; a test expects the last bytes instead)."""
        while expect not in self.output[start:]:
            self.changed.clear()
            try:
                await asyncio.wait_for(self.changed.wait(), 30)
            except TimeoutError:
                raise AssertionError(f"no {expect!r} in {self.output[start:]!r}") from None
        while quiet:
            self.changed.clear()
            try:
                await asyncio.wait_for(self.changed.wait(), QUIET)
            except TimeoutError:
                return


async def run(
    root: Path, size: tuple[int, int], steps: list[Step], *, test: bool = False
) -> list[list[Any]]:
    """Run `steps` in bash in a terminal host at `root`; the events the host saw, in order.

    For a `test`, a step waits only for its expected bytes (the last the shell writes before it
    waits for input: the order of frames and resizes depends on it) and an `Attach` asks the
    host for a view, recorded as ["v", screen, seq, cols, rows]; frames are ["w", base64, seq].
    """
    timings = LifecycleTimings(hello_timeout=30.0, request_timeout=30.0, kill_grace=0.5)
    async with WorkerManager(timings=timings) as manager:
        settings = {"terminal": 1, "cwd": str(root), "argv": BASH, "cols": size[0], "rows": size[1]}
        env = {"PS1": "$ ", "HOME": str(root), "LANG": "C.UTF-8", "GIT_PAGER": "cat"}
        handle = manager.start(TERMINAL.spec("terminal-1", config=settings, env=env))
        recorder = Recorder()
        handle.subscribe(OUTPUT_STREAM, recorder.on_frame, recorder.on_end)
        await handle.wait_for(lambda row: row.state == "ready", 30.0)
        master = handle.borrow()
        assert master is not None, "the host lends its PTY master before it is ready"
        keys = PtyInput(master)
        await recorder.settle(0, b"$ ", quiet=not test)
        for step in steps:
            start = len(recorder.output)
            if isinstance(step, Type):
                keys.write(step.keys)
                await recorder.settle(start, step.expect, quiet=not test)
            elif isinstance(step, Size):
                recorder.events.append(["r", step.cols, step.rows])
                await call(handle, Resize(cols=step.cols, rows=step.rows))
                await recorder.settle(start, step.expect, quiet=not test)
            elif test:
                view = await call(handle, View())
                recorder.events.append(["v", view.screen, view.seq, view.cols, view.rows])
            else:
                recorder.events.append(["v"])
        keys.close()
    return recorder.events


async def record(name: str, size: tuple[int, int], steps: list[Step]) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        repository(root)
        os.environ["XDG_RUNTIME_DIR"] = str(root)
        events = await run(root, size, steps)
    sequence = {"cols": size[0], "rows": size[1], "events": events}
    SEQUENCES.mkdir(exist_ok=True)
    (SEQUENCES / f"{name}.json").write_text(json.dumps(sequence, indent=0) + "\n")
    print(f"recorded {name}: {len(events)} events")


async def main(names: list[str]) -> None:
    for name in names or list(SCENARIOS):
        size, steps = SCENARIOS[name]
        await record(name, size, steps)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
