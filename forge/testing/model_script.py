"""A scripted model's turns, read from a YAML or JSON file: what the model server says to whom.

A script is a list of turns; each request to `/v1/messages` is answered by the first turn not yet
played whose `when` the request meets (a turn without `when` meets any request):

    chunk: 8                          # characters of text or thinking per delta (default 16)
    model: claude-scripted            # the model replies name (default: the request's model)
    count_tokens: 500                 # what count_tokens answers (default: size / 4)
    turns:
      - say: Hello.                   # one text block
        usage: {input_tokens: 120, output_tokens: 7}
      - bash: echo hi > f.txt         # a Bash tool call (or {command: ..., description: ...})
      - when: {tool_result: Bash}     # the request whose newest user message answers a Bash call
        say: It ran.
      - when: {system_text: naming a coding session}   # a side request (the CLI's title)
        say: A title
      - content:                      # several blocks, in order
          - think: Let me look.
          - edit: {file_path: /abs/f.txt, old_string: hi, new_string: bye}
      - ask: {question: Which colour?, header: Colour, options: [Red, Blue]}
      - fail: overloaded              # HTTP 529 overloaded_error; or {status: 500, message: ...}
      - say: A long answer.
        stall: {after: 2}             # hold the stream after 2 deltas (until released or left)
      - say: Cut short.
        drop: {after: 1}              # close the connection mid-event after 1 delta

The block shorthands are `say` (text), `think` (thinking), `bash`, `edit`, `write`, `ask`
(AskUserQuestion, one question or a list of up to four) and `tool` ({name, input}: any tool).
`when` conditions: `tool_result` (a tool's name; with `tool_error: true/false`), `user_text` and
`system_text` (substrings of the newest user messages' text, of the system prompt). Parsing is
pure; `load_script` reads a file, `parse_script` takes the decoded document.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import msgspec
import yaml

from forge.errors import UserError


class ScriptError(UserError):
    """A model script is malformed; the message names the file, the turn and what was wrong."""


@dataclass(frozen=True)
class Text:
    """A text block, streamed as `text_delta`s."""

    text: str


@dataclass(frozen=True)
class Thinking:
    """A thinking block, streamed as `thinking_delta`s and a `signature_delta`."""

    thinking: str


@dataclass(frozen=True)
class ToolUse:
    """A tool call, its input streamed as `input_json_delta`s."""

    name: str
    input: dict[str, Any]


Block = Text | Thinking | ToolUse


class When(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Which request a turn answers; every condition given must hold, none given matches any."""

    tool_result: str | None = None
    tool_error: bool | None = None
    user_text: str | None = None
    system_text: str | None = None


class Usage(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The token counts a turn reports: the input side in `message_start`, all of them in
    `message_delta`."""

    input_tokens: int = 10
    output_tokens: int = 5
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0


@dataclass(frozen=True)
class HttpFailure:
    """Answer the request with an HTTP error in the API's shape instead of a message."""

    status: int
    type: str
    message: str


class Drop(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Close the connection in the middle of an event after `after` content deltas."""

    after: int


class Stall(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Hold the stream after `after` content deltas until released, the client leaves, or
    `seconds` pass (None: no time limit)."""

    after: int
    seconds: float | None = None


@dataclass(frozen=True)
class Turn:
    """One answer: content blocks (or a failure), the usage to report, and which request."""

    blocks: tuple[Block, ...]
    when: When = field(default_factory=When)
    usage: Usage = field(default_factory=Usage)
    stop_reason: str = "end_turn"
    failure: HttpFailure | None = None
    drop: Drop | None = None
    stall: Stall | None = None


@dataclass(frozen=True)
class Script:
    """The turns in order, the text chunk size, and what count_tokens answers (None: an
    estimate from the request's size)."""

    turns: tuple[Turn, ...]
    chunk: int = 16
    count_tokens: int | None = None
    model: str | None = None


ERROR_TYPES: Mapping[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


class _Question(msgspec.Struct, forbid_unknown_fields=True):
    question: str
    options: list[str | dict[str, str]]
    header: str = "Question"
    multi_select: bool = False


class _Tool(msgspec.Struct, forbid_unknown_fields=True):
    name: str
    input: dict[str, Any] = msgspec.field(default_factory=dict)


class _Blocks(msgspec.Struct, forbid_unknown_fields=True):
    say: str | None = None
    think: str | None = None
    bash: str | dict[str, Any] | None = None
    edit: dict[str, Any] | None = None
    write: dict[str, Any] | None = None
    ask: _Question | list[_Question] | None = None
    tool: _Tool | None = None


class _Failure(msgspec.Struct, forbid_unknown_fields=True):
    status: int
    type: str | None = None
    message: str | None = None


class _Turn(_Blocks, forbid_unknown_fields=True):
    when: When | None = None
    content: list[_Blocks] | None = None
    usage: Usage | None = None
    stop_reason: str | None = None
    fail: Literal["overloaded"] | _Failure | None = None
    drop: Drop | None = None
    stall: Stall | None = None


class _Script(msgspec.Struct, forbid_unknown_fields=True):
    turns: list[_Turn]
    chunk: int = 16
    count_tokens: int | None = None
    model: str | None = None


def load_script(path: Path) -> Script:
    """The script in `path` (`.json` is read as JSON, anything else as YAML)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ScriptError(f"model script {path}: cannot read it ({error.strerror})") from error
    try:
        document = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as error:
        raise ScriptError(
            f"model script {path}: not valid {path.suffix or 'YAML'}: {error}"
        ) from None
    return parse_script(document, source=str(path))


def parse_script(document: Any, *, source: str = "model script") -> Script:
    """The script a decoded YAML/JSON document describes; a `ScriptError` names what is wrong."""
    try:
        raw = msgspec.convert(document, _Script)
    except msgspec.ValidationError as error:
        raise ScriptError(f"{source}: {error}") from None
    if raw.chunk < 1:
        raise ScriptError(f"{source}: chunk must be at least 1, not {raw.chunk}")
    turns = tuple(_turn(turn, f"{source}: turns[{index}]") for index, turn in enumerate(raw.turns))
    return Script(turns=turns, chunk=raw.chunk, count_tokens=raw.count_tokens, model=raw.model)


def _turn(raw: _Turn, where: str) -> Turn:
    own = _blocks_of(raw, where, allow_none=True)
    if own and raw.content is not None:
        raise ScriptError(f"{where}: give either `content` or a block shorthand, not both")
    blocks = (
        tuple(
            block
            for index, entry in enumerate(raw.content)
            for block in _blocks_of(entry, f"{where}.content[{index}]", allow_none=False)
        )
        if raw.content is not None
        else own
    )
    failure = _failure(raw.fail, where) if raw.fail is not None else None
    if failure is not None and blocks:
        raise ScriptError(f"{where}: a turn that fails has no content")
    if failure is None and not blocks:
        raise ScriptError(f"{where}: a turn needs content (say, think, bash, ...) or `fail`")
    if failure is not None and (raw.drop or raw.stall):
        raise ScriptError(
            f"{where}: a turn that fails with an HTTP error has no stream to drop or stall"
        )
    when = raw.when or When()
    if when.tool_error is not None and when.tool_result is None:
        raise ScriptError(f"{where}: when.tool_error needs when.tool_result (which tool's result)")
    calls = any(isinstance(block, ToolUse) for block in blocks)
    return Turn(
        blocks=blocks,
        when=when,
        usage=raw.usage or Usage(),
        stop_reason=raw.stop_reason or ("tool_use" if calls else "end_turn"),
        failure=failure,
        drop=raw.drop,
        stall=raw.stall,
    )


def _blocks_of(raw: _Blocks, where: str, *, allow_none: bool) -> tuple[Block, ...]:
    """The block of the one shorthand set on `raw` (an `ask` of several questions is one call)."""
    given = [name for name in _Blocks.__struct_fields__ if getattr(raw, name) is not None]
    if len(given) > 1:
        raise ScriptError(f"{where}: one block per entry, found {', '.join(given)} (use `content`)")
    if not given:
        if allow_none:
            return ()
        raise ScriptError(f"{where}: an entry needs one of {', '.join(_Blocks.__struct_fields__)}")
    name = given[0]
    value = getattr(raw, name)
    if name == "say":
        return (Text(value),)
    if name == "think":
        return (Thinking(value),)
    if name == "bash":
        command = {"command": value} if isinstance(value, str) else dict(value)
        if not isinstance(command.get("command"), str):
            raise ScriptError(f"{where}.bash: needs a `command` string")
        return (ToolUse("Bash", command),)
    if name in ("edit", "write"):
        return (ToolUse(name.capitalize(), dict(value)),)
    if name == "ask":
        questions = value if isinstance(value, list) else [value]
        return (ToolUse("AskUserQuestion", {"questions": _questions(questions, f"{where}.ask")}),)
    return (ToolUse(value.name, dict(value.input)),)


def _questions(questions: Sequence[_Question], where: str) -> list[dict[str, Any]]:
    """AskUserQuestion's `questions`: options as {label, description}, `multiSelect` spelled so."""
    if not 1 <= len(questions) <= 4:
        raise ScriptError(f"{where}: AskUserQuestion takes 1 to 4 questions, not {len(questions)}")
    shaped = []
    for index, question in enumerate(questions):
        options = [
            {"label": option} if isinstance(option, str) else option for option in question.options
        ]
        if not all(isinstance(option.get("label"), str) for option in options):
            raise ScriptError(f"{where}[{index}]: each option needs a `label`")
        shaped.append(
            {
                "question": question.question,
                "header": question.header,
                "options": [{"description": o["label"], **o} for o in options],
                "multiSelect": question.multi_select,
            }
        )
    return shaped


def _failure(raw: Literal["overloaded"] | _Failure, where: str) -> HttpFailure:
    if raw == "overloaded":
        return HttpFailure(529, ERROR_TYPES[529], "Overloaded")
    assert isinstance(raw, _Failure)
    if not 400 <= raw.status <= 599:
        raise ScriptError(f"{where}.fail: status must be an HTTP error (400-599), not {raw.status}")
    kind = raw.type or ERROR_TYPES.get(raw.status, "api_error")
    return HttpFailure(raw.status, kind, raw.message or f"scripted {kind}")
