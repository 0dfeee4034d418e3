"""The agent atom (`kind: claude-code`): a Formula atom that is a coding-agent configuration.

forge, not the recipe's author, writes the command: the real Claude Code CLI run headless
(`-p`, the prompt on stdin, `--output-format stream-json --verbose`) with the atom's model,
system prompt, tools, permission mode, turn limit and cost budget as flags. Its stream is the
attempt's transcript and its `result` message is the harness report (cost as reported by the
CLI). Everything here is pure: decoding the atom, the argv and prompt, and `StreamMeter`, which
reads the stream as it arrives so a token budget cuts a run off mid-turn.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from forge.attempt.egress.policy import BadDestination, destination
from forge.attempt.fields import Reader
from forge.attempt.harness import HarnessReport
from forge.attempt.plan import Issue

KIND = "claude-code"
DEFAULT_BASE_URL = "https://api.anthropic.com"
DEFAULT_PASS_ENV = ("ANTHROPIC_API_KEY",)
"""The credential the CLI reads, from the caller's environment into the CLI's only."""
PERMISSION_MODES = ("acceptEdits", "bypassPermissions", "default", "dontAsk", "plan")
MAX_TURNS_LIMIT = 1000
MAX_PROMPT_CHARS = 100_000
AGENT_OUTPUT_CAP = 16 << 20
"""The CLI's stream (the transcript) kept per run; past it the run is killed as a flood."""
QUIET_CLI_ENV: dict[str, str] = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_AUTOUPDATER": "1",
}
"""What keeps the CLI to its model's API (no feature flags, telemetry, error reports or update
checks), so its only destination is the one the egress list admits."""
BUDGET_OUTCOME = "budget-exceeded"


@dataclass(frozen=True)
class Budget:
    """An attempt's spending bounds, judged on what the CLI reports (None: unbounded)."""

    max_cost_usd: float | None = None
    max_tokens: int | None = None


@dataclass(frozen=True)
class Agent:
    """A `claude-code` atom's configuration (the model is the atom's)."""

    base_url: str = DEFAULT_BASE_URL
    system_prompt: str | None = None
    system_prompt_file: str | None = None
    """Formula-relative; `load_cohort` reads it (an input of the run) into `system_prompt`."""
    allowed_tools: tuple[str, ...] = ()
    permission_mode: str = "acceptEdits"
    max_turns: int | None = None
    budget: Budget = field(default_factory=Budget)


AGENT_FIELDS = frozenset(
    {
        "kind",
        "baseUrl",
        "systemPrompt",
        "systemPromptFile",
        "allowedTools",
        "permissionMode",
        "maxTurns",
        "budget",
    }
)
"""The fields a `claude-code` atom has beyond a command atom's (it has no `command`)."""


def read_agent(reader: Reader, atom: dict[str, Any], path: str) -> Agent:
    """The agent fields of an atom already read as an object with `kind: claude-code`."""
    base_url = DEFAULT_BASE_URL
    if "baseUrl" in atom:
        base_url = reader.nonblank(atom["baseUrl"], f"{path}.baseUrl", max_chars=2000)
        if base_url and (problem := _url_problem(base_url)) is not None:
            reader.note(f"{path}.baseUrl", problem)
    system_prompt = prompt_file = None
    if "systemPrompt" in atom:
        system_prompt = system_prompt_text(reader, atom["systemPrompt"], f"{path}.systemPrompt")
    if "systemPromptFile" in atom:
        prompt_file = reader.clean_path(atom["systemPromptFile"], f"{path}.systemPromptFile")
        if system_prompt is not None:
            reader.note(
                f"{path}.systemPromptFile", "give systemPrompt or systemPromptFile, not both"
            )
    tools = tuple(
        reader.nonblank(item, f"{path}.allowedTools[{i}]", max_chars=200)
        for i, item in enumerate(
            reader.array(atom.get("allowedTools", []), f"{path}.allowedTools", hi=100)
        )
    )
    mode = "acceptEdits"
    if "permissionMode" in atom:
        mode = reader.one_of(atom["permissionMode"], f"{path}.permissionMode", PERMISSION_MODES)
    max_turns = None
    if "maxTurns" in atom:
        max_turns = reader.integer(atom["maxTurns"], f"{path}.maxTurns", lo=1, hi=MAX_TURNS_LIMIT)
    budget = Budget()
    if "budget" in atom:
        budget = _budget(reader, atom["budget"], f"{path}.budget")
    return Agent(base_url, system_prompt, prompt_file or None, tools, mode, max_turns, budget)


def system_prompt_text(reader: Reader, value: object, path: str) -> str:
    """A system prompt: not blank, at most `MAX_PROMPT_CHARS` characters."""
    return reader.nonblank(value, path, max_chars=MAX_PROMPT_CHARS)


def _budget(reader: Reader, value: object, path: str) -> Budget:
    fields = reader.obj(value, path, required=(), optional={"maxCostUSD", "maxTokens"})
    cost = None
    if "maxCostUSD" in fields:
        cost = reader.positive_number(fields["maxCostUSD"], f"{path}.maxCostUSD")
    tokens = None
    if "maxTokens" in fields:
        tokens = reader.integer(fields["maxTokens"], f"{path}.maxTokens", lo=1)
    if not fields and not reader.failed(path):
        reader.note(path, "names no bound: give maxCostUSD, maxTokens or both")
    return Budget(cost, tokens)


def _url_problem(url: str) -> str | None:
    """Why `url` cannot be the model API's base (None when it can)."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (a bad port raises here)
    except ValueError as error:
        return f"{url!r} is not a URL: {error}"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"{url!r} must be an http:// or https:// URL naming a host"
    if "@" in parts.netloc:
        return f"{url!r} must not carry a user or password (the key comes through passEnv)"
    return None


def base_url_authority(url: str) -> str:
    """The `host:port` the base URL is reached at: the atom's egress when it names none."""
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        return str(destination(parts.hostname or "", port))
    except BadDestination:
        return f"{parts.hostname}:{port}"


def describe(agent: Agent) -> str:
    """The configuration in one line, for the preview."""
    tools = ", ".join(agent.allowed_tools) or "the CLI's defaults"
    budget = agent.budget
    parts = [
        f"baseUrl {agent.base_url}",
        f"permissionMode {agent.permission_mode}",
        f"allowedTools {tools}",
        f"maxTurns {agent.max_turns if agent.max_turns is not None else 'unset'}",
        f"maxCostUSD {budget.max_cost_usd if budget.max_cost_usd is not None else 'unset'}",
        f"maxTokens {budget.max_tokens if budget.max_tokens is not None else 'unset'}",
        "system prompt: "
        + (
            f"from {agent.system_prompt_file}"
            if agent.system_prompt_file is not None
            else ("given" if agent.system_prompt is not None else "the CLI's")
        ),
    ]
    return "; ".join(parts)


def cli_argv(cli: str, agent: Agent, model: str) -> tuple[str, ...]:
    """The CLI's command line: headless, its prompt on stdin, its stream on stdout."""
    argv = [cli, "-p", "--output-format", "stream-json", "--verbose", "--model", model]
    argv += ["--permission-mode", agent.permission_mode]
    if agent.system_prompt is not None:
        argv += ["--system-prompt", agent.system_prompt]
    if agent.allowed_tools:
        argv += ["--allowedTools", ",".join(agent.allowed_tools)]
    if agent.max_turns is not None:
        argv += ["--max-turns", str(agent.max_turns)]
    if agent.budget.max_cost_usd is not None:
        argv += ["--max-budget-usd", repr(agent.budget.max_cost_usd)]
    # Only the flags above configure it: no project or user settings file, no MCP server.
    argv += ["--setting-sources", "", "--strict-mcp-config"]
    return tuple(argv)


def agent_env(agent: Agent, *, sandboxed: bool) -> dict[str, str]:
    """The CLI's own variables: where its model is and the switches that keep it quiet. In the
    sandbox, `IS_SANDBOX=1` tells it so (it then lets `bypassPermissions` run as root, which
    the sandbox's user namespace maps forge's root to); outside, it refuses that as root."""
    env = {"ANTHROPIC_BASE_URL": agent.base_url, **QUIET_CLI_ENV}
    if sandboxed:
        env["IS_SANDBOX"] = "1"
    return env


def prompt(issue: Issue, allowed_files: tuple[str, ...], instructions: list[str]) -> bytes:
    """The task as the agent is told it: the issue, the files it may change, any instruction."""
    lines = [f"# {issue.title}", "", issue.body.rstrip(), ""]
    lines += ["Change only these files:", *(f"- {path}" for path in allowed_files)]
    lines += ["", *instructions] if instructions else []
    return ("\n".join(lines) + "\n").encode("utf-8")


@dataclass
class StreamMeter:
    """What the CLI's stream has said so far: the tokens each API message used (a message's
    usage grows as it streams, so the largest seen counts), the model of the main thread's
    replies, and the `result` message once it comes."""

    budget: Budget
    tokens_by_message: dict[str, int] = field(default_factory=dict)
    model: str | None = None
    result: dict[str, Any] | None = None
    _partial: bytes = b""

    @property
    def tokens(self) -> int:
        return sum(self.tokens_by_message.values())

    def feed(self, chunk: bytes) -> bool:
        """Read a chunk of the stream; True once the token budget is passed (cut it off)."""
        *lines, self._partial = (self._partial + chunk).split(b"\n")
        for line in lines:
            self._read_line(line)
        return self.over_budget() is not None

    def _read_line(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            return
        if not isinstance(message, dict):
            return
        if message.get("type") == "result":
            self.result = message
            return
        inner = message.get("message")
        if message.get("type") != "assistant" or not isinstance(inner, dict):
            return
        if message.get("parent_tool_use_id") is None and isinstance(inner.get("model"), str):
            self.model = inner["model"]
        usage = inner.get("usage")
        if isinstance(usage, dict):
            used = sum(
                value
                for key in _TOKEN_FIELDS
                if isinstance(value := usage.get(key), int) and not isinstance(value, bool)
            )
            key = str(inner.get("id"))
            self.tokens_by_message[key] = max(self.tokens_by_message.get(key, 0), used)

    def reported_cost(self) -> float | None:
        cost = self.result.get("total_cost_usd") if self.result else None
        return float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) else None

    def over_budget(self) -> str | None:
        """The budget passed, in words (None while within it)."""
        tokens, limit = self.tokens, self.budget.max_tokens
        if limit is not None and tokens > limit:
            return f"token budget passed: the CLI reported {tokens} tokens (maxTokens {limit})"
        cost, cap = self.reported_cost(), self.budget.max_cost_usd
        stopped = self.result is not None and self.result.get("subtype") == "error_max_budget_usd"
        if cap is not None and cost is not None and (cost > cap or stopped):
            return f"cost budget passed: the CLI reported ${cost:.6f} (maxCostUSD {cap:g})"
        return None

    def report(self) -> HarnessReport | None:
        """The run as a harness report, from the `result` message (None: the CLI gave none)."""
        result = self.result
        if result is None:
            return None
        ok = result.get("subtype") == "success" and result.get("is_error") is not True
        errors = result.get("errors")
        error = None
        if not ok:
            listed = "; ".join(str(e) for e in errors) if isinstance(errors, list) else ""
            error = listed or _text(result.get("result")) or _text(result.get("subtype"))
        status = result.get("api_error_status")
        return HarnessReport(
            outcome="completed" if ok else "failed",
            cost_usd=self.reported_cost(),
            model=self.model,
            cost_basis="reported",
            model_mismatch=False,
            terminal_reason=_text(result.get("terminal_reason")),
            error=error,
            api_error_status=status
            if isinstance(status, int) and not isinstance(status, bool)
            else None,
        )


_TOKEN_FIELDS = (
    "input_tokens",
    "output_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
)


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
