"""The agent atom end to end: the real Claude Code CLI (the agent SDK's bundled one) as a recipe,
in the real bubblewrap sandbox, through the attempt's egress proxy, against forge's scripted
model server on loopback. The only fake is the model; nothing leaves loopback.

Each test runs one cohort of two `kind: claude-code` variants, one model server each (the
atom's `baseUrl`, so its egress list is that server's `127.0.0.1:PORT` by default).
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import pytest

from forge.testing.model_script import parse_script
from forge.testing.model_server import ModelServer

from .kit import ACCEPTANCE, Kit

pytest.importorskip("claude_agent_sdk")

MODEL = "claude-sonnet-4-5"
"""A model the CLI knows the price of, so its result message reports a cost."""
FIX = "sed -i 's/a - b/a + b/' calc.py"
NO_CLI_HOME = '#!/bin/sh\ntest ! -e "$HOME/.claude.json" && test ! -e "$HOME/.claude" || exit 9\n'
"""The acceptance first checks that the CLI's configuration (written in the recipe's home) is
not in the verifying step's home."""
RUN_S = 400
"""Seconds a whole run of two CLI attempts may take on a loaded machine (a safety net only)."""


def agent_formula(kit: Kit, name: str, server: ModelServer, **fields: Any) -> str:
    """A Formula whose coding atom is the CLI pointed at `server`."""
    document = {
        "schemaVersion": 1,
        "name": name,
        "atoms": [
            {
                "id": "code",
                "role": "coding",
                "kind": "claude-code",
                "model": MODEL,
                "timeoutMs": 300_000,
                "baseUrl": server.url,
                "allowedTools": ["Bash"],
                "maxTurns": 6,
                **fields,
            }
        ],
    }
    rel = f"{name}.yaml"
    (kit.cohort_dir / rel).write_text(json.dumps(document, indent=1))
    return rel


@asynccontextmanager
async def servers(*scripts: list[dict[str, Any]]) -> AsyncIterator[list[ModelServer]]:
    async with AsyncExitStack() as stack:
        yield [
            await stack.enter_async_context(ModelServer(parse_script({"turns": turns})))
            for turns in scripts
        ]


Completed = subprocess.CompletedProcess[str]


async def run(kit: Kit, key: str = "test-key-not-a-secret") -> tuple[Completed, Completed]:
    """Preview, then the approved run with the caller's `ANTHROPIC_API_KEY`, in a thread (the
    model servers answer on this loop)."""
    env = {"ANTHROPIC_API_KEY": key}

    def both() -> tuple[Completed, Completed]:
        preview = subprocess.run(
            kit.argv(), capture_output=True, text=True, env=kit.env(env), timeout=RUN_S
        )
        assert preview.returncode == 0, preview.stdout + preview.stderr
        digest = preview.stdout.split("--approve ")[-1].split()[0]
        approved = subprocess.run(
            kit.argv("--approve", digest),
            capture_output=True,
            text=True,
            env=kit.env(env),
            timeout=RUN_S,
        )
        return preview, approved

    return await asyncio.to_thread(both)


def attempt_line(kit: Kit, variant: str) -> str:
    report = (kit.out / "report.md").read_text()
    return next(line for line in report.splitlines() if line.startswith(f"- t1 {variant} rep-1: "))


async def test_an_agent_that_edits_the_bug_away_is_accepted_and_one_that_only_reaches_out_fails(
    kit: Kit,
) -> None:
    """Variant a's scripted model runs a Bash edit that fixes `add` and is accepted, its cost
    the CLI's report, its key in no file of the run, and the CLI's configuration (in the
    recipe's home) absent from the verifying step's home. Variant b's model changes nothing: its
    Bash tool tries another loopback port (through the proxy and directly), a public name and a
    LAN name (`bypassPermissions`, no tool list: the sandbox is the wall), then says it is done
    and fails verification. The port accepts nothing, the names
    are refused by the egress list before they are resolved, and each refusal is in b's record
    and the report; both attempts stay sealed, their only admitted destination their model."""
    key = f"sk-ant-test-{uuid.uuid4().hex}"
    fixer = [{"bash": FIX, "usage": {"input_tokens": 1000, "output_tokens": 50}}, {"say": "Done."}]
    with socket.create_server(("127.0.0.1", 0)) as other:
        other.setblocking(False)
        port = other.getsockname()[1]
        reach = (
            f"curl -s -m 5 http://127.0.0.1:{port}/ ; "
            f"curl -s -m 5 --noproxy '*' http://127.0.0.1:{port}/ ; "
            "curl -s -m 5 https://example.com/ ; curl -s -m 5 http://printer.lan:631/ ; true"
        )
        escaper = [{"bash": reach}, {"say": "Done."}]
        async with servers(fixer, escaper) as (a_server, b_server):
            kit.cohort(
                a=agent_formula(kit, "a", a_server, systemPrompt="Fix the bug."),
                b=agent_formula(
                    kit, "b", b_server, allowedTools=[], permissionMode="bypassPermissions"
                ),
                tasks={"t1": kit.plan("t1", acceptance=NO_CLI_HOME + ACCEPTANCE.split("\n", 1)[1])},
            )
            preview, result = await run(kit, key)
            assert result.returncode == 2, result.stdout + result.stderr
            keys = {r.headers.get("x-api-key") for r in a_server.message_requests()}
            assert keys == {"<redacted>"}
            assert len(b_server.played) == 2
            a_egress = a_server.url.removeprefix("http://")
            b_egress = b_server.url.removeprefix("http://")
        with pytest.raises(BlockingIOError):
            other.accept()
    assert "model claude-sonnet-4-5, coding agent claude-code," in preview.stdout
    assert "    the coding step runs the Claude Code CLI /" in preview.stdout
    assert f"  egress: {a_egress}\n" in preview.stdout
    a, b = kit.record("t1", "a"), kit.record("t1", "b")
    assert a["correct"] is True, a
    assert a["outcome"] == "completed"
    assert a["costBasis"] == "reported"
    assert a["costUsd"] > 0
    assert a["seal"]["egress"] == [a_egress]
    assert "sealed: yes (egress: " in attempt_line(kit, "a")
    transcript = kit.out / "attempts" / "t1" / "a" / "rep-1" / "transcript" / "stdout.log"
    assert '"type":"result"' in transcript.read_text()
    report = kit.report()
    variant_a = next(v for v in report["variants"] if v["name"] == "a")
    assert variant_a["costPerAcceptedUsd"] == pytest.approx(a["costUsd"])
    assert variant_a["costBasis"] == "reported"
    for folder in (kit.out, kit.cohort_dir):
        for file in folder.rglob("*"):
            if file.is_file() and not file.is_symlink():
                assert key.encode() not in file.read_bytes(), file

    assert b["correct"] is False
    assert b["outcome"] == "completed"
    decided = {(d["destination"], d["decision"], d["reason"]) for d in b["egress"]["decisions"]}
    refused = "not on the egress list"
    assert (f"127.0.0.1:{port}", "refused", refused) in decided
    assert ("example.com:443", "refused", refused) in decided
    assert ("printer.lan:631", "refused", refused) in decided
    assert {d for d in decided if d[1] == "admitted"} == {
        (b_egress, "admitted", "listed loopback address 127.0.0.1")
    }
    markdown = (kit.out / "report.md").read_text()
    for destination in (f"127.0.0.1:{port}", "example.com:443", "printer.lan:631"):
        assert f"  - network: refused {destination} ({refused})" in markdown


async def test_budgets_stop_an_attempt_and_say_why(kit: Kit) -> None:
    """Variant a's first turn reports a million input tokens ($3 at the model's price) against
    `maxCostUSD: 0.5`; variant b's passes `maxTokens: 5000`. Neither reaches its second turn,
    which would fix the bug: each attempt ends `budget-exceeded` with the reason in words."""
    costly = [
        {"bash": "true", "usage": {"input_tokens": 1_000_000, "output_tokens": 10}},
        {"bash": FIX},
        {"say": "Fixed."},
    ]
    # b's tool call sleeps: the CLI is still in it when forge cuts the run off.
    lengthy = [{**costly[0], "bash": "sleep 120"}, *costly[1:]]
    async with servers(costly, lengthy) as (a_server, b_server):
        kit.cohort(
            a=agent_formula(kit, "a", a_server, budget={"maxCostUSD": 0.5}),
            b=agent_formula(kit, "b", b_server, budget={"maxTokens": 5000}),
            tasks={"t1": kit.plan("t1")},
        )
        _, result = await run(kit)
        assert result.returncode == 2, result.stdout + result.stderr
        assert a_server.played == [0]
        assert b_server.played == [0]
    a, b = kit.record("t1", "a"), kit.record("t1", "b")
    assert a["outcome"] == "budget-exceeded"
    assert a["error"].startswith("cost budget passed: the CLI reported $3.0")
    assert a["costUsd"] == pytest.approx(3.0, abs=0.01)
    assert b["outcome"] == "budget-exceeded"
    assert b["error"].startswith("token budget passed: the CLI reported 100")
    for record in (a, b):
        assert record["correct"] is False
        assert record["error"] in record["notes"]
    assert "incomplete" in attempt_line(kit, "a")


async def test_the_cohorts_cost_stop_reads_the_cost_the_cli_reported(kit: Kit) -> None:
    """`stop.maxCostUSD: 1` and a first attempt whose CLI reports $3 (no budget of its own):
    the run stops before variant b's attempt starts, naming the reported cost."""
    costly = [{"say": "Looked.", "usage": {"input_tokens": 1_000_000, "output_tokens": 10}}]
    async with servers(costly, costly) as (a_server, b_server):
        kit.cohort(
            a=agent_formula(kit, "a", a_server),
            b=agent_formula(kit, "b", b_server),
            tasks={"t1": kit.plan("t1")},
            stop={"maxCostUSD": 1.0},
        )
        _, result = await run(kit)
        assert result.returncode == 2, result.stdout + result.stderr
        assert a_server.played == [0]
        assert b_server.played == []
    report = kit.report()
    assert report["status"] == "stopped"
    assert report["stopReason"].startswith("maxCostUSD 1 reached: reported cost 3.0")
    assert report["stopReason"].endswith("(basis: reported)")
    assert not (kit.out / "attempts" / "t1" / "b").exists()
