"""Agent seats through a real `forge supervise`, the real Claude Code CLI (the SDK's bundled one)
and forge's scripted model server: the only fake is the network.

The supervisor inherits the test's environment and its agent workers inherit the supervisor's,
so `agent_env` points the CLI at the model server (a fresh HOME and config dir, a test key, the
quiet flags). `Reader` keeps every frame a connection received, as text, and lets a test await
the first frame a predicate accepts: nothing here sleeps.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed

from forge.testing.agent_cli import cli_env, steers_cli
from forge.testing.model_script import parse_script
from forge.testing.model_server import ModelServer
from forge.testing.supervised import Start, Supervised

pytest.importorskip("claude_agent_sdk")

WITHIN = 180.0
"""Seconds an awaited frame may take: the CLI starts slowly on a loaded machine."""

SEAT = {"org": "acme", "project": "web", "label": "main"}
SESSION = {"session": SEAT}

Frame = dict[str, Any]


def git_project(path: Path) -> Path:
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True)
    return path


def add_worktree(project: Path, tree: Path) -> Path:
    """A git worktree of `project` at `tree` (on a first commit)."""
    who = ["-c", "user.name=forge", "-c", "user.email=forge@example.invalid"]
    commit = ["commit", "-q", "--allow-empty", "-m", "base"]
    subprocess.run(["git", "-C", str(project), *who, *commit], check=True)
    subprocess.run(["git", "-C", str(project), "worktree", "add", "-q", str(tree)], check=True)
    return tree


def config_for(path: Path) -> str:
    return f'[[projects]]\norg = "acme"\nname = "web"\npath = "{path}"\n'


class Reader:
    """One greeted connection and every frame it received since (raw text and decoded)."""

    def __init__(self, client: ClientConnection) -> None:
        self.client = client
        self.raw: list[str] = []
        self.frames: list[Frame] = []
        self._change = asyncio.Event()
        self._task = asyncio.create_task(self._read())

    async def _read(self) -> None:
        with contextlib.suppress(ConnectionClosed):
            async for text in self.client:
                assert isinstance(text, str)
                self.raw.append(text)
                self.frames.append(json.loads(text))
                self._change.set()
                self._change = asyncio.Event()

    def send(self, message: Frame) -> None:
        asyncio.get_running_loop().create_task(self.client.send(json.dumps(message)))

    async def first(self, where: Callable[[Frame], bool], since: int = 0) -> Frame:
        """The first frame from index `since` on that `where` accepts, once it came."""
        async with asyncio.timeout(WITHIN):
            while True:
                change = self._change
                for frame in self.frames[since:]:
                    if where(frame):
                        return frame
                await change.wait()

    async def ask(self, message: Frame, where: Callable[[Frame], bool]) -> Frame:
        since = len(self.frames)
        await self.client.send(json.dumps(message))
        return await self.first(where, since)

    async def command(self, name: str, fields: Frame, reply_to: int | None = None) -> Frame | None:
        """Send a command; a reply command's answer is returned, any other returns None after
        the command's error (if any) is awaited elsewhere."""
        message = {"kind": "command", "command": {name: fields}, "reply_to": reply_to}
        if reply_to is None:
            await self.client.send(json.dumps(message))
            return None
        answer = await self.ask(
            message,
            lambda f: (
                (f["kind"] == "reply" and f["reply_to"] == reply_to)
                or (f["kind"] == "error" and f["what"] == "command")
            ),
        )
        assert answer["kind"] == "reply", f"refused by an error, not in its reply: {answer}"
        body: Any = answer["body"]
        return body

    async def close(self) -> None:
        await self.client.close()
        self._task.cancel()


def update(variant: str) -> Callable[[Frame], bool]:
    return lambda f: (
        f["kind"] == "update" and isinstance(f["update"], dict) and variant in f["update"]
    )


def body(frame: Frame) -> Any:
    ((_, value),) = frame["update"].items()
    return value


def updates(reader: Reader, variant: str) -> list[Any]:
    return [body(f) for f in reader.frames if update(variant)(f)]


def seat_updates_raw(reader: Reader) -> list[str]:
    """The raw text of every numbered seat update this reader received, in order."""
    return [
        text for text, frame in zip(reader.raw, reader.frames, strict=True)
        if frame["kind"] == "update" and "seq" in frame
    ]  # fmt: skip


@pytest.fixture
def agent_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Callable[[ModelServer], None]:
    """Point every CLI the supervisor will start at `server`; none of an outer session's
    model, proxy or Claude settings may steer it."""
    for name in list(os.environ):
        if steers_cli(name):
            monkeypatch.delenv(name)

    def point(server: ModelServer) -> None:
        for name, value in cli_env(server.url, tmp_path).items():
            monkeypatch.setenv(name, value)

    return point


AgentSupervisor = Callable[..., Awaitable[tuple[ModelServer, Supervised, Path]]]


@pytest.fixture
async def agent_supervisor(
    supervise: Start, agent_env: Callable[[ModelServer], None], tmp_path: Path
) -> AsyncIterator[AgentSupervisor]:
    """`await agent_supervisor(*turns, config=..., chunk=...)`: a model server playing `turns`
    (`chunk` characters a delta), a supervisor whose agents talk to it (its forge.toml ends with
    `config`), and the project's directory."""
    async with contextlib.AsyncExitStack() as stack:

        async def start(
            *turns: dict[str, Any], config: str = "", chunk: int | None = None
        ) -> tuple[ModelServer, Supervised, Path]:
            document: dict[str, Any] = {"turns": list(turns)}
            if chunk is not None:
                document["chunk"] = chunk
            server = await stack.enter_async_context(ModelServer(parse_script(document)))
            agent_env(server)
            project = git_project(tmp_path / "web")
            return server, await supervise(config_for(project) + config), project

        yield start


async def reader(supervised: Supervised, *, answering: bool = False) -> Reader:
    """A connection holding the seat's session (after a spawn) and home."""
    connected = Reader(await supervised.greeted())
    await connected.ask(
        {"kind": "subscribe", "what": "home", "answering": answering},
        lambda f: f["kind"] == "snapshot" and f["subject"] == "home",
    )
    return connected


async def spawn(connection: Reader, **fields: Any) -> Frame:
    answer = await connection.command("spawn", {"key": SEAT, **fields}, reply_to=1)
    assert answer is not None
    assert answer.get("ok") is True, answer
    return answer


async def hold_session(connection: Reader) -> Frame:
    snapshot = await connection.ask(
        {"kind": "subscribe", "what": SESSION},
        lambda f: f["kind"] == "snapshot" and f["subject"] == SESSION,
    )
    return snapshot["data"]


def ended(frame: Frame) -> bool:
    return update("prompt_lifecycle")(frame) and body(frame)["phase"] == "ended"
