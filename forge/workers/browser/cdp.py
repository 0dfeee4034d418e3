"""The Chrome DevTools Protocol as a pure message layer: no pipe, no clock, no event loop.

Fed the bytes Chromium wrote (`receive_data`), it yields typed messages (`messages_received`); asked
for a command (`command`), it returns the id and queues the bytes (`data_to_send`). Framing is the
`--remote-debugging-pipe` one: each message is one JSON object followed by a NUL byte.

Sessions are flat (`Target.attachToTarget` / `Target.setAutoAttach` with `flatten: true`): every
message to or from a page carries its `sessionId`. The core tracks which sessions are attached, so
a command still waiting on a session that detached is answered here with a `CdpReply` error rather
than left hanging forever.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

JsonObject = dict[str, Any]

DETACHED_CODE = -32001
"""Error code this core gives commands whose session detached before Chromium answered."""


@dataclass(frozen=True)
class CdpReply:
    """Chromium's answer to one command: `result` on success, else `error_code`/`error_message`."""

    id: int
    method: str
    session_id: str | None
    result: JsonObject | None = None
    error_code: int | None = None
    error_message: str | None = None

    @property
    def ok(self) -> bool:
        return self.result is not None


@dataclass(frozen=True)
class CdpEvent:
    """A notification Chromium sent on its own (`Page.screencastFrame`, `Target.targetCreated`)."""

    method: str
    params: JsonObject
    session_id: str | None


CdpMessage = CdpReply | CdpEvent


@dataclass
class _Pending:
    method: str
    session_id: str | None


@dataclass
class CdpProtocol:
    """Command ids, replies matched to commands, events sorted by session; bytes in, bytes out."""

    _next_id: int = 1
    _pending: dict[int, _Pending] = field(default_factory=dict)
    _sessions: dict[str, str] = field(default_factory=dict)
    _inbound: bytearray = field(default_factory=bytearray)
    _outbound: list[bytes] = field(default_factory=list)
    _received: list[CdpMessage] = field(default_factory=list)

    def command(
        self, method: str, params: JsonObject | None = None, session_id: str | None = None
    ) -> int:
        """Queue one command and return its id; its reply arrives as a `CdpReply` with that id."""
        command_id = self._next_id
        self._next_id += 1
        message: JsonObject = {"id": command_id, "method": method, "params": params or {}}
        if session_id is not None:
            message["sessionId"] = session_id
        self._pending[command_id] = _Pending(method, session_id)
        self._outbound.append(json.dumps(message, separators=(",", ":")).encode() + b"\0")
        return command_id

    def data_to_send(self) -> bytes:
        """Everything queued since the last call, ready to write to Chromium's pipe."""
        data = b"".join(self._outbound)
        self._outbound.clear()
        return data

    def receive_data(self, data: bytes) -> None:
        """Take bytes from Chromium; complete messages become available in `messages_received`."""
        self._inbound.extend(data)
        while (end := self._inbound.find(b"\0")) >= 0:
            raw = bytes(self._inbound[:end])
            del self._inbound[: end + 1]
            self._take(json.loads(raw))

    def messages_received(self) -> list[CdpMessage]:
        """Replies and events parsed since the last call, in arrival order."""
        messages = self._received
        self._received = []
        return messages

    def target_of(self, session_id: str) -> str | None:
        """The target a flat session is attached to, while it is."""
        return self._sessions.get(session_id)

    @property
    def pending(self) -> int:
        """Commands sent and not yet answered."""
        return len(self._pending)

    def fail_pending(self, why: str) -> list[CdpReply]:
        """Answer every waiting command with an error (the pipe closed): nothing waits forever."""
        failed = [self._detached_reply(i, p, why) for i, p in self._pending.items()]
        self._pending.clear()
        return failed

    def _take(self, message: JsonObject) -> None:
        session_id: str | None = message.get("sessionId")
        if "id" in message:
            pending = self._pending.pop(message["id"], None)
            if pending is None:
                return
            error = message.get("error")
            self._received.append(
                CdpReply(
                    id=message["id"],
                    method=pending.method,
                    session_id=session_id,
                    result=message.get("result", {}) if error is None else None,
                    error_code=None if error is None else error.get("code"),
                    error_message=None if error is None else error.get("message"),
                )
            )
            return
        event = CdpEvent(message["method"], message.get("params", {}), session_id)
        if event.method == "Target.attachedToTarget":
            self._sessions[event.params["sessionId"]] = event.params["targetInfo"]["targetId"]
        self._received.append(event)
        if event.method == "Target.detachedFromTarget":
            self._detach(event.params["sessionId"])

    def _detach(self, session_id: str) -> None:
        self._sessions.pop(session_id, None)
        orphaned = [i for i, p in self._pending.items() if p.session_id == session_id]
        for command_id in orphaned:
            pending = self._pending.pop(command_id)
            self._received.append(
                self._detached_reply(command_id, pending, f"session {session_id} detached")
            )

    @staticmethod
    def _detached_reply(command_id: int, pending: _Pending, why: str) -> CdpReply:
        return CdpReply(
            id=command_id,
            method=pending.method,
            session_id=pending.session_id,
            error_code=DETACHED_CODE,
            error_message=why,
        )
