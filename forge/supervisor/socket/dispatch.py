"""One client frame to the handler a feature registered for it: decoded on the read path,
dispatched in arrival order.

A text frame is decoded into a typed client message (`ping` is answered at once, T12); a binary
frame into its kind, or dropped with a debug record when nothing serves it (B03, B04). A handler
that refuses raises `ClientRefusal`, answered as `error{what, why, seat}`; a handler's bug is
recorded and answered in words, so it never takes the client's other work down with it. The
`command` verb's variants have handlers of their own, and a reply command's refusal is its
reply's body, not an error (S16).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from forge.logs import get_logger
from forge.supervisor.socket.connection import Connection
from forge.wire import server
from forge.wire.binary import ClientBinary, Dropped, decode_client_binary
from forge.wire.client import ClientDecoder, ClientMessage, Command, Ping
from forge.wire.commands import CommandCall, decode_command, reply_channel
from forge.wire.errors import ClientRefusal
from forge.wire.seats import Seat
from forge.wire.unserved import unserved_command

log = get_logger(__name__)

M = TypeVar("M", bound=ClientMessage)
B = TypeVar("B", bound=ClientBinary)
VerbHandler = Callable[[Connection, M], Awaitable[None]]
CommandHandler = Callable[[Connection, CommandCall], Awaitable[None]]
BinaryHandler = Callable[[Connection, B], Awaitable[None]]
BinaryNowHandler = Callable[[Connection, B], None]


class Dispatcher:
    """The handlers of every verb, command and binary kind, and the decoder that knows them."""

    def __init__(self) -> None:
        self._verbs: dict[type[ClientMessage], VerbHandler[Any]] = {}
        self._commands: dict[str, CommandHandler] = {}
        self._binary: dict[type, BinaryHandler[Any]] = {}
        self._binary_now: dict[type, BinaryNowHandler[Any]] = {}
        self._decoder = ClientDecoder()

    def register_verb(self, message_type: type[M], handler: VerbHandler[M]) -> None:
        self._verbs[message_type] = handler
        tag = str(message_type.__struct_config__.tag)
        if tag not in self._decoder.kinds:
            extra = [t for t in self._verbs if str(t.__struct_config__.tag) not in _BASE_KINDS]
            self._decoder = ClientDecoder(extra)

    def register_command(self, name: str, handler: CommandHandler) -> None:
        self._commands[name] = handler

    def register_binary(self, frame_type: type[B], handler: BinaryHandler[B]) -> None:
        self._binary[frame_type] = handler

    def register_binary_now(self, frame_type: type[B], handler: BinaryNowHandler[B]) -> None:
        self._binary_now[frame_type] = handler

    def accept(self, connection: Connection, data: str | bytes) -> object | None:
        """Decode one client frame on the read path: a `ping` is answered here and now (T12), a
        bad message is answered with an error, a refused binary frame is dropped with a debug
        record (B03, B04); anything else is returned for `dispatch`, in arrival order."""
        if isinstance(data, bytes):
            return self._accept_binary(connection, data)
        try:
            message = self._decoder.decode(data)
        except ClientRefusal as refusal:
            refuse(connection, refusal)
            return None
        if isinstance(message, Ping):
            connection.send_pong()
            return None
        return message

    async def dispatch(self, connection: Connection, item: object) -> None:
        """Run the handler registered for a decoded message or binary frame."""
        if not isinstance(item, ClientMessage):
            now = self._binary_now.get(type(item))
            if now is not None:
                _serve_binary_now(now, connection, item)
                return
            try:
                await self._binary[type(item)](connection, item)
            except Exception:  # a binary frame has no reply channel: the record is the answer
                log.exception(
                    "socket_handler_failed", peer=connection.peer, what=type(item).__name__
                )
            return
        kind = str(item.__struct_config__.tag)
        try:
            handler = self._verbs.get(type(item))
            if handler is None:
                raise _not_served(item)
            await handler(connection, item)
        except ClientRefusal as refusal:
            refuse(connection, refusal)
        except Exception as failure:
            # A bug in one handler must not take the client's other work down with it.
            connection.send(server.Error(what=kind, why=_handler_failed(connection, kind, failure)))

    async def command(self, connection: Connection, message: Command) -> None:
        """Run the command; a reply command's refusal is its reply's body, not an error (S16)."""
        try:
            call = decode_command(message)
            handler = self._commands.get(call.name)
            if handler is None:
                raise unserved_command(call)
            await handler(connection, call)
        except Exception as failure:
            reply_to = reply_channel(message)
            if reply_to is None:
                raise
            if isinstance(failure, ClientRefusal):
                why = failure.why
                log.debug("socket_refused", peer=connection.peer, what="command", why=why)
            else:
                why = _handler_failed(connection, "command", failure)
            connection.send(server.Reply(reply_to=reply_to, body=server.Refused(why=why)))

    def _accept_binary(self, connection: Connection, data: bytes) -> object | None:
        frame = decode_client_binary(data)
        now = self._binary_now.get(type(frame))
        if now is not None:
            if not connection.dispatch_idle:
                return frame  # behind what waits: in order
            _serve_binary_now(now, connection, frame)
            return None
        if not isinstance(frame, Dropped) and type(frame) in self._binary:
            return frame
        if isinstance(frame, Dropped):
            reason, kind = frame.reason, frame.kind
        else:
            reason, kind = "nothing on this server serves it", data[0]
        log.debug("socket_binary_dropped", peer=connection.peer, kind=kind, reason=reason)
        return None


_BASE_KINDS = ClientDecoder().kinds


def refuse(connection: Connection, refusal: ClientRefusal) -> None:
    """Answer a refused verb with `error{what, why, seat}`; the connection stays up."""
    log.debug("socket_refused", peer=connection.peer, what=refusal.what, why=refusal.why)
    connection.send(server.Error(what=refusal.what, why=refusal.why, seat=refusal.seat))


def _serve_binary_now(
    handler: BinaryNowHandler[Any], connection: Connection, frame: object
) -> None:
    try:
        handler(connection, frame)
    except Exception:  # a binary frame has no reply channel: the record is the answer
        log.exception("socket_handler_failed", peer=connection.peer, what=type(frame).__name__)


def _handler_failed(connection: Connection, what: str, failure: Exception) -> str:
    """Record a handler's bug and say it in the words a client is answered with."""
    log.exception("socket_handler_failed", peer=connection.peer, what=what)
    return f"the server failed to handle it ({type(failure).__name__})"


def _not_served(message: ClientMessage) -> ClientRefusal:
    """A verb this server knows and no area serves yet (O-S11): refused by name."""
    kind = str(message.__struct_config__.tag)
    seat = getattr(message, "seat", None)
    return ClientRefusal(
        kind, f"{kind} is not served by this server yet", seat if isinstance(seat, Seat) else None
    )
