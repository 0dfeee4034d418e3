"""The agent atom's pure parts: decoding `kind: claude-code` (and reading its system prompt
file with the cohort), the CLI's command line and prompt, and `StreamMeter` reading the CLI's
stream (tokens as they stream, the result message, budgets)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from forge.attempt.agent_atom import Agent, Budget, StreamMeter, agent_env, cli_argv, prompt
from forge.attempt.cohort import load_cohort
from forge.attempt.errors import LabRefusal
from forge.attempt.formula import decode_formula
from forge.attempt.plan import Issue
from forge.lab.digest import activation_digest

from .kit import Kit, sha


def formula(**atom: Any) -> bytes:
    fields = {
        "id": "code",
        "role": "coding",
        "kind": "claude-code",
        "model": "claude-sonnet-4-5",
        "timeoutMs": 60_000,
        **atom,
    }
    return json.dumps({"schemaVersion": 1, "name": "agent", "atoms": [fields]}).encode()


def test_an_agent_atom_defaults_to_the_anthropic_api_and_the_callers_key() -> None:
    """No `egress` and no `passEnv`: the atom reaches only its base URL's host:port and is given
    only `ANTHROPIC_API_KEY`; it has no command of its own."""
    atom = decode_formula(formula(), file="a.yaml").coding
    assert atom.command == ()
    assert atom.egress == ("api.anthropic.com:443",)
    assert atom.pass_env == ("ANTHROPIC_API_KEY",)
    assert atom.agent == Agent()


def test_a_scripted_model_server_base_url_is_the_egress() -> None:
    atom = decode_formula(formula(baseUrl="http://127.0.0.1:8123"), file="a.yaml").coding
    assert atom.egress == ("127.0.0.1:8123",)


def test_every_bad_agent_field_is_refused_naming_it() -> None:
    raw = formula(
        kind="codex",
        command=["claude"],
        baseUrl="http://user:pw@10.0.0.5:80",
        permissionMode="yolo",
        maxTurns=0,
        budget={},
        network=True,
    )
    with pytest.raises(LabRefusal) as refused:
        decode_formula(raw, file="a.yaml")
    text = str(refused.value)
    for expected in (
        "a.yaml: atoms[0].command: unknown field",
        "a.yaml: atoms[0].kind: must be one of claude-code, got 'codex'",
        "a.yaml: atoms[0].baseUrl: 'http://user:pw@10.0.0.5:80' must not carry a user",
        "a.yaml: atoms[0].permissionMode: must be one of",
        "a.yaml: atoms[0].maxTurns: must be an integer from 1 to 1000, got 0",
        "a.yaml: atoms[0].budget: names no bound",
        "a.yaml: atoms[0].network: a claude-code atom reaches only its model's API",
    ):
        assert expected in text, text


def test_a_lan_base_url_is_refused_as_an_egress_entry() -> None:
    with pytest.raises(LabRefusal, match=r"atoms\[0\]\.baseUrl\[0\]: '10.0.0.5:80'"):
        decode_formula(formula(baseUrl="http://10.0.0.5"), file="a.yaml")


def test_the_cli_runs_headless_with_the_atoms_flags_and_no_settings_files() -> None:
    agent = Agent(
        system_prompt="Be brief.",
        allowed_tools=("Bash", "Edit"),
        max_turns=7,
        budget=Budget(max_cost_usd=0.25),
    )
    argv = cli_argv("/opt/claude", agent, "m")
    assert argv[:7] == (
        "/opt/claude",
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",
        "--model",
        "m",
    )
    flags = dict(zip(argv[7::2], argv[8::2], strict=False))
    assert flags["--permission-mode"] == "acceptEdits"
    assert flags["--system-prompt"] == "Be brief."
    assert flags["--allowedTools"] == "Bash,Edit"
    assert flags["--max-turns"] == "7"
    assert flags["--max-budget-usd"] == "0.25"
    assert flags["--setting-sources"] == ""
    assert argv[-1] == "--strict-mcp-config"


def test_only_a_sandboxed_cli_is_told_it_is_in_a_sandbox() -> None:
    """`IS_SANDBOX=1` lets the CLI bypass its permission prompts as root: never outside one."""
    agent = Agent(base_url="http://127.0.0.1:9")
    assert agent_env(agent, sandboxed=True)["IS_SANDBOX"] == "1"
    outside = agent_env(agent, sandboxed=False)
    assert "IS_SANDBOX" not in outside
    assert outside["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:9"
    assert outside["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"


def test_the_prompt_is_the_issue_and_the_files_it_may_change() -> None:
    text = prompt(Issue(title="Fix add", body="add subtracts\n"), ("calc.py",), ["Resume."])
    assert text.decode() == (
        "# Fix add\n\nadd subtracts\n\nChange only these files:\n- calc.py\n\nResume.\n"
    )


def line(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode() + b"\n"


def assistant(message_id: str, input_tokens: int, output_tokens: int, **extra: Any) -> bytes:
    usage = {"input_tokens": input_tokens, "output_tokens": output_tokens}
    inner = {"id": message_id, "model": "claude-x", "usage": usage}
    return line({"type": "assistant", "message": inner, "parent_tool_use_id": None, **extra})


def test_a_message_streamed_in_several_lines_counts_once_at_its_largest() -> None:
    """The CLI prints one line per content block, each with the message's usage so far."""
    meter = StreamMeter(Budget(max_tokens=1500))
    chunk = assistant("m1", 1000, 1) + assistant("m1", 1000, 40)
    assert meter.feed(chunk[:10]) is False  # a partial line waits for its end
    assert meter.feed(chunk[10:]) is False
    assert meter.tokens == 1040
    assert meter.feed(assistant("m2", 400, 70)) is True
    assert meter.over_budget() == (
        "token budget passed: the CLI reported 1510 tokens (maxTokens 1500)"
    )


def test_the_result_message_is_the_report_with_the_cost_it_reported() -> None:
    meter = StreamMeter(Budget())
    meter.feed(assistant("m1", 10, 5) + b"not json\n")
    meter.feed(
        line(
            {
                "type": "result",
                "subtype": "success",
                "is_error": False,
                "total_cost_usd": 0.0123,
                "terminal_reason": "completed",
            }
        )
    )
    report = meter.report()
    assert report is not None
    assert (report.outcome, report.cost_usd, report.cost_basis, report.model) == (
        "completed",
        0.0123,
        "reported",
        "claude-x",
    )


def test_the_clis_own_budget_stop_is_a_failed_run_over_budget() -> None:
    meter = StreamMeter(Budget(max_cost_usd=0.5))
    stopped = {
        "type": "result",
        "subtype": "error_max_budget_usd",
        "is_error": True,
        "total_cost_usd": 3.00075,
        "errors": ["Reached maximum budget ($0.5)"],
    }
    assert meter.feed(line(stopped)) is True
    report = meter.report()
    assert report is not None
    assert (report.outcome, report.error) == ("failed", "Reached maximum budget ($0.5)")
    assert meter.over_budget() == (
        "cost budget passed: the CLI reported $3.000750 (maxCostUSD 0.5)"
    )


def test_no_result_message_is_no_report() -> None:
    meter = StreamMeter(Budget())
    meter.feed(assistant("m1", 10, 5))
    assert meter.report() is None


def test_a_system_prompt_file_is_an_input_of_the_run(kit: Kit) -> None:
    """`systemPromptFile` (Formula-relative) is read into the atom's prompt, pinned with the
    inputs (so each attempt re-hashes it) and covered by the activation digest."""
    (kit.cohort_dir / "prompts").mkdir()
    prompt_file = kit.cohort_dir / "prompts" / "a.md"
    prompt_file.write_text("Fix the cause.\n")
    (kit.cohort_dir / "a.yaml").write_bytes(formula(systemPromptFile="prompts/a.md"))
    (kit.cohort_dir / "b.yaml").write_bytes(formula(systemPrompt="Be brief."))
    cohort_file = kit.cohort(a="a.yaml", b="b.yaml", tasks={"t1": kit.plan("t1")})
    cohort = load_cohort(cohort_file)
    agent = cohort.variants[0].formula.coding.agent
    assert agent is not None
    assert (agent.system_prompt, agent.system_prompt_file) == ("Fix the cause.\n", "prompts/a.md")
    assert cohort.pins()["prompts/a.md"] == sha(prompt_file)
    digest = activation_digest(cohort, source="/s", out="/o")
    prompt_file.write_text("Fix the symptom.\n")
    assert activation_digest(load_cohort(cohort_file), source="/s", out="/o") != digest
    prompt_file.unlink()
    with pytest.raises(LabRefusal, match=r"a\.yaml: atoms\[0\]\.systemPromptFile: prompts/a\.md"):
        load_cohort(cohort_file)


def test_a_prompt_given_twice_is_refused() -> None:
    raw = formula(systemPrompt="x", systemPromptFile="p.md")
    with pytest.raises(LabRefusal, match="give systemPrompt or systemPromptFile, not both"):
        decode_formula(raw, file="a.yaml")
