"""A viewer that attaches draws what a real terminal shows for the same bytes and resizes.

The reference is xterm.js (headless, `web/screen/reference.mjs`), fed a recorded sequence of a
real shell's output and its resizes (`sequences/`, made by `record.py`: a desktop and a phone
taking turns, git log and a file with blank lines, less, vim, wide characters, narrower and
wider). The host's side is its screen model fed through `ScreenFeeder` as the host feeds it,
asked for a view where the recording says a viewer attached: the viewer's terminal is a fresh
xterm.js given that view and then everything after it (its own resizes too, as a controller's
page reflows itself). Both are compared cell by cell: characters, widths, colours, attributes,
each row's wrapped flag, scrollback, the alternate screen, the cursor, the modes and the title.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from forge.testing.xterm_reference import Event, Resize, Write, cells, text
from forge.workers.terminal.feeder import ScreenFeeder
from forge.workers.terminal.model import ScreenModel
from tests.screen.record import SCENARIOS, Attach, Size, Type, repository, run

SEQUENCES = {
    path.stem: json.loads(path.read_text())
    for path in sorted((Path(__file__).parent / "sequences").glob("*.json"))
}

pytestmark = pytest.mark.timeout(300)


def events_of(recorded: list[list[Any]]) -> list[Event | None]:
    """The recorded events; None where a viewer attaches."""
    out: list[Event | None] = []
    for event in recorded:
        if event[0] == "w":
            out.append(Write(base64.b64decode(event[1])))
        elif event[0] == "r":
            out.append(Resize(event[1], event[2]))
        else:
            out.append(None)
    return out


def assert_same(viewer: dict[str, Any], reference: dict[str, Any], where: str) -> None:
    """Equal cell by cell; on a difference, say where it is in words a person can read."""
    for key in ("cols", "rows", "active", "cursor", "title", "modes"):
        assert viewer[key] == reference[key], f"{where}: {key} {viewer[key]} != {reference[key]}"
    for buffer in ("normal", "alternate"):
        ours, theirs = viewer[buffer], reference[buffer]
        if ours == theirs:
            continue
        assert ours is not None, f"{where}: no {buffer} buffer"
        assert theirs is not None, f"{where}: an extra {buffer} buffer"
        assert text(viewer, buffer) == text(reference, buffer), f"{where}: {buffer} text"
        assert len(ours) == len(theirs), f"{where}: {buffer} has {len(ours)} rows"
        for y, (mine, real) in enumerate(zip(ours, theirs, strict=True)):
            assert mine["wrapped"] == real["wrapped"], f"{where}: {buffer} row {y} wrap flag"
            for x, (a, b) in enumerate(zip(mine["cells"], real["cells"], strict=True)):
                assert a == b, f"{where}: {buffer} row {y} column {x}: {a} != {b}"


@pytest.mark.parametrize("name", SEQUENCES)
async def test_a_viewer_attaching_anywhere_draws_what_xterm_shows(name: str) -> None:
    sequence = SEQUENCES[name]
    cols, rows = sequence["cols"], sequence["rows"]
    events = events_of(sequence["events"])
    model = await ScreenModel.start(cols, rows)
    feeder = ScreenFeeder(model)
    views: list[tuple[int, str, int, int]] = []
    seq = 0
    try:
        for index, event in enumerate([*events, None]):
            if isinstance(event, Write):
                seq += 1
                feeder.append(seq, event.data)
            elif isinstance(event, Resize):
                feeder.resize(event.cols, event.rows)
            else:
                feeder.catch_up()
                views.append((index, await model.view(), model.cols, model.rows))
    finally:
        await model.close()
    played = [event for event in events if event is not None]
    reference = cells(cols, rows, played)
    for index, view, width, height in views:
        after = [event for event in events[index:] if event is not None]
        viewer = cells(width, height, [Write(view.encode()), *after])
        assert_same(viewer, reference, f"{name}, a viewer attaching at event {index}")


async def test_the_issue_s_sequence_through_the_real_host(
    tmp_path: Path, forge_dirs: dict[str, Path]
) -> None:
    """Issue 36's first run live: bash in a real terminal host at a desktop's size prints 40
    lines, a phone takes control (its size), runs a command, the desktop attaches again and
    takes control back. Each view the host answers, drawn by xterm.js with what followed it,
    is xterm.js fed the same frames and resizes (the old model lost the command's first line)."""
    del forge_dirs
    repository(tmp_path)
    prompt, redrawn = b"\x1b[?2004h$ ", b"\x1b[K\r$ "
    steps = SCENARIOS["phone-then-desktop"][1]
    live = [
        Type(b"seq -f 'OLD-%g' 1 40\r", b"OLD-40\r\n" + prompt),
        Size(40, 20, redrawn),
        Type(b"printf 'NEW-A\\n\\n\\n\\n\\n\\nNEW-B\\n'\r", b"NEW-B\r\n" + prompt),
        Attach(),
        Size(100, 30, redrawn),
        Attach(),
    ]
    assert [type(step) for step in live] == [type(step) for step in steps] + [Attach]
    recorded = await run(tmp_path, (100, 30), live, test=True)
    played = [
        Write(base64.b64decode(e[1])) if e[0] == "w" else Resize(e[1], e[2])
        for e in recorded
        if e[0] != "v"
    ]
    reference = cells(100, 30, played)
    views = [(index, event) for index, event in enumerate(recorded) if event[0] == "v"]
    assert len(views) == 2
    for index, (_, screen, seq, width, height) in views:
        after: list[Event] = []
        for event in recorded[index + 1 :]:
            if event[0] == "w" and event[2] > seq:
                after.append(Write(base64.b64decode(event[1])))
            elif event[0] == "r":
                after.append(Resize(event[1], event[2]))
        viewer = cells(width, height, [Write(screen.encode()), *after])
        assert_same(viewer, reference, f"the live host's view at event {index}")
    assert any(row.startswith("$ printf 'NEW-A\\n") for row in text(reference))
