"""The scripted model server over real sockets, with an HTTP/1.1 client of the test's own (h11):
scripts, the Messages API's shapes, turn matching, faults, recording and the server's walls."""

from __future__ import annotations

import asyncio
import json
import signal
import stat
import subprocess
import sys
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import h11
import pytest

from forge.testing.model_conversation import tool_results, user_text
from forge.testing.model_replies import THINKING_SIGNATURE
from forge.testing.model_script import (
    HttpFailure,
    Script,
    ScriptError,
    Text,
    Thinking,
    ToolUse,
    load_script,
    parse_script,
)
from forge.testing.model_server import REDACTED, ModelServer, NotLoopback


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes
    complete: bool

    def json(self) -> Any:
        return json.loads(self.body)

    def events(self) -> list[tuple[str, dict[str, Any]]]:
        """The server-sent events in the body, as (name, data)."""
        found = []
        for chunk in self.body.decode().split("\n\n"):
            fields = dict(line.split(": ", 1) for line in chunk.splitlines() if ": " in line)
            if "event" in fields and "data" in fields:
                found.append((fields["event"], json.loads(fields["data"])))
        return found


class Client:
    """One keep-alive HTTP/1.1 connection to the server."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.connection = h11.Connection(h11.CLIENT)

    @classmethod
    async def to(cls, server: ModelServer, unix_path: Path | None = None) -> Client:
        if unix_path is not None:
            return cls(*await asyncio.open_unix_connection(str(unix_path)))
        host, port = server.url.removeprefix("http://").rsplit(":", 1)
        return cls(*await asyncio.open_connection(host, int(port)))

    async def send_head(self, method: str, target: str, headers: list[tuple[str, str]]) -> None:
        request = h11.Request(method=method, target=target, headers=[("host", "model"), *headers])
        self.writer.write(self.connection.send(request) or b"")

    async def request(
        self,
        method: str,
        target: str,
        body: Any = None,
        headers: list[tuple[str, str]] | None = None,
    ) -> Reply:
        data = json.dumps(body).encode() if body is not None else b""
        extra = [("content-type", "application/json")] if body is not None else []
        await self.send_head(
            method, target, [("content-length", str(len(data))), *extra, *(headers or [])]
        )
        self.writer.write(self.connection.send(h11.Data(data=data)) or b"")
        self.writer.write(self.connection.send(h11.EndOfMessage()) or b"")
        await self.writer.drain()
        return await self.reply()

    async def reply(self) -> Reply:
        status, headers, chunks = 0, {}, []
        while True:
            event = self.connection.next_event()
            if event is h11.NEED_DATA:
                data = await self.reader.read(65536)
                try:
                    self.connection.receive_data(data)
                except h11.RemoteProtocolError:
                    return Reply(status, headers, b"".join(chunks), complete=False)
                if not data and self.connection.their_state is h11.SEND_BODY:
                    return Reply(status, headers, b"".join(chunks), complete=False)
                continue
            if isinstance(event, h11.Response):
                status = event.status_code
                headers = {k.decode(): v.decode() for k, v in event.headers}
            elif isinstance(event, h11.Data):
                chunks.append(bytes(event.data))
            elif isinstance(event, h11.EndOfMessage):
                if self.connection.our_state is h11.DONE:
                    self.connection.start_next_cycle()
                return Reply(status, headers, b"".join(chunks), complete=True)
            elif isinstance(event, h11.ConnectionClosed):
                return Reply(status, headers, b"".join(chunks), complete=False)

    async def close(self) -> None:
        self.writer.close()
        await self.writer.wait_closed()


def script(*turns: dict[str, Any], **more: Any) -> Script:
    return parse_script({"turns": list(turns), **more})


def ask(text: str, *, stream: bool = True, messages: list[Any] | None = None) -> dict[str, Any]:
    conversation = messages or [{"role": "user", "content": [{"type": "text", "text": text}]}]
    return {"model": "claude-test", "max_tokens": 100, "stream": stream, "messages": conversation}


async def one(server: ModelServer, method: str, target: str, body: Any = None, **kw: Any) -> Reply:
    client = await Client.to(server)
    try:
        return await client.request(method, target, body, **kw)
    finally:
        await client.close()


# The script


def test_shorthands_become_blocks_and_a_tool_call_stops_for_its_result() -> None:
    played = script(
        {"say": "Hi."},
        {"content": [{"think": "Hmm."}, {"bash": "ls -l"}]},
        {"edit": {"file_path": "/w/f", "old_string": "a", "new_string": "b"}},
        {"ask": {"question": "Which?", "options": ["A", {"label": "B", "description": "bee"}]}},
        {"tool": {"name": "Read", "input": {"file_path": "/w/f"}}},
        {"fail": "overloaded"},
    )
    hi, bash, edit, question, read, overloaded = played.turns
    assert (hi.blocks, hi.stop_reason) == ((Text("Hi."),), "end_turn")
    assert bash.blocks == (Thinking("Hmm."), ToolUse("Bash", {"command": "ls -l"}))
    assert bash.stop_reason == "tool_use"
    assert edit.blocks == (
        ToolUse("Edit", {"file_path": "/w/f", "old_string": "a", "new_string": "b"}),
    )
    assert question.blocks == (
        ToolUse(
            "AskUserQuestion",
            {
                "questions": [
                    {
                        "question": "Which?",
                        "header": "Question",
                        "options": [
                            {"label": "A", "description": "A"},
                            {"label": "B", "description": "bee"},
                        ],
                        "multiSelect": False,
                    }
                ]
            },
        ),
    )
    assert read.blocks == (ToolUse("Read", {"file_path": "/w/f"}),)
    assert overloaded.failure == HttpFailure(529, "overloaded_error", "Overloaded")


@pytest.mark.parametrize(
    ("document", "named"),
    [
        ({"turns": [{"sya": "typo"}]}, "sya"),
        ({"turns": [{"say": "a", "bash": "b"}]}, "turns[0]: one block per entry, found say, bash"),
        ({"turns": [{}]}, "turns[0]: a turn needs content"),
        (
            {"turns": [{"say": "a", "fail": "overloaded"}]},
            "turns[0]: a turn that fails has no content",
        ),
        ({"turns": [{"fail": {"status": 200}}]}, "turns[0].fail: status must be an HTTP error"),
        ({"turns": [{"say": "a", "content": [{"say": "b"}]}]}, "either `content` or a block"),
        ({"turns": [{"content": [{}]}]}, "turns[0].content[0]: an entry needs one of"),
        ({"turns": [{"say": "a", "when": {"tool_error": True}}]}, "when.tool_error needs"),
        ({"turns": [{"ask": [{"question": "q", "options": ["a"]}] * 5}]}, "1 to 4 questions"),
        ({"turns": [{"bash": {"description": "no command"}}]}, "turns[0].bash: needs a `command`"),
        ({"turns": [{"fail": "overloaded", "drop": {"after": 1}}]}, "no stream to drop"),
        ({"turns": [], "chunk": 0}, "chunk must be at least 1"),
        ({"turns": "say hi"}, "Expected `array`"),
    ],
)
def test_a_malformed_script_is_refused_naming_where(document: Any, named: str) -> None:
    with pytest.raises(ScriptError, match="my script") as refused:
        parse_script(document, source="my script")
    assert named in str(refused.value)


def test_scripts_load_from_yaml_and_json_files(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text("turns:\n  - say: From YAML.\n    usage: {output_tokens: 9}\n")
    (tmp_path / "s.json").write_text(json.dumps({"turns": [{"say": "From JSON."}]}))
    (tmp_path / "bad.yaml").write_text("turns: [\n")
    assert load_script(tmp_path / "s.yaml").turns[0].usage.output_tokens == 9
    assert load_script(tmp_path / "s.json").turns[0].blocks == (Text("From JSON."),)
    with pytest.raises(ScriptError, match=r"bad\.yaml: not valid"):
        load_script(tmp_path / "bad.yaml")
    with pytest.raises(ScriptError, match=r"absent\.yaml: cannot read it"):
        load_script(tmp_path / "absent.yaml")


# The Messages API's shapes


async def test_a_turn_streams_as_the_messages_api_does() -> None:
    usage = {"input_tokens": 321, "output_tokens": 45, "cache_read_input_tokens": 6}
    turn = {
        "content": [{"think": "Let me see."}, {"say": "Running it now."}, {"bash": "echo hi"}],
        "usage": usage,
    }
    async with ModelServer(script(turn, chunk=5)) as server:
        reply = await one(server, "POST", "/v1/messages?beta=true", ask("hello"))
    assert (reply.status, reply.complete) == (200, True)
    assert reply.headers["content-type"] == "text/event-stream"
    events = reply.events()
    names = [name for name, _ in events]
    assert names[0] == "message_start"
    assert names[-2:] == ["message_delta", "message_stop"]
    start = events[0][1]["message"]
    assert (start["model"], start["usage"]["input_tokens"]) == ("claude-test", 321)
    assert start["usage"]["cache_read_input_tokens"] == 6
    blocks: dict[int, dict[str, Any]] = {}
    for name, data in events:
        if name == "content_block_start":
            blocks[data["index"]] = {**data["content_block"], "json": ""}
        elif name == "content_block_delta":
            block, delta = blocks[data["index"]], data["delta"]
            kind = delta["type"]
            if kind == "text_delta":
                block["text"] += delta["text"]
            elif kind == "thinking_delta":
                block["thinking"] += delta["thinking"]
            elif kind == "signature_delta":
                block["signature"] = delta["signature"]
            else:
                assert kind == "input_json_delta"
                block["json"] += delta["partial_json"]
    assert blocks[0]["thinking"] == "Let me see."
    assert blocks[0]["signature"] == THINKING_SIGNATURE
    assert blocks[1]["text"] == "Running it now."
    assert (blocks[2]["name"], blocks[2]["id"]) == ("Bash", "toolu_forge_0_2")
    assert json.loads(blocks[2]["json"]) == {"command": "echo hi"}
    assert names.count("content_block_delta") > 6, "chunk 5 cuts the text into several deltas"
    end = events[-2][1]
    assert end["delta"]["stop_reason"] == "tool_use"
    assert end["usage"] == {**usage, "cache_creation_input_tokens": 0}


async def test_a_request_that_does_not_stream_gets_one_message_and_count_tokens_its_number() -> (
    None
):
    async with ModelServer(script({"say": "Whole."}, count_tokens=77)) as server:
        reply = await one(server, "POST", "/v1/messages", ask("hi", stream=False))
        counted = await one(server, "POST", "/v1/messages/count_tokens", ask("hi"))
    message = reply.json()
    assert message["content"] == [{"type": "text", "text": "Whole."}]
    assert (message["stop_reason"], message["usage"]["output_tokens"]) == ("end_turn", 5)
    assert counted.json() == {"input_tokens": 77}
    assert [r.outcome for r in server.requests] == ["answered", "answered"]


async def test_probes_and_unknown_paths_are_answered_and_recorded() -> None:
    async with ModelServer(script({"say": "x"})) as server:
        client = await Client.to(server)
        probe = await client.request("HEAD", "/api/hello")
        unknown = await client.request("GET", "/v1/models")
        await client.close()
    assert (probe.status, probe.body) == (200, b"")
    assert unknown.status == 404
    assert unknown.json()["error"]["type"] == "not_found_error"
    assert [(r.method, r.path, r.outcome) for r in server.requests] == [
        ("HEAD", "/api/hello", "probe"),
        ("GET", "/v1/models", "unknown"),
    ]
    assert server.unplayed() == [0]


# Matching turns to requests


def conversation_after(tool: str, *, is_error: bool) -> list[dict[str, Any]]:
    """A conversation whose newest user message answers a call of `tool`, then a system note."""
    call = {"type": "tool_use", "id": "toolu_1", "name": tool, "input": {}}
    result = {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "content": "out",
        "is_error": is_error,
    }
    return [
        {"role": "user", "content": "Do it."},
        {"role": "assistant", "content": [call]},
        {"role": "user", "content": [result]},
        {"role": "system", "content": "A note from the CLI."},
    ]


async def test_each_request_gets_the_first_unplayed_turn_whose_when_it_meets() -> None:
    played = script(
        {"when": {"tool_result": "Bash", "tool_error": True}, "say": "It failed."},
        {"when": {"tool_result": "Bash"}, "say": "It ran."},
        {"when": {"user_text": "title please"}, "say": "A title."},
        {"say": "Anything."},
    )
    async with ModelServer(played) as server:
        ran = await one(
            server,
            "POST",
            "/v1/messages",
            ask("", stream=False, messages=conversation_after("Bash", is_error=False)),
        )
        anything = await one(server, "POST", "/v1/messages", ask("hello", stream=False))
        title = await one(server, "POST", "/v1/messages", ask("a title please", stream=False))
        failed = await one(
            server,
            "POST",
            "/v1/messages",
            ask("", stream=False, messages=conversation_after("Bash", is_error=True)),
        )
        unscripted = await one(server, "POST", "/v1/messages", ask("more?", stream=False))
    said = [reply.json()["content"][0]["text"] for reply in (ran, anything, title, failed)]
    assert said == ["It ran.", "Anything.", "A title.", "It failed."]
    assert server.played == [1, 3, 2, 0]
    assert unscripted.status == 400
    assert (
        "no scripted turn answers request 5 (4 of 4 turns played)"
        in unscripted.json()["error"]["message"]
    )
    assert [r.turn for r in server.requests] == [1, 3, 2, 0, None]
    assert server.requests[-1].outcome == "unscripted"
    [result] = tool_results(server.requests[0].body)
    assert (result.tool_name, result.is_error, result.text) == ("Bash", False, "out")
    assert user_text(server.requests[2].body) == "a title please"


# Faults


async def test_a_scripted_failure_is_an_api_error_with_its_status() -> None:
    played = script({"fail": "overloaded"}, {"fail": {"status": 429, "message": "slow down"}})
    async with ModelServer(played) as server:
        overloaded = await one(server, "POST", "/v1/messages", ask("a"))
        limited = await one(server, "POST", "/v1/messages", ask("b"))
    assert overloaded.status == 529
    assert overloaded.json()["error"] == {"type": "overloaded_error", "message": "Overloaded"}
    assert limited.status == 429
    assert limited.json()["error"] == {"type": "rate_limit_error", "message": "slow down"}
    assert [r.outcome for r in server.requests] == ["failed", "failed"]


async def test_a_dropped_stream_ends_mid_event_without_its_end() -> None:
    async with ModelServer(script({"say": "abcdefghij", "drop": {"after": 1}}, chunk=2)) as server:
        reply = await one(server, "POST", "/v1/messages", ask("a"))
    assert (reply.status, reply.complete) == (200, False)
    text = reply.body.decode()
    assert text.count("event: content_block_delta") == 2, "one whole delta and half of the next"
    assert not text.endswith("\n\n")
    assert "message_stop" not in text
    assert server.requests[0].outcome == "dropped"


async def test_a_stalled_stream_goes_on_when_released() -> None:
    async with ModelServer(script({"say": "abcdefgh", "stall": {"after": 2}}, chunk=2)) as server:
        client = await Client.to(server)
        replying = asyncio.create_task(client.request("POST", "/v1/messages", ask("a")))
        held = await server.wait_stalled()
        assert not replying.done()
        server.release()
        reply = await replying
        await client.close()
    assert reply.complete
    texts = [d["delta"]["text"] for n, d in reply.events() if n == "content_block_delta"]
    assert texts == ["ab", "cd", "ef", "gh"]
    assert held.outcome == "answered"


async def test_a_released_streams_connection_serves_the_next_request_and_each_event_is_told() -> (
    None
):
    told: list[tuple[int, str]] = []
    turns = script({"say": "abcd", "stall": {"after": 0}}, {"say": "next"}, chunk=2)
    on_sent = lambda request, event: told.append((request.number, event.name))  # noqa: E731
    async with ModelServer(turns, on_sent=on_sent) as server:
        client = await Client.to(server)
        replying = asyncio.create_task(client.request("POST", "/v1/messages", ask("a")))
        await server.wait_stalled()
        assert "content_block_delta" not in [name for _, name in told], "held before the delta"
        server.release()
        first = await replying
        second = await client.request("POST", "/v1/messages", ask("b"))
        await client.close()
    assert (first.complete, second.complete) == (True, True)
    assert [r.outcome for r in server.requests] == ["answered", "answered"]
    assert told == [(1, name) for name, _ in first.events()] + [
        (2, name) for name, _ in second.events()
    ]


async def test_a_client_leaving_a_stalled_stream_is_recorded() -> None:
    async with ModelServer(script({"say": "abcdefgh", "stall": {"after": 1}})) as server:
        client = await Client.to(server)
        replying = asyncio.create_task(client.request("POST", "/v1/messages", ask("a")))
        held = await server.wait_stalled()
        replying.cancel()
        await client.close()
        await server.wait_for(lambda: held.outcome != "stalled")
    assert held.outcome == "left"


async def test_a_timed_stall_goes_on_by_itself() -> None:
    stalled = {"say": "abcd", "stall": {"after": 1, "seconds": 0}}
    async with ModelServer(script(stalled, chunk=2)) as server:
        reply = await one(server, "POST", "/v1/messages", ask("a"))
    assert reply.complete
    assert [d["delta"]["text"] for n, d in reply.events() if n == "content_block_delta"] == [
        "ab",
        "cd",
    ]


# Recording, and the server's walls


async def test_requests_are_recorded_with_secrets_redacted_and_keep_alive_works() -> None:
    secrets = [
        ("x-api-key", "sk-ant-secret-1"),
        ("authorization", "Bearer secret-2"),
        ("x-goog-api-key", "secret-3"),
        ("anthropic-session-token", "secret-4"),
        ("cookie", "session=secret-5"),
    ]
    async with ModelServer(script({"say": "one"}, {"say": "two"})) as server:
        client = await Client.to(server)
        first = await client.request(
            "POST", "/v1/messages?beta=true", ask("a"), headers=[*secrets, ("x-app", "cli")]
        )
        second = await client.request("POST", "/v1/messages", ask("b"), headers=secrets)
        await client.close()
    assert (first.complete, second.complete) == (True, True)
    recorded = server.requests[0]
    assert (recorded.method, recorded.path, recorded.query) == ("POST", "/v1/messages", "beta=true")
    assert recorded.headers["x-app"] == "cli"
    assert recorded.body == ask("a")
    for name, _ in secrets:
        assert recorded.headers[name] == REDACTED
    assert "secret" not in repr(server.requests)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.10", "example.com"])
def test_the_server_refuses_to_listen_beyond_loopback(host: str) -> None:
    with pytest.raises(NotLoopback, match="loopback only"):
        ModelServer(script({"say": "x"}), host=host)


async def test_the_server_listens_on_loopback_and_an_owner_only_unix_socket(tmp_path: Path) -> None:
    socket_path = tmp_path / "model.sock"
    async with ModelServer(script({"say": "Over the socket."}), unix_path=socket_path) as server:
        assert server.url.startswith("http://127.0.0.1:")
        assert stat.S_IMODE(socket_path.stat().st_mode) == 0o600
        client = await Client.to(server, unix_path=socket_path)
        reply = await client.request("POST", "/v1/messages", ask("a", stream=False))
        await client.close()
    assert reply.json()["content"][0]["text"] == "Over the socket."
    assert not socket_path.exists()


async def test_an_oversized_body_is_refused_unread_and_the_connection_closed() -> None:
    async with ModelServer(script({"say": "x"}), max_body=1000) as server:
        client = await Client.to(server)
        reply = await client.request("POST", "/v1/messages", ask("y" * 2000))
        assert reply.status == 413
        assert await client.reader.read() == b"", "the server closed the connection"
        await client.close()
    assert reply.json()["error"]["type"] == "request_too_large"
    assert (server.requests[0].outcome, server.requests[0].body) == ("refused", None)
    assert server.unplayed() == [0]


async def test_a_chunked_body_over_the_limit_is_refused_too() -> None:
    async with ModelServer(script({"say": "x"}), max_body=1000) as server:
        client = await Client.to(server)
        await client.send_head("POST", "/v1/messages", [("transfer-encoding", "chunked")])
        for _ in range(3):
            client.writer.write(client.connection.send(h11.Data(data=b"z" * 600)) or b"")
        await client.writer.drain()
        reply = await client.reply()
        await client.close()
    assert reply.status == 413
    assert server.requests[0].size == 0


async def test_malformed_http_gets_400_and_a_closed_connection() -> None:
    async with ModelServer(script({"say": "x"})) as server:
        host, port = server.url.removeprefix("http://").rsplit(":", 1)
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(b"NOT HTTP AT ALL\r\n\r\n")
        answer = await reader.read()
        writer.close()
    assert answer.startswith(b"HTTP/1.1 400 ")
    assert server.requests == []


async def test_a_body_that_is_not_a_conversation_is_refused() -> None:
    async with ModelServer(script({"say": "x"})) as server:
        reply = await one(server, "POST", "/v1/messages", {"model": "m"})
    assert reply.status == 400
    assert "`messages` list" in reply.json()["error"]["message"]
    assert server.unplayed() == [0]


# From a shell


def test_the_module_serves_a_script_from_a_shell_until_interrupted(tmp_path: Path) -> None:
    """`python -m forge.testing.model_server --script FILE`: it prints its URL, answers there,
    prints each answered request, and ends cleanly on Ctrl-C (SIGINT)."""
    file = tmp_path / "script.yaml"
    file.write_text("turns:\n  - say: From the shell.\n")
    command = [sys.executable, "-m", "forge.testing.model_server", "--script", str(file)]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as server:
        assert server.stdout is not None
        first = server.stdout.readline()
        url = first.rsplit(" ", 1)[-1].strip()
        assert first.startswith("serving 1 turn(s) at http://127.0.0.1:"), first
        request = urllib.request.Request(
            f"{url}/v1/messages",
            data=json.dumps(ask("hi", stream=False)).encode(),
            headers={"content-type": "application/json"},
        )
        direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with direct.open(request, timeout=60) as reply:
            message = json.load(reply)
        assert message["content"] == [{"type": "text", "text": "From the shell."}]
        assert server.stdout.readline() == "POST /v1/messages: answered turn 0\n"
        server.send_signal(signal.SIGINT)
        assert server.wait(timeout=60) == 0


def test_the_module_names_a_bad_script(tmp_path: Path) -> None:
    file = tmp_path / "script.yaml"
    file.write_text("turns: 3\n")
    command = [sys.executable, "-m", "forge.testing.model_server", "--script", str(file)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert f"{file}: Expected `array`, got `int` - at `$.turns`" in done.stderr, done.stderr
