"""`forge agent spawn|prompt|asks|answer`: the agent seats of the running supervisor, from a
terminal (`forge.client.agent`). Imports of the client stay inside the run functions."""

from __future__ import annotations

import argparse
import sys

from forge.client.cli import add_location, answer_of, dial_target, quiet_logs
from forge.client.errors import NO_SUPERVISOR_EXIT

PERMISSION_MODES = ("default", "acceptEdits", "plan", "bypassPermissions", "dontAsk", "auto")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    agent = subparsers.add_parser("agent", help="agent seats: spawn, prompt, asks, answer")
    verbs = agent.add_subparsers(dest="agent_verb", required=True, metavar="VERB")
    location = f"{NO_SUPERVISOR_EXIT} no supervisor answered at the URL"

    spawn = verbs.add_parser(
        "spawn",
        help="start a coding agent (Claude Code) on a seat",
        description="Start an agent on seat ORG/PROJECT/LABEL, in the project's directory or "
        "one of its git worktrees (--worktree).",
        epilog=f"exit status: 0 spawned; 1 refused (the reason is printed); 2 a bad seat or "
        f"flag; {location}.",
    )
    spawn.add_argument("seat", metavar="ORG/PROJECT/LABEL")
    spawn.add_argument("--model", help="the model to start with (default: the CLI's)")
    spawn.add_argument("--permission-mode", choices=PERMISSION_MODES, default="default")
    spawn.add_argument("--worktree", metavar="PATH", help="one of the project's git worktrees")
    add_location(spawn)
    spawn.set_defaults(run=run_spawn)

    prompt = verbs.add_parser(
        "prompt",
        help="send a prompt to a seat's agent and stream its answer",
        description="Send TEXT to the agent on seat ORG/PROJECT/LABEL and print its answer as "
        "it streams; asks it raises are printed on stderr with their ids. Returns when the "
        "turn ends; Ctrl-C interrupts the turn.",
        epilog=f"exit status: 0 the turn completed; 1 it failed or was refused; 130 it was "
        f"interrupted; 2 a bad seat or flag; {location}.",
    )
    prompt.add_argument("seat", metavar="ORG/PROJECT/LABEL")
    prompt.add_argument("text")
    add_location(prompt)
    prompt.set_defaults(run=run_prompt)

    asks = verbs.add_parser(
        "asks",
        help="list the asks every agent seat waits on",
        epilog=f"exit status: 0 listed (possibly none); {location}.",
    )
    add_location(asks)
    asks.set_defaults(run=run_asks)

    answer = verbs.add_parser(
        "answer",
        help="allow or deny an agent's permission ask",
        description="Decide the ask ID (from `forge agent asks`): allow it once, allow it "
        "always (Claude Code's own suggested rule), or deny it (--reason reaches the model).",
        epilog=f"exit status: 0 answered; 1 refused (no such ask, or it was answered already); "
        f"2 a bad flag; {location}.",
    )
    answer.add_argument("id")
    answer.add_argument("decision", choices=("allow", "deny", "always"))
    answer.add_argument("--reason", help="why, for a deny (the model reads it)")
    add_location(answer)
    answer.set_defaults(run=run_answer)


def run_spawn(args: argparse.Namespace) -> int:
    from forge.client.agent import spawn
    from forge.client.attach import parse_seat

    seat = parse_seat(args.seat)
    url, tls = dial_target(args)
    quiet_logs("agent")
    call = spawn(
        url, seat, model=args.model, permission_mode=args.permission_mode,
        worktree=args.worktree, tls=tls,
    )  # fmt: skip
    reply = answer_of("agent spawn", call)
    if reply is None:
        return 1
    if not reply.get("ok"):
        print(f"forge agent spawn: {reply.get('why')}", file=sys.stderr)
        return 1
    print(f"spawned an agent on {seat} in {reply['cwd']}")
    return 0


def run_prompt(args: argparse.Namespace) -> int:
    from forge import eventloop
    from forge.client.agent import prompt
    from forge.client.attach import parse_seat

    seat = parse_seat(args.seat)
    url, tls = dial_target(args)
    quiet_logs("agent")
    return eventloop.run(prompt(url, seat, args.text, sys.stdout, sys.stderr, tls=tls))


def run_asks(args: argparse.Namespace) -> int:
    from forge import eventloop
    from forge.client.agent import asks, describe_ask

    url, tls = dial_target(args)
    quiet_logs("agent")
    for seat, ask in eventloop.run(asks(url, tls=tls)):
        print(describe_ask(seat, ask))
    return 0


def run_answer(args: argparse.Namespace) -> int:
    from forge.client.agent import answer

    url, tls = dial_target(args)
    quiet_logs("agent")
    outcome = answer_of("agent answer", answer(url, args.id, args.decision, args.reason, tls=tls))
    if outcome is None:
        return 1
    print(f"{args.id}: {outcome['outcome']}")
    return 0
