"""Keystrokes written to a real PTY master: in order, held while the PTY is full, refused whole
past the bound or once closed."""

from __future__ import annotations

import asyncio
import os
import tty
from collections.abc import AsyncIterator

import pytest

from forge.ptyinput import PENDING_LIMIT, PtyInput


@pytest.fixture
async def pty() -> AsyncIterator[tuple[PtyInput, int]]:
    """Input for a PTY's master, and its slave, raw so every byte comes back as written."""
    master, slave = os.openpty()
    tty.setraw(slave)
    keys = PtyInput(master)
    yield keys, slave
    keys.close()
    os.close(slave)


def read_all(slave: int) -> bytes:
    """What the slave has now, without waiting."""
    os.set_blocking(slave, False)
    data = b""
    while True:
        try:
            chunk = os.read(slave, 65536)
        except BlockingIOError:
            return data
        data += chunk


async def test_keystrokes_arrive_in_order(pty: tuple[PtyInput, int]) -> None:
    keys, slave = pty
    assert keys.write(b"echo hi\r")
    assert keys.write(b"ls\r")
    assert keys.pending == 0
    assert os.read(slave, 100) == b"echo hi\rls\r"


async def test_what_the_pty_cannot_take_waits_then_follows_in_order(
    pty: tuple[PtyInput, int],
) -> None:
    keys, slave = pty
    paste = bytes(range(256)) * 1024  # 256 KiB: more than the PTY holds unread
    assert keys.write(paste)
    assert keys.pending > 0  # the slave reads nothing yet
    assert keys.write(b"after")
    received = b""
    while len(received) < len(paste) + 5:
        received += read_all(slave)
        await asyncio.sleep(0.01)  # the loop's writer turn drains what waits
    assert received == paste + b"after"
    assert keys.pending == 0


async def test_past_the_bound_input_is_refused_whole_and_what_waits_is_kept(
    pty: tuple[PtyInput, int],
) -> None:
    keys, slave = pty
    assert not keys.write(b"x" * (PENDING_LIMIT + 1))  # refused whole: nothing written
    assert read_all(slave) == b""
    first = b"a" * (PENDING_LIMIT // 2)
    assert keys.write(first)
    waiting = keys.pending
    assert not keys.write(b"b" * (PENDING_LIMIT - waiting + 1))
    assert keys.pending == waiting
    received = b""
    while len(received) < len(first):
        received += read_all(slave)
        await asyncio.sleep(0.01)
    assert received == first


async def test_a_closed_input_refuses_and_has_closed_its_master() -> None:
    master, slave = os.openpty()
    keys = PtyInput(master)
    keys.close()
    assert not keys.write(b"echo lost\r")
    os.close(slave)
    with pytest.raises(OSError, match="Bad file descriptor"):
        os.fstat(master)  # the PtyInput closed the master it owned
