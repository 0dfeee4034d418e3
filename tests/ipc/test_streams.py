"""Stream subscribers: frames reach the right ones, and every stream's end is told once."""

from __future__ import annotations

from forge.ipc.messages import StreamFrame
from forge.ipc.streams import StreamRegistry


def frame(stream_id: str, seq: int) -> StreamFrame:
    return StreamFrame(stream_id, seq, None, memoryview(b"x"))


def test_frames_go_to_their_stream_and_to_catch_all_subscribers() -> None:
    registry = StreamRegistry()
    seen: list[tuple[str, str, int]] = []
    registry.subscribe("a", lambda f: seen.append(("a-sub", f.stream_id, f.seq)), print)
    registry.subscribe(None, lambda f: seen.append(("all", f.stream_id, f.seq)), print)
    registry.deliver(frame("a", 1))
    registry.deliver(frame("b", 1))
    assert seen == [("a-sub", "a", 1), ("all", "a", 1), ("all", "b", 1)]


def test_an_end_is_told_once_and_ends_that_streams_subscriptions() -> None:
    registry = StreamRegistry()
    ends: list[tuple[str, str, str]] = []
    frames: list[int] = []
    registry.subscribe("a", lambda f: frames.append(f.seq), lambda s, r: ends.append(("a", s, r)))
    registry.subscribe(None, lambda f: None, lambda s, r: ends.append(("all", s, r)))
    registry.end("a", "exited")
    registry.deliver(frame("a", 2))
    assert ends == [("a", "a", "exited"), ("all", "a", "exited")]
    assert frames == []


def test_a_dead_worker_ends_every_live_or_subscribed_stream() -> None:
    registry = StreamRegistry()
    ends: list[tuple[str, str]] = []
    registry.subscribe("waiting", lambda f: None, lambda s, r: ends.append((s, r)))
    registry.subscribe(None, lambda f: None, lambda s, r: ends.append((s, "all:" + r)))
    registry.deliver(frame("live", 1))
    registry.deliver(frame("over", 1))
    registry.end("over", "done")
    ends.clear()
    assert registry.end_all("worker_crashed") == ["live", "waiting"]
    assert ends == [
        ("live", "all:worker_crashed"),
        ("waiting", "worker_crashed"),
        ("waiting", "all:worker_crashed"),
    ]
    assert registry.end_all("worker_crashed") == []


def test_closed_subscriptions_hear_nothing() -> None:
    registry = StreamRegistry()
    seen: list[int] = []
    one = registry.subscribe("a", lambda f: seen.append(f.seq), print)
    every = registry.subscribe(None, lambda f: seen.append(f.seq), print)
    one.close()
    every.close()
    one.close()
    registry.deliver(frame("a", 1))
    assert seen == []


def test_a_raising_subscriber_does_not_starve_the_others() -> None:
    registry = StreamRegistry()
    seen: list[str] = []

    def broken(*args: object) -> None:
        raise RuntimeError("bug")

    registry.subscribe("a", broken, broken)
    registry.subscribe(None, lambda f: seen.append("frame"), lambda s, r: seen.append(r))
    registry.deliver(frame("a", 1))
    registry.end("a", "over")
    assert seen == ["frame", "over"]
