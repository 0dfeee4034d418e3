"""`forge agent`: a terminal's door to the agent seats of the running supervisor.

`spawn` starts an agent on a seat (the `spawn` command, answered in its reply). `prompt` sends a
prompt and follows the seat's stream: the turn's text goes to stdout as it streams, an ask the
agent raises is said on stderr with the command that answers it, and the call returns when the
turn ends (Ctrl-C sends `cancel` and waits for the interrupted turn's end). `asks` lists every
pending ask of every agent seat; `answer` decides one of them by its id.

`TurnFollower` reads the stream free of I/O: which prompt is ours (the forged user message with
our text, the first after we sent it), what to print, and when the turn is over.
"""

from __future__ import annotations

import asyncio
import signal
import ssl
from dataclasses import dataclass, field
from typing import Any, Literal, TextIO

from forge.client.connection import ForgeConnection, connect
from forge.client.errors import ServerRefused
from forge.client.frames import Error, Frame, Update
from forge.wire.client import Command
from forge.wire.seats import HOME, Seat, session

COMPLETED = 0
NOT_COMPLETED = 1
"""The turn ended otherwise than completed (failed, interrupted, refused)."""
INTERRUPTED = 130

Decision = Literal["allow", "always", "deny"]


@dataclass
class TurnFollower:
    """One prompt's turn as the seat's updates tell it."""

    text: str
    uuid: str | None = None
    outcome: str | None = None
    refusal: str | None = None
    asks: list[dict[str, Any]] = field(default_factory=list)
    cancelled: bool = False
    """Ctrl-C sent `cancel`: a command error from then on answers the cancel (a turn that
    ended as it was sent), not the prompt, and the turn's own end is still awaited."""

    def read(self, frame: Frame) -> str:
        """The text `frame` adds to stdout (often nothing); sets `outcome` at the turn's end."""
        if isinstance(frame, Error) and frame.what == "command":
            if not self.cancelled:
                self.refusal = frame.why
            return ""
        if not isinstance(frame, Update) or not isinstance(frame.update, dict):
            return ""
        ((variant, body),) = frame.update.items()
        if variant == "chat_appended":
            message = body["msg"]
            if self.uuid is None and message["type"] == "user" and message["text"] == self.text:
                self.uuid = message["uuid"]
            elif self.uuid is not None and self.outcome is None:
                return _printed(message)
        elif variant == "prompt_lifecycle" and body["uuid"] == self.uuid:
            if body["phase"] == "ended":
                self.outcome = body["outcome"]
                return "\n"
        elif variant == "ask_pending" and self.uuid is not None:
            self.asks.append(body["ask"])
        return ""

    @property
    def over(self) -> bool:
        return self.outcome is not None or self.refusal is not None


def _printed(message: dict[str, Any]) -> str:
    if message["type"] == "delta" and message["kind"] == "text":
        return str(message["text"])
    if message["type"] == "assistant":
        calls = [b for b in message["blocks"] if b["type"] == "tool_use"]
        return "".join(f"\n[{b['name']}] {b['input'].get('command', b['input'])}\n" for b in calls)
    return ""


def describe_ask(seat: Seat | str, ask: dict[str, Any]) -> str:
    """One line per ask: its id, seat and what it asks."""
    if ask["kind"] == "permission":
        what = f"{ask['tool_name']}: {ask['input'].get('command', ask['input'])}"
    else:
        what = " / ".join(question["question"] for question in ask["questions"])
    return f"{ask['id']}  {seat}  {what}"


async def spawn(
    url: str,
    seat: Seat,
    *,
    model: str | None,
    permission_mode: str,
    worktree: str | None,
    tls: ssl.SSLContext | None = None,
) -> dict[str, Any]:
    """The spawn's reply body: `{ok, key, session_id, cwd}` or `{ok: false, why}`."""
    fields: dict[str, Any] = {"key": seat, "permission_mode": permission_mode}
    if model is not None:
        fields["model"] = model
    if worktree is not None:
        fields["worktree"] = worktree
    async with connect(url, tls=tls) as connection:
        answer: dict[str, Any] = await connection.request(Command(command={"spawn": fields}))
        return answer


async def prompt(
    url: str, seat: Seat, text: str, out: TextIO, err: TextIO, *, tls: ssl.SSLContext | None = None
) -> int:
    """Send `text` to the seat's agent and stream its turn to `out`; the exit status."""
    follower = TurnFollower(text)
    loop = asyncio.get_running_loop()
    sending: set[asyncio.Task[None]] = set()
    async with connect(url, tls=tls) as connection:
        await connection.subscribe(session(seat))
        cancel = Command(command={"cancel": {"key": seat}})

        def interrupt() -> None:
            follower.cancelled = True
            task = loop.create_task(connection.send(cancel))
            sending.add(task)
            task.add_done_callback(sending.discard)

        loop.add_signal_handler(signal.SIGINT, interrupt)
        try:
            await connection.send(
                Command(command={"prompt": {"key": seat, "text": text, "source": "cli"}})
            )
            await _follow(connection, follower, seat, out, err)
        finally:
            loop.remove_signal_handler(signal.SIGINT)
    return exit_status(follower, seat, err)


def exit_status(follower: TurnFollower, seat: Seat, err: TextIO) -> int:
    """The status `forge agent prompt` exits with, after saying on `err` why it is not 0."""
    if follower.refusal is not None:
        err.write(f"forge agent prompt: refused: {follower.refusal}\n")
        return NOT_COMPLETED
    if follower.outcome == "completed":
        return COMPLETED
    if follower.outcome == "interrupted":
        err.write(f"forge agent prompt: interrupted: the turn on {seat} was cancelled\n")
        return INTERRUPTED
    err.write(f"forge agent prompt: the turn on {seat} ended {follower.outcome}\n")
    return NOT_COMPLETED


async def _follow(
    connection: ForgeConnection, follower: TurnFollower, seat: Seat, out: TextIO, err: TextIO
) -> None:
    while not follower.over:
        frame = await connection.next_event()
        out.write(follower.read(frame))
        out.flush()
        for ask in follower.asks:
            err.write(
                f"asks: {describe_ask(seat, ask)}  (forge agent answer ID allow|deny|always)\n"
            )
        err.flush()
        follower.asks.clear()


async def pending_asks(
    connection: ForgeConnection, *, answering: bool = False
) -> list[tuple[Seat, dict[str, Any]]]:
    """Every agent seat's pending asks, oldest first per seat; `answering` declares this
    connection one that answers them (the server refuses an answer from any other)."""
    home = await connection.subscribe(HOME, answering=answering)
    found: list[tuple[Seat, dict[str, Any]]] = []
    for row in home["agents"]:
        seat = Seat(**row["slot"])
        data = await connection.subscribe(session(seat))
        found.extend((seat, ask) for ask in data.get("pending_asks", []))
    return found


async def asks(url: str, *, tls: ssl.SSLContext | None = None) -> list[tuple[Seat, dict[str, Any]]]:
    async with connect(url, tls=tls) as connection:
        return await pending_asks(connection)


async def answer(
    url: str,
    ask_id: str,
    decision: Decision,
    reason: str | None,
    *,
    tls: ssl.SSLContext | None = None,
) -> dict[str, Any]:
    """Decide ask `ask_id` on whichever seat holds it: the seat's `ask_resolved` body."""
    async with connect(url, tls=tls) as connection:
        pending = await pending_asks(connection, answering=True)
        holders = [seat for seat, ask in pending if ask["id"] == ask_id]
        if not holders:
            raise ServerRefused("command", f"no ask {ask_id} waits on any agent seat")
        seat = holders[0]
        body: Any = {"allow": "allow_once", "always": "allow_always"}.get(decision) or {
            "deny": {"reason": reason or "denied from the terminal (forge agent answer)"}
        }
        await connection.send(
            Command(command={"answer": {"key": seat, "id": ask_id, "answer": body}})
        )
        while True:
            frame = await connection.next_event()
            if isinstance(frame, Error) and frame.what == "command":
                raise ServerRefused(frame.what, frame.why)
            if isinstance(frame, Update) and isinstance(frame.update, dict):
                resolved = frame.update.get("ask_resolved")
                if resolved is not None and resolved["id"] == ask_id:
                    return dict(resolved)
