"""One run of a `claude-code` atom: what the solve phase starts instead of a recipe's command.

The CLI runs in the recipe's sandbox, with the recipe's private home as its HOME (so its config
and session files stay where no verification view looks), the caller's key only through
`passEnv`, and the issue on stdin. Its stream is read as it comes by a `StreamMeter`, which cuts
the run off past its token budget and gives the solve phase its report.
"""

from __future__ import annotations

from dataclasses import dataclass

from forge.attempt.agent_atom import StreamMeter, agent_env, cli_argv, prompt
from forge.attempt.phases.context import Context


@dataclass(frozen=True)
class AgentRun:
    argv: tuple[str, ...]
    env: dict[str, str]
    """Added to the step's scrubbed environment."""
    prompt: bytes
    meter: StreamMeter


def agent_run(context: Context, instructions: list[str]) -> AgentRun:
    """The CLI's command line, variables, prompt and a fresh meter for one run."""
    agent, cli = context.atom.agent, context.spec.settings.agent_cli
    if agent is None or cli is None:
        raise ValueError("agent_run needs a claude-code atom and the CLI found at preview")
    return AgentRun(
        argv=cli_argv(cli, agent, context.atom.model),
        env=agent_env(agent, sandboxed=context.sandbox is not None),
        prompt=prompt(context.spec.task.issue, context.plan.allowed_files, instructions),
        meter=StreamMeter(agent.budget),
    )
