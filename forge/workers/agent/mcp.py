"""forge's own in-process MCP server for the CLI, `forge`, with one tool: `voice__say`.

The model calls `mcp__forge__voice__say` with `{text}`; the line (cleaned and cut by
`voice.spoken_line`) goes to the supervisor as a `Say` event when someone listens, and the tool
answers at once with how many heard it (`voice.answer`): the turn never waits on playback. The
tool is forge's, so the session allows it outright (`ALLOWED`) rather than raising an ask.
Imported only once `locate.require_sdk` has found the SDK.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from claude_agent_sdk import McpSdkServerConfig, create_sdk_mcp_server, tool

from forge.ipc.protocol import WorkerEvent
from forge.workers.agent.protocol import Say
from forge.workers.agent.voice import (
    DESCRIPTION,
    QUALIFIED_NAME,
    SERVER_NAME,
    TOOL_NAME,
    Room,
    answer,
    spoken_line,
)

ALLOWED = [QUALIFIED_NAME]
"""The session's `allowed_tools`: forge's own tools run without a permission ask."""

SCHEMA = {
    "type": "object",
    "properties": {"text": {"type": "string", "description": "The words to speak."}},
    "required": ["text"],
}


class VoiceTool:
    """`voice__say` for one session: who listens (set by `Listeners`) and where a line goes."""

    def __init__(self, emit: Callable[[WorkerEvent], Awaitable[None]]) -> None:
        self.room = Room()
        self._emit = emit

    def server(self) -> McpSdkServerConfig:
        say = tool(TOOL_NAME, DESCRIPTION, SCHEMA)(self.say)
        return create_sdk_mcp_server(SERVER_NAME, tools=[say])

    async def say(self, args: dict[str, Any]) -> dict[str, Any]:
        text = args.get("text")
        if not isinstance(text, str):
            return _reply("text is a string: the words to speak", error=True)
        line = spoken_line(text)
        words, spoken = answer(self.room, line)
        if spoken:
            await self._emit(Say(text=line.text))
        return _reply(words, error=not line.text)


def _reply(text: str, *, error: bool) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "is_error": error}
