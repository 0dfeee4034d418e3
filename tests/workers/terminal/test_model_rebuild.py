"""A screen model killed outright (SIGKILL) is rebuilt from its checkpoint and journal: a viewer
after the death draws, cell by cell, what xterm.js draws for every byte and resize the model was
sent, before and after it died (the recorded sequences of tests/screen)."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest

from forge.testing.xterm_reference import Resize, Write, cells
from forge.workers.terminal.feeder import ScreenFeeder
from forge.workers.terminal.model import ScreenModel
from tests.screen.test_equivalence import SEQUENCES, assert_same, events_of

pytestmark = pytest.mark.timeout(300)


@pytest.mark.parametrize("name", SEQUENCES)
async def test_a_model_killed_mid_sequence_is_rebuilt_to_the_true_screen(name: str) -> None:
    sequence = SEQUENCES[name]
    cols, rows = sequence["cols"], sequence["rows"]
    events = [event for event in events_of(sequence["events"]) if event is not None]
    model = await ScreenModel.start(cols, rows, journal_limit=4096)  # checkpoints on the way
    died = asyncio.Event()
    model.on_failed = died.set
    feeder = ScreenFeeder(model)
    killed_at = len(events) // 2
    rebuilt: ScreenModel | None = None
    try:
        for index, event in enumerate(events):
            if index == killed_at:
                feeder.catch_up()
                await model.view()  # everything so far parsed; then the kill
                os.kill(model.pid, signal.SIGKILL)
                await died.wait()
            if isinstance(event, Write):
                feeder.append(index + 1, event.data)
                feeder.catch_up()
            elif isinstance(event, Resize):
                feeder.resize(event.cols, event.rows)
        assert model.failed is not None
        rebuilt = await model.rebuilt()
        feeder.replace(rebuilt)
        feeder.catch_up()
        view = await rebuilt.view()
        assert rebuilt.pid != model.pid
    finally:
        await model.close()
        if rebuilt is not None:
            await rebuilt.close()
    viewer = cells(rebuilt.cols, rebuilt.rows, [Write(view.encode())])
    assert_same(viewer, cells(cols, rows, events), f"{name}, killed at event {killed_at}")


async def test_the_journal_is_let_go_at_each_checkpoint() -> None:
    """The model asks itself for a checkpoint past its journal's limit, so what a rebuild
    replays stays bounded however long the shell writes."""
    model = await ScreenModel.start(40, 5, journal_limit=1000)
    try:
        for n in range(200):
            model.write(b"line %d of a long output\r\n" % n)
            await model.drain()
        await model.view()
        assert model._journal_bytes <= 1000 + 30
        assert "line 199" in model.checkpoint.screen
    finally:
        await model.close()
