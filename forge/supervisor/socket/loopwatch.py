"""A watch on the supervisor's event loop, from a thread of its own.

Every client of the socket waits while the loop stands still, so a stall is worth a record that
says who made it stand: when the loop has not turned for `threshold_s` (`[log] loop_stall_ms`),
the watch thread logs what the loop's thread is running (`loop_stalled`, its innermost frames),
and the loop, once it turns again, logs how long it stood and how much CPU its thread used
meanwhile (`loop_resumed`, `stood_s` and `cpu_s`). A stand with as much CPU as time is forge's
own code; one with little CPU is a thread that was not scheduled (a saturated machine) or that
waited in a blocking call, and the stack says which.
"""

from __future__ import annotations

import asyncio
import itertools
import sys
import threading
import time
import traceback
from collections.abc import Callable
from types import FrameType

from forge.logs import get_logger

log = get_logger(__name__)

TICK_S = 0.1
"""How often the loop marks that it turned, and the watch thread looks."""

STACK_FRAMES = 12
"""The innermost frames logged: enough to name the caller and what it waited on."""


class LoopWatch:
    """Start inside the running loop; stop before the loop closes."""

    def __init__(
        self,
        *,
        threshold_s: float,
        tick_s: float = TICK_S,
        now: Callable[[], float] = time.monotonic,
        cpu: Callable[[], float] = time.thread_time,
    ) -> None:
        self._threshold_s = threshold_s
        self._tick_s = tick_s
        self._now = now
        self._cpu = cpu
        """The CPU seconds of the calling thread (read on the loop's thread only)."""
        self._cpu_at_turn = 0.0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread = 0
        self._turned = 0.0
        self._reported = False
        self._timer: asyncio.TimerHandle | None = None
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._turned = self._now()
        self._cpu_at_turn = self._cpu()
        self._timer = self._loop.call_later(self._tick_s, self._tick)
        self._thread = threading.Thread(target=self._watch, name="loop-watch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._timer is not None:
            self._timer.cancel()
        if self._thread is not None:
            self._thread.join()

    def _tick(self) -> None:
        """On the loop: mark the turn, and say how long the loop stood if it stood too long."""
        now, cpu = self._now(), self._cpu()
        late = now - self._turned - self._tick_s
        used = cpu - self._cpu_at_turn
        self._turned, self._cpu_at_turn = now, cpu
        if late >= self._threshold_s:
            log.warning("loop_resumed", stood_s=round(late, 3), cpu_s=round(used, 3))
        self._reported = False
        assert self._loop is not None
        self._timer = self._loop.call_later(self._tick_s, self._tick)

    def _watch(self) -> None:
        """In the watch thread: one record per stall, with the loop thread's frames."""
        while not self._stopping.wait(self._tick_s):
            late = self._now() - self._turned - self._tick_s
            if late < self._threshold_s or self._reported:
                continue
            self._reported = True
            frame = sys._current_frames().get(self._loop_thread)
            log.warning("loop_stalled", stood_s=round(late, 3), stack=innermost_frames(frame))


def innermost_frames(frame: FrameType | None) -> str:
    """The `STACK_FRAMES` innermost frames as file, line and function, without source text:
    quoting it reads the whole file into `linecache`, which keeps it for the process's life (in
    a chaos hour's supervisor, ~800 stalls had pulled in the text of logging, subprocess, pyzmq,
    asyncio: tens of thousands of strings)."""
    if frame is None:  # the loop's thread is gone
        return ""
    frames = list(itertools.islice(traceback.walk_stack(frame), STACK_FRAMES))
    return "\n".join(
        f'  File "{each.f_code.co_filename}", line {line}, in {each.f_code.co_name}'
        for each, line in reversed(frames)
    )
