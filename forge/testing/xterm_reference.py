"""The reference terminal for tests: xterm.js (headless) fed bytes and resizes, read as cells.

Runs `web/screen/reference.mjs` with the machine's node and the packages of `web/node_modules`
(`npm ci` in web/, as web/build.sh and CI do). A sequence is the terminal's first size and its
events, `Write(bytes)` or `Resize(cols, rows)`; the answer is the active screen's kind, the
cursor, the modes, the title, and every row of the shell's buffer (scrollback and screen) and of
the alternate screen, each row's wrapped flag and cells `[chars, width, fg, bg, flags]`.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

WEB = Path(__file__).resolve().parents[2] / "web"
SCRIPT = WEB / "screen" / "reference.mjs"


@dataclass(frozen=True, slots=True)
class Write:
    data: bytes


@dataclass(frozen=True, slots=True)
class Resize:
    cols: int
    rows: int


Event = Write | Resize


class ReferenceMissing(RuntimeError):
    """node or web/node_modules is not there: the reference cannot run."""


def cells(cols: int, rows: int, events: list[Event]) -> dict[str, Any]:
    """What xterm.js holds after `events`, starting at `cols` x `rows`."""
    node = shutil.which("node")
    if node is None or not (WEB / "node_modules" / "@xterm" / "headless").is_dir():
        raise ReferenceMissing("the xterm.js reference needs node and `npm ci` run in web/")
    sequence = {"cols": cols, "rows": rows, "events": [_encode(event) for event in events]}
    done = subprocess.run(
        [node, str(SCRIPT)],
        input=json.dumps(sequence).encode(),
        capture_output=True,
        cwd=WEB,
        check=False,
        timeout=60,
    )
    if done.returncode != 0:
        raise RuntimeError(f"reference.mjs failed: {done.stderr.decode(errors='replace')}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def text(screen: dict[str, Any], buffer: str = "normal") -> list[str]:
    """The rows of `buffer` as text (a never-written cell as a space), trailing blanks kept."""
    return ["".join(cell[0] or " " for cell in row["cells"]) for row in screen[buffer]]


def _encode(event: Event) -> list[Any]:
    if isinstance(event, Write):
        return ["w", base64.b64encode(event.data).decode()]
    return ["r", event.cols, event.rows]
