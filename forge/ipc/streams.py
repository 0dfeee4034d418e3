"""Who listens to which bulk stream of a worker, and telling them when a stream ends.

Callbacks run in the receive loop, synchronously: they must only hand the frame on (append to
a connection's bounded queue, apply that queue's drop policy) and never block. A subscription to
one stream ends with it; a subscription to every stream (`stream_id=None`) lasts until closed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from forge import logs
from forge.ipc.messages import StreamFrame

log = logs.get_logger("forge.ipc")

OnFrame = Callable[[StreamFrame], None]
OnEnd = Callable[[str, str], None]
"""Called with (stream_id, reason): the worker's reason, `worker_crashed` or `worker_stopped`."""


@dataclass(eq=False)
class Subscription:
    """Returned by `subscribe`; `close()` stops the callbacks."""

    stream_id: str | None
    on_frame: OnFrame
    on_end: OnEnd
    _registry: StreamRegistry | None = None

    def close(self) -> None:
        if self._registry is not None:
            self._registry.remove(self)
            self._registry = None


class StreamRegistry:
    """Subscribers of one worker's streams, and which streams are live."""

    def __init__(self) -> None:
        self._by_stream: dict[str, list[Subscription]] = {}
        self._every: list[Subscription] = []
        self._live: set[str] = set()

    def subscribe(self, stream_id: str | None, on_frame: OnFrame, on_end: OnEnd) -> Subscription:
        subscription = Subscription(stream_id, on_frame, on_end, self)
        if stream_id is None:
            self._every.append(subscription)
        else:
            self._by_stream.setdefault(stream_id, []).append(subscription)
        return subscription

    def remove(self, subscription: Subscription) -> None:
        if subscription.stream_id is None:
            self._every.remove(subscription)
            return
        listeners = self._by_stream.get(subscription.stream_id, [])
        listeners.remove(subscription)
        if not listeners:
            self._by_stream.pop(subscription.stream_id, None)

    def deliver(self, frame: StreamFrame) -> None:
        self._live.add(frame.stream_id)
        for subscription in [*self._by_stream.get(frame.stream_id, ()), *self._every]:
            try:
                subscription.on_frame(frame)
            except Exception:  # one subscriber's bug must not starve the others
                log.exception("stream_subscriber_failed", stream=frame.stream_id)

    def end(self, stream_id: str, reason: str) -> None:
        """The stream is over: its own subscriptions get `on_end` once and are removed."""
        self._live.discard(stream_id)
        ending = self._by_stream.pop(stream_id, [])
        for subscription in ending:
            subscription._registry = None
        for subscription in [*ending, *self._every]:
            try:
                subscription.on_end(stream_id, reason)
            except Exception:
                log.exception("stream_subscriber_failed", stream=stream_id)

    def end_all(self, reason: str) -> list[str]:
        """The worker is gone: end every live or subscribed stream; returns their ids."""
        stream_ids = sorted(self._live | set(self._by_stream))
        for stream_id in stream_ids:
            self.end(stream_id, reason)
        return stream_ids
