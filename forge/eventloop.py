"""The event loop every forge process runs on: uvloop's, through `run`.

A keystroke crosses three event loops (supervisor, terminal host, supervisor again) and every
frame at least two, so the loop's own cost per wake-up is paid several times per echo. uvloop
(libuv underneath) wakes and dispatches in C; beside the standard loop it took ~0.3 ms off a
~1.3 ms keystroke echo through forge (docs/benchmarks.md). Every entry point goes through `run`,
so none starts a process on the other loop by accident; `run_beside_others` is the one exception.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, Protocol, TypeVar

import uvloop

T = TypeVar("T")

new_event_loop = uvloop.new_event_loop
"""The factory `run` uses; the test suite runs its own loops on it too (tests/conftest.py)."""


class _Pipe(Protocol):
    def is_closing(self) -> bool: ...
    def write(self, data: bytes) -> None: ...


def write_to_pipe(pipe: _Pipe, data: bytes) -> bool:
    """Write `data` to a pipe (a transport or a stream writer) whose reader may have died; False,
    and nothing written, when the pipe is already closed.

    A reader's death closes the pipe, and the loops tell a later write differently: the standard
    loop drops it (a broken pipe is reported to the protocol), uvloop raises RuntimeError ("the
    handler is closed") once it has closed its handle. A closed handle is always a closing
    transport, so asking first is the check that holds on both.
    """
    if pipe.is_closing():
        return False
    pipe.write(data)
    return True


def run(main: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(main)` on a uvloop loop."""
    with asyncio.Runner(loop_factory=new_event_loop) as runner:
        return runner.run(main)


def run_beside_others(main: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(main)` on the standard loop, for a thread whose process runs other loops.

    uvloop refuses to spawn a child while a loop in another thread is spawning one ("Racing with
    another loop to spawn a process"), which a Dask worker running two attempts in two threads
    hits at once; the standard loop spawns through `subprocess.Popen`, which threads may call at
    once.
    """
    with asyncio.Runner() as runner:
        return runner.run(main)
