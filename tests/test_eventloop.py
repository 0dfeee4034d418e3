"""The event loop's two quirks forge meets: uvloop's spawn across threads, its closed pipes."""

from __future__ import annotations

import asyncio
import threading

from forge import eventloop


async def _spawn_thirty() -> None:
    for _ in range(30):
        process = await asyncio.create_subprocess_exec("true")
        await process.wait()


def test_two_threads_running_loops_beside_each_other_spawn_at_once() -> None:
    """A Dask worker runs two attempts in two threads; on uvloop one of them failed with
    "Racing with another loop to spawn a process"."""
    errors: list[BaseException] = []

    def attempt() -> None:
        try:
            eventloop.run_beside_others(_spawn_thirty())
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=attempt) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []


async def test_a_write_to_a_pipe_whose_reader_exited_is_refused_not_raised() -> None:
    """uvloop (the suite's loop) has closed the pipe by the time the exit is seen; a plain write
    raised RuntimeError there, which aborted a Lab run whose deathwatch had been killed."""
    process = await asyncio.create_subprocess_exec(
        "sh", "-c", "read line", stdin=asyncio.subprocess.PIPE
    )
    assert process.stdin is not None
    assert eventloop.write_to_pipe(process.stdin, b"the line that ends it\n") is True
    await process.wait()
    assert eventloop.write_to_pipe(process.stdin, b"x" * 100_000) is False


async def test_a_write_to_a_live_reader_arrives() -> None:
    process = await asyncio.create_subprocess_exec(
        "cat", stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
    )
    assert process.stdin is not None
    assert eventloop.write_to_pipe(process.stdin, b"hello\n") is True
    process.stdin.close()
    out, _ = await process.communicate()
    assert out == b"hello\n"
