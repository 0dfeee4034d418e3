"""A scripted stand-in for Anthropic's Messages API, so the real Claude Code CLI runs here with no
network: point its `ANTHROPIC_BASE_URL` at `server.url` and it streams the script's turns.

    script = parse_script({"turns": [{"bash": "echo hi > f.txt"}, {"say": "Done."}]})
    async with ModelServer(script) as server:
        env = {"ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": "test-key", **QUIET_CLI_ENV}
        ...  # run the CLI (or the agent SDK) with env
        await server.wait_for(lambda: len(server.played) == 2)
        assert tool_results(server.message_requests()[1].body)[0].tool_name == "Bash"

It is a real HTTP/1.1 server (asyncio streams with h11's protocol state machine) on 127.0.0.1 and
an ephemeral port (and, if asked, a Unix socket: the CLI's `ANTHROPIC_UNIX_SOCKET`, for a CLI in
a network namespace of its own). It answers `POST /v1/messages` (streamed as server-sent events,
or one JSON message), `POST /v1/messages/count_tokens`, any HEAD probe (200) and anything else
with the API's 404 error. Each request is recorded (`requests`): method, path, headers with
secrets redacted, JSON body, the turn that answered it and how the answer ended. Faults come
from the script: an HTTP error (`fail`), a stream cut mid-event (`drop`), a stream held until
`release()` or the client leaves (`stall`, to interrupt mid-stream: `await wait_stalled()`).

From a shell, `python -m forge.testing.model_server --script FILE [--port N] [--unix PATH]`
serves a script until Ctrl-C: it prints its URL, then one line per request as it is answered.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import ipaddress
import itertools
import json
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, NoReturn, Self
from urllib.parse import urlsplit

import h11

from forge.attempt.agent_atom import QUIET_CLI_ENV as QUIET_CLI_ENV  # the tests' CLI switches
from forge.errors import UserError
from forge.testing.model_conversation import next_turn
from forge.testing.model_replies import (
    Event,
    count_tokens_json,
    error_json,
    message_json,
    stream_events,
)
from forge.testing.model_script import Script, ScriptError, Turn, load_script

REDACTED = "<redacted>"
_SECRET_HEADERS = frozenset({"x-api-key", "authorization", "proxy-authorization", "cookie"})
_SECRET_WORDS = ("key", "token", "secret", "auth", "cookie")
_READ_SIZE = 65536


class NotLoopback(UserError):
    """The model server listens on this machine only; the host asked for was not loopback."""


Outcome = Literal[
    "pending",
    "answered",
    "failed",
    "dropped",
    "stalled",
    "left",
    "unscripted",
    "refused",
    "probe",
    "unknown",
]


@dataclass
class RecordedRequest:
    """A request as the server got it, and how it was answered.

    `outcome`: "pending" while answering; "answered"; "failed" (a scripted HTTP error);
    "dropped" (cut mid-event on purpose); "stalled" (held now); "left" (the client closed the
    connection before the answer ended); "unscripted" (no turn answers it, 400); "refused"
    (malformed or too large, 4xx); "probe" (a HEAD, 200); "unknown" (another path, 404).
    """

    number: int
    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: Any
    size: int
    turn: int | None = None
    status: int | None = None
    outcome: Outcome = "pending"


@dataclass
class _Answer:
    """What the server decided for a request before writing it."""

    status: int
    payload: dict[str, Any] | None = None
    turn: Turn | None = None


class _Left(Exception):
    """The client went away; the connection is closed."""


class _Dropped(Exception):
    """The script cut the stream; the connection is closed."""


class ModelServer:
    """The server: `async with ModelServer(script) as server:` then `server.url`."""

    def __init__(
        self,
        script: Script,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        unix_path: Path | None = None,
        max_body: int = 32 * 1024 * 1024,
        on_sent: Callable[[RecordedRequest, Event], None] | None = None,
    ) -> None:
        """`on_sent(request, event)` is called as each streamed event has been handed to the
        connection (a benchmark stamps the moment a text delta left the server)."""
        if host != "localhost" and not _is_loopback(host):
            raise NotLoopback(f"the model server binds loopback only; {host!r} is not loopback")
        self.script = script
        self.requests: list[RecordedRequest] = []
        self.played: list[int] = []
        self._host, self._port, self._unix_path, self._max_body = host, port, unix_path, max_body
        self._on_sent = on_sent
        self._servers: list[asyncio.Server] = []
        self._writers: set[asyncio.StreamWriter] = set()
        self._change = asyncio.Event()
        self._release = asyncio.Event()
        self._url: str | None = None

    @property
    def url(self) -> str:
        """`http://127.0.0.1:PORT` (what `ANTHROPIC_BASE_URL` takes); only once started."""
        if self._url is None:
            raise RuntimeError("the model server has not started")
        return self._url

    async def start(self) -> None:
        tcp = await asyncio.start_server(self._connection, self._host, self._port)
        self._servers.append(tcp)
        port = tcp.sockets[0].getsockname()[1]
        self._url = f"http://{self._host}:{port}"
        if self._unix_path is not None:
            self._servers.append(
                await asyncio.start_unix_server(self._connection, path=str(self._unix_path))
            )
            self._unix_path.chmod(0o600)

    async def close(self) -> None:
        """Stop listening, close every connection (held streams end as "left")."""
        for server in self._servers:
            server.close()
        for writer in list(self._writers):
            writer.close()
        for server in self._servers:
            await server.wait_closed()
        if self._unix_path is not None:
            self._unix_path.unlink(missing_ok=True)

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()

    def message_requests(self) -> list[RecordedRequest]:
        """The `POST /v1/messages` requests, in order."""
        return [r for r in self.requests if r.method == "POST" and r.path == "/v1/messages"]

    def unplayed(self) -> list[int]:
        """The indices of the turns no request got yet."""
        return [index for index in range(len(self.script.turns)) if index not in self.played]

    async def wait_for(self, predicate: Callable[[], bool]) -> None:
        """Return once `predicate()` holds; it is checked on each recorded change."""
        while True:
            change = self._change
            if predicate():
                return
            await change.wait()

    async def wait_stalled(self) -> RecordedRequest:
        """The request whose stream is held now, once there is one."""
        await self.wait_for(lambda: any(r.outcome == "stalled" for r in self.requests))
        return next(r for r in self.requests if r.outcome == "stalled")

    def release(self) -> None:
        """Let every held stream go on."""
        self._release.set()
        self._release = asyncio.Event()

    def _changed(self) -> None:
        self._change.set()
        self._change = asyncio.Event()

    def _settle(self, record: RecordedRequest, outcome: Outcome) -> None:
        record.outcome = outcome
        self._changed()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        connection = h11.Connection(h11.SERVER, max_incomplete_event_size=_READ_SIZE)
        try:
            while await self._exchange(connection, reader, writer):
                connection.start_next_cycle()
        except h11.RemoteProtocolError as error:
            await self._refuse_malformed(connection, writer, error)
        except (_Left, _Dropped, ConnectionError):
            pass
        finally:
            self._writers.discard(writer)
            writer.close()

    async def _exchange(
        self, connection: h11.Connection, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> bool:
        """Serve one request; whether the connection stays open for another."""
        request = await _next_event(connection, reader)
        if isinstance(request, h11.ConnectionClosed):
            return False
        assert isinstance(request, h11.Request)
        body, too_large = await self._read_body(connection, reader, request)
        record = self._record(request, body, too_large)
        answer = self._decide(record, too_large)
        await self._send(connection, reader, writer, record, answer)
        return (
            connection.our_state is h11.DONE
            and connection.their_state is h11.DONE
            and not too_large
        )

    async def _read_body(
        self, connection: h11.Connection, reader: asyncio.StreamReader, request: h11.Request
    ) -> tuple[bytes, bool]:
        """The body, or (what came so far, True) past `max_body` (the rest is not read)."""
        declared = dict(request.headers).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self._max_body:
            return b"", True
        chunks: list[bytes] = []
        size = 0
        while True:
            event = await _next_event(connection, reader)
            if isinstance(event, h11.EndOfMessage):
                return b"".join(chunks), False
            if isinstance(event, h11.ConnectionClosed):
                raise _Left
            assert isinstance(event, h11.Data)
            size += len(event.data)
            if size > self._max_body:
                return b"", True
            chunks.append(bytes(event.data))

    def _record(self, request: h11.Request, body: bytes, too_large: bool) -> RecordedRequest:
        target = urlsplit(request.target.decode("latin-1"))
        decoded: Any = None
        if body and not too_large:
            try:
                decoded = json.loads(body)
            except (UnicodeDecodeError, json.JSONDecodeError):
                decoded = None
        record = RecordedRequest(
            number=len(self.requests) + 1,
            method=request.method.decode("ascii", "replace"),
            path=target.path,
            query=target.query,
            headers=_redacted(request.headers),
            body=decoded,
            size=len(body),
        )
        self.requests.append(record)
        self._changed()
        return record

    def _decide(self, record: RecordedRequest, too_large: bool) -> _Answer:
        request_id = f"req_forge_{record.number}"
        if too_large:
            record.outcome = "refused"
            message = f"request body over the model server's {self._max_body} bytes"
            return _Answer(413, error_json("request_too_large", message, request_id))
        if record.method == "HEAD":
            record.outcome = "probe"
            return _Answer(200)
        if record.method == "POST" and record.path == "/v1/messages/count_tokens":
            record.outcome = "answered"
            return _Answer(200, count_tokens_json(self.script.count_tokens, record.size))
        if record.method != "POST" or record.path != "/v1/messages":
            record.outcome = "unknown"
            message = f"the model server has no {record.method} {record.path}"
            return _Answer(404, error_json("not_found_error", message, request_id))
        if not isinstance(record.body, dict) or not isinstance(record.body.get("messages"), list):
            record.outcome = "refused"
            message = "the body is not a JSON object with a `messages` list"
            return _Answer(400, error_json("invalid_request_error", message, request_id))
        index = next_turn(self.script, self.played, record.body)
        if index is None:
            record.outcome = "unscripted"
            message = (
                f"forge model server: no scripted turn answers request {record.number} "
                f"({len(self.played)} of {len(self.script.turns)} turns played)"
            )
            return _Answer(400, error_json("invalid_request_error", message, request_id))
        self.played.append(index)
        record.turn = index
        turn = self.script.turns[index]
        if turn.failure is not None:
            record.outcome = "failed"
            failure = turn.failure
            return _Answer(failure.status, error_json(failure.type, failure.message, request_id))
        model = self.script.model or str(record.body.get("model", "claude-forge-scripted"))
        message_id = f"msg_forge_{record.number}"
        if record.body.get("stream") is True:
            return _Answer(200, turn=turn)
        record.outcome = "answered"
        return _Answer(
            200, message_json(turn, turn_index=index, message_id=message_id, model=model)
        )

    async def _send(
        self,
        connection: h11.Connection,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        record: RecordedRequest,
        answer: _Answer,
    ) -> None:
        record.status = answer.status
        headers = [("request-id", f"req_forge_{record.number}")]
        if answer.turn is not None:
            await self._stream(connection, reader, writer, record, answer.turn, headers)
            return
        body = json.dumps(answer.payload).encode() if answer.payload is not None else b""
        headers += [("content-type", "application/json"), ("content-length", str(len(body)))]
        await _write(
            writer, connection.send(h11.Response(status_code=answer.status, headers=headers))
        )
        if body and record.method != "HEAD":
            await _write(writer, connection.send(h11.Data(data=body)))
        await _write(writer, connection.send(h11.EndOfMessage()))
        self._changed()

    async def _stream(
        self,
        connection: h11.Connection,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        record: RecordedRequest,
        turn: Turn,
        headers: list[tuple[str, str]],
    ) -> None:
        assert record.turn is not None
        assert isinstance(record.body, dict)
        events = stream_events(
            turn,
            turn_index=record.turn,
            message_id=f"msg_forge_{record.number}",
            model=self.script.model or str(record.body.get("model", "claude-forge-scripted")),
            chunk=self.script.chunk,
        )
        headers += [("content-type", "text/event-stream"), ("cache-control", "no-cache")]
        try:
            await _write(writer, connection.send(h11.Response(status_code=200, headers=headers)))
            deltas, held = 0, False
            for event in events:
                if turn.drop is not None and _strikes(event, deltas, turn.drop.after):
                    await self._drop(connection, writer, record, event)
                if (
                    turn.stall is not None
                    and not held
                    and _strikes(event, deltas, turn.stall.after)
                ):
                    await self._hold(connection, reader, record, turn)
                    held = True
                await _write(writer, connection.send(h11.Data(data=event.encode())))
                if self._on_sent is not None:
                    self._on_sent(record, event)
                deltas += 1 if event.delta else 0
            await _write(writer, connection.send(h11.EndOfMessage()))
        except (_Left, ConnectionError):
            self._settle(record, "left")
            raise _Left from None
        self._settle(record, "answered")

    async def _drop(
        self,
        connection: h11.Connection,
        writer: asyncio.StreamWriter,
        record: RecordedRequest,
        event: Event,
    ) -> NoReturn:
        """Send half of `event` and close the connection."""
        encoded = event.encode()
        await _write(writer, connection.send(h11.Data(data=encoded[: len(encoded) // 2])))
        self._settle(record, "dropped")
        raise _Dropped

    async def _hold(
        self,
        connection: h11.Connection,
        reader: asyncio.StreamReader,
        record: RecordedRequest,
        turn: Turn,
    ) -> None:
        """Wait, mid-stream, for `release()`, the stall's seconds, or the client to leave."""
        assert turn.stall is not None
        released = asyncio.ensure_future(self._release.wait())
        self._settle(record, "stalled")
        try:
            while True:
                read = asyncio.ensure_future(reader.read(_READ_SIZE))
                done, _ = await asyncio.wait(
                    {released, read},
                    timeout=turn.stall.seconds,
                    return_when=asyncio.FIRST_COMPLETED,
                )
                if read in done:
                    data = read.result()
                    if not data:
                        raise _Left
                    connection.receive_data(data)
                    continue
                await _settle_read(connection, read)
                break
        finally:
            released.cancel()
        self._settle(record, "pending")

    async def _refuse_malformed(
        self,
        connection: h11.Connection,
        writer: asyncio.StreamWriter,
        error: h11.RemoteProtocolError,
    ) -> None:
        """Answer a request h11 cannot parse with 400 (if a response can still start)."""
        if connection.our_state not in (h11.IDLE, h11.SEND_RESPONSE):
            return
        body = json.dumps(
            error_json("invalid_request_error", f"malformed HTTP: {error}", "req_forge_malformed")
        ).encode()
        response = h11.Response(
            status_code=error.error_status_hint,
            headers=[
                ("content-type", "application/json"),
                ("content-length", str(len(body))),
                ("connection", "close"),
            ],
        )
        try:
            await _write(writer, connection.send(response))
            await _write(writer, connection.send(h11.Data(data=body)))
            await _write(writer, connection.send(h11.EndOfMessage()))
        except (ConnectionError, h11.LocalProtocolError):
            pass


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _redacted(headers: Iterable[tuple[bytes, bytes]]) -> dict[str, str]:
    """Header names (lower case) to values, a secret's value replaced by `REDACTED`."""
    recorded: dict[str, str] = {}
    for raw_name, raw_value in headers:
        name = raw_name.decode("latin-1").lower()
        secret = name in _SECRET_HEADERS or any(word in name for word in _SECRET_WORDS)
        value = REDACTED if secret else raw_value.decode("latin-1")
        recorded[name] = f"{recorded[name]}, {value}" if name in recorded else value
    return recorded


def _strikes(event: Event, deltas: int, after: int) -> bool:
    """A fault waits for its count of deltas, then strikes before the next delta (or before
    `message_delta` when the turn has fewer)."""
    return deltas >= after and (event.delta or event.name == "message_delta")


async def _settle_read(connection: h11.Connection, read: asyncio.Future[bytes]) -> None:
    """Cancel a pending read and wait until it is over (the stream allows one reader at a time,
    and the connection's next request reads it); bytes it got before the cancel reach h11."""
    read.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        connection.receive_data(await read)


async def _next_event(connection: h11.Connection, reader: asyncio.StreamReader) -> Any:
    """h11's next event, reading from the client as it needs."""
    while True:
        event = connection.next_event()
        if event is not h11.NEED_DATA:
            return event
        connection.receive_data(await reader.read(_READ_SIZE))


async def _write(writer: asyncio.StreamWriter, data: bytes | None) -> None:
    if data:
        writer.write(data)
        await writer.drain()


def main(argv: Sequence[str] | None = None) -> int:
    """Serve a script from a shell until Ctrl-C (a recipe tried by hand against its model)."""
    parser = argparse.ArgumentParser(
        prog="python -m forge.testing.model_server",
        description="Serve a scripted stand-in for Anthropic's Messages API on loopback.",
    )
    parser.add_argument("--script", type=Path, required=True, help="the script (YAML or .json)")
    parser.add_argument("--port", type=int, default=0, help="the TCP port (default: any free)")
    parser.add_argument("--unix", type=Path, help="also listen on this Unix socket")
    args = parser.parse_args(argv)
    try:
        script = load_script(args.script)
        asyncio.run(_serve(script, args.port, args.unix))
    except ScriptError as error:
        print(error, file=sys.stderr)
        return 2
    except OSError as error:
        print(f"the model server cannot listen: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        pass
    return 0


async def _serve(script: Script, port: int, unix: Path | None) -> None:
    async with ModelServer(script, port=port, unix_path=unix) as server:
        where = f" and {unix}" if unix is not None else ""
        print(f"serving {len(script.turns)} turn(s) at {server.url}{where}", flush=True)
        for shown in itertools.count():
            await server.wait_for(functools.partial(_answered, server, shown))
            request = server.requests[shown]
            turn = "" if request.turn is None else f" turn {request.turn}"
            print(f"{request.method} {request.path}: {request.outcome}{turn}", flush=True)


def _answered(server: ModelServer, number: int) -> bool:
    """Whether the request of this index has come and its answer is decided."""
    return number < len(server.requests) and server.requests[number].outcome != "pending"


if __name__ == "__main__":
    sys.exit(main())
