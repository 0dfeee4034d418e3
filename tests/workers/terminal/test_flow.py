"""The supervisor's flow decisions for one terminal without processes (supervisor.terminal.flow)."""

from __future__ import annotations

import pytest

from forge.supervisor.terminal.flow import (
    CONTROLLER_LIMIT,
    FLOW_HIGH,
    HELD_LIMIT,
    WATCHER_LIMIT,
    Mute,
    Pace,
    Route,
    TerminalFlow,
    ViewerFlow,
    chunk_limit,
)

SEND, HOLD, SKIP = Route.SEND, Route.HOLD, Route.SKIP


def live_viewer() -> ViewerFlow:
    viewer = ViewerFlow()
    viewer.view_drawn(0)
    return viewer


@pytest.mark.parametrize(
    ("paused", "stale", "syncing", "route"),
    [
        (False, False, False, SEND),
        (False, False, True, HOLD),
        (True, False, False, SKIP),
        (True, False, True, SKIP),
        (False, True, False, SKIP),
        (False, True, True, SKIP),
    ],
)
def test_a_chunk_is_sent_held_or_skipped(
    paused: bool, stale: bool, syncing: bool, route: Route
) -> None:
    viewer = ViewerFlow(paused=paused, stale=stale, syncing=syncing)
    assert viewer.route(1, b"x") is route


def test_held_chunks_after_the_views_seq_follow_it() -> None:
    viewer = ViewerFlow()
    assert [viewer.route(seq, bytes([seq])) for seq in (4, 5, 6)] == [HOLD] * 3
    assert viewer.view_drawn(5) == [b"\x06"]
    assert (viewer.syncing, viewer.held, viewer.held_bytes) == (False, [], 0)
    assert viewer.route(7, b"\x07") is SEND


def test_held_chunks_past_the_limit_are_dropped_and_the_view_asked_again() -> None:
    viewer = ViewerFlow()
    viewer.asking_view()
    big = b"x" * (HELD_LIMIT // 2)
    assert viewer.route(1, big) is HOLD
    assert viewer.route(2, big) is HOLD
    assert not viewer.held_lost
    assert viewer.route(3, b"y") is HOLD  # one byte over: everything held is gone
    assert (viewer.held, viewer.held_bytes, viewer.held_lost) == ([], 0, True)
    viewer.asking_view()  # the next view: held from here on
    assert not viewer.held_lost
    assert viewer.route(4, b"z") is HOLD
    assert viewer.view_drawn(3) == [b"z"]


def test_an_overflow_starts_one_resync_until_the_backlog_drains() -> None:
    viewer = live_viewer()
    assert viewer.overflowed() is True
    assert viewer.overflowed() is False  # a resync already waits
    assert viewer.route(1, b"x") is SKIP
    viewer.drained()
    viewer.asking_view()
    assert viewer.route(2, b"y") is HOLD
    assert viewer.view_drawn(1) == [b"y"]
    assert viewer.overflowed() is True


@pytest.mark.parametrize(("controls", "limit"), [(True, CONTROLLER_LIMIT), (False, WATCHER_LIMIT)])
def test_the_controller_is_paced_not_dropped(controls: bool, limit: int) -> None:
    assert chunk_limit(controls=controls) == limit


@pytest.mark.parametrize(
    ("steps", "decisions"),
    [
        # The first viewer is live: the host was never muted, nothing to say.
        (["attach a"], [None]),
        # Its only viewer pauses: mute (epoch 1); it resumes: unmute (epoch 2).
        (["attach a", "pause a", "resume a"], [None, Mute(True, 1), Mute(False, 2)]),
        # One of two viewers pauses: the other still takes frames.
        (["attach a", "attach b", "pause a"], [None, None, None]),
        # Both stop taking frames (one paused, one stale): muted once.
        (["attach a", "attach b", "pause a", "stale b"], [None, None, None, Mute(True, 1)]),
        # The last viewer leaves: muted; a new one comes: unmuted.
        (["attach a", "detach a", "attach b"], [None, Mute(True, 1), Mute(False, 2)]),
        # Nothing is told to a host that is gone or closing.
        (["attach a", "stop", "pause a"], [None, None, None]),
    ],
)
def test_mute_decisions_are_made_on_change_and_numbered(
    steps: list[str], decisions: list[Mute | None]
) -> None:
    flow: TerminalFlow[str] = TerminalFlow()
    made: list[Mute | None] = []
    for step in steps:
        verb, _, key = step.partition(" ")
        if verb == "attach":
            flow.attach(key)
        elif verb == "detach":
            flow.detach(key)
        elif verb == "pause":
            flow.viewers[key].paused = True
        elif verb == "resume":
            flow.viewers[key].paused = False
        elif verb == "stale":
            flow.viewers[key].overflowed()
        elif verb == "stop":
            flow.stopped = True
        made.append(flow.mute())
    assert made == decisions


@pytest.mark.parametrize(
    ("backlogs", "throttles"),
    [
        ([None, None], [False, False]),  # no controller: nobody slows the shell
        ([FLOW_HIGH - 1, FLOW_HIGH, FLOW_HIGH + 1], [False, True, False]),  # once, until it ends
        ([FLOW_HIGH, "ended", FLOW_HIGH - 1, FLOW_HIGH], [True, None, False, True]),
    ],
)
def test_the_controllers_backlog_throttles_the_shell_once(
    backlogs: list[int | str | None], throttles: list[bool | None]
) -> None:
    flow: TerminalFlow[str] = TerminalFlow()
    made: list[bool | None] = []
    for backlog in backlogs:
        if backlog == "ended":
            flow.throttle_ended()
            made.append(None)
        else:
            assert not isinstance(backlog, str)
            made.append(flow.throttle(backlog))
    assert made == throttles


@pytest.mark.parametrize("state", ["acking", "silent", "paused", "stale", "none"])
def test_the_controllers_page_paces_the_shell_while_it_acks_and_takes_frames_live(
    state: str,
) -> None:
    flow: TerminalFlow[str] = TerminalFlow()
    viewer = live_viewer()
    if state != "silent":
        viewer.acked(7)
    if state == "paused":
        viewer.paused = True
    elif state == "stale":
        viewer.overflowed()
    controller = None if state == "none" else viewer
    assert flow.pace(controller) == (Pace(True, 1, 7) if state == "acking" else None)
    assert flow.pace(controller) is None  # told once, until it changes


def test_pacing_ends_when_the_controllers_page_stops_taking_frames_and_is_numbered() -> None:
    flow: TerminalFlow[str] = TerminalFlow()
    viewer = live_viewer()
    viewer.acked(3)
    assert flow.pace(viewer) == Pace(True, 1, 3)
    viewer.paused = True
    assert flow.pace(viewer) == Pace(False, 2, 3)
    viewer.paused = False
    viewer.view_drawn(9)
    assert flow.pace(viewer) == Pace(True, 3, 9)  # the view's seq counts as parsed
    assert flow.pace(None) == Pace(False, 4, 0)


def test_an_ack_is_news_when_it_is_the_first_or_newer() -> None:
    viewer = live_viewer()
    assert viewer.acked(0) is True  # the first: its page acks
    assert viewer.acked(0) is False
    assert viewer.acked(5) is True
    assert viewer.acked(4) is False
    assert viewer.parsed == 5
