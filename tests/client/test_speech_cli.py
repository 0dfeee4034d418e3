"""`forge say` and `forge dictate bench` when the supervisor goes away mid-call or refuses: one
line naming what happened and exit 1, never a traceback."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from websockets.asyncio.server import ServerConnection, serve

from forge.testing.supervised import Start

from .conftest import PROJECT_TOML, forge
from .pty_run import FORGE, PtyRun

GREETING = {
    "kind": "greeting",
    "version": 1,
    "forge_version": "0.0.0",
    "forge_version_short": "0.0.0",
    "settings": {},
}
SETTINGS = {"kind": "settings", "document": {}}

Answer = Callable[[ServerConnection, dict[str, object]], object]


async def going_away(ws: ServerConnection, request: dict[str, object]) -> None:
    """What a supervisor stopped mid-call does: close every connection (1001, going away)."""
    del request
    await ws.close(1001, "going away")


async def dropped(ws: ServerConnection, request: dict[str, object]) -> None:
    """A supervisor killed mid-call: the TCP connection ends with no close frame."""
    del request
    ws.transport.abort()


async def refused(ws: ServerConnection, request: dict[str, object]) -> None:
    why = "a bench is already running"
    await ws.send(json.dumps({"kind": "error", "what": request["kind"], "why": why}))
    await ws.wait_closed()


@pytest.fixture
async def listening() -> AsyncIterator[Callable[[Answer], str]]:
    """`url = listening(answer)`: a socket that greets like a supervisor, reads the verb the
    client sends, and answers it with `answer`."""
    answers: list[Answer] = []

    async def handler(ws: ServerConnection) -> None:
        await ws.send(json.dumps(GREETING))
        await ws.send(json.dumps(SETTINGS))
        request = json.loads(await ws.recv())
        await answers[0](ws, request)

    async with serve(
        handler, "127.0.0.1", 0, select_subprotocol=lambda _, offered: offered[0]
    ) as server:
        port = next(iter(server.sockets)).getsockname()[1]

        def at(answer: Answer) -> str:
            answers.append(answer)
            return f"ws://127.0.0.1:{port}/socket"

        yield at


VERBS = {
    "say": ("say", "acme/proj/a", "The build is green."),
    "dictate bench": ("dictate", "bench"),
}


@pytest.mark.parametrize("verb", VERBS)
@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (going_away, "closed by the server (code 1001: going away)"),
        (dropped, "the connection dropped"),
    ],
)
async def test_a_supervisor_gone_mid_call_is_one_line_and_exit_1(
    forge_dirs: dict[str, Path],
    listening: Callable[[Answer], str],
    verb: str,
    answer: Answer,
    reason: str,
) -> None:
    del forge_dirs
    code, out, err = await forge(*VERBS[verb], "--url", listening(answer))
    assert (code, out) == (1, ""), err
    assert (
        err
        == f"forge {verb}: the connection to the supervisor closed before it answered: {reason}\n"
    )


@pytest.mark.parametrize("verb", VERBS)
async def test_a_refusal_is_one_line_and_exit_1(
    forge_dirs: dict[str, Path], listening: Callable[[Answer], str], verb: str
) -> None:
    del forge_dirs
    code, out, err = await forge(*VERBS[verb], "--url", listening(refused))
    assert (code, out) == (1, "")
    assert err == f"forge {verb}: the supervisor refused it: a bench is already running\n"


async def test_say_to_a_seat_of_no_project_says_so(supervise: Start, tmp_path: Path) -> None:
    """Issue 36 item 8: `forge say` to a project forge.toml does not configure named the project,
    not "no client has voice on" (true, but not what was wrong)."""
    project = tmp_path / "proj"
    project.mkdir()
    supervised = await supervise(PROJECT_TOML.format(path=project) + "[tts]\nenabled = true\n")
    code, out, err = await forge("say", "--url", supervised.url, "acme/nope/lead", "hello")
    assert (code, out) == (1, "")
    assert err == (
        "forge say: nothing was said: no project acme/nope is configured for seat acme/nope/lead\n"
    )


RUN = {
    "model": "tiny.en",
    "clips": 2,
    "audio_s": 9.5,
    "corpus_digest": "abc",
    "wer": 0.0,
    "floor_wer": 0.0,
    "rtf": 0.4,
    "end_of_take_p50_s": 0.6,
    "end_of_take_p95_s": 0.9,
    "first_partial_s": None,
    "peak_rss_bytes": 200 * 2**20,
    "rows": [],
}


async def test_a_bench_says_it_runs_on_a_terminal_and_never_prints_none(
    forge_dirs: dict[str, Path], listening: Callable[[Answer], str]
) -> None:
    """Issue 36 item 8: `forge dictate bench` ran 24 s with nothing on the terminal, then printed
    `first partial None s`. Now a terminal is told at once that it runs (with the seconds so far,
    cleared when the figures come), and a bench with no partial says so in words."""
    del forge_dirs
    seen = asyncio.Event()

    async def held(ws: ServerConnection, request: dict[str, object]) -> None:
        await seen.wait()  # answered only once the person has been told it runs
        body = {"ok": True, "run": RUN}
        await ws.send(json.dumps({"kind": "reply", "reply_to": request["reply_to"], "body": body}))
        await ws.wait_closed()

    with PtyRun([*FORGE, "dictate", "bench", "--url", listening(held)]) as run:
        await run.expect(b"forge dictate bench: running the corpus through the models in use")
        seen.set()
        assert await run.finish() == 0
    shown = run.output.decode()
    assert "0.9 s  no partial before a take's end  peak RSS +200 MiB" in shown
    assert "None" not in shown
