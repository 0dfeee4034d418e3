"""Folding token appends: a run of consecutive `delta` messages crosses as one frame (free of
I/O).

The service holds a seat's `chat_appended` deltas until its event loop has nothing more queued
from the worker (or a frame of another kind is published), then publishes each run of deltas of
the same block (`kind` and `index`) as ONE frame: the texts joined, numbered with the run's first
`seq` and `span` equal to how many appends it stands for, so the seat's counter moves exactly as
if each had crossed alone and `seat_range` answers any number inside the run with the one frame.
"""

from __future__ import annotations

from forge.supervisor.agent.seat import Update
from forge.wire import agent as wire


def delta_of(update: Update) -> wire.DeltaMessage | None:
    """The token append `update` carries, if it is one."""
    variant, body = update
    message = body.get("msg") if variant == "chat_appended" else None
    return message if isinstance(message, wire.DeltaMessage) else None


def fold(updates: list[Update]) -> list[tuple[Update, int]]:
    """`updates` with each run of deltas of one block joined: (update, span) in order."""
    folded: list[tuple[Update, int]] = []
    for update in updates:
        delta = delta_of(update)
        if delta is not None and folded:
            (variant, body), span = folded[-1]
            last = delta_of((variant, body))
            if last is not None and (last.kind, last.index) == (delta.kind, delta.index):
                joined = wire.DeltaMessage(
                    kind=delta.kind, index=delta.index, text=last.text + delta.text
                )
                folded[-1] = ((variant, {**body, "msg": joined}), span + 1)
                continue
        folded.append((update, 1))
    return folded
