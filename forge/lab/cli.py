"""`forge evaluate --cohort`, `forge evaluate replay`, `forge learn`, `forge suggestion`: the
verbs' arguments. The work is in `forge.lab.evaluate`, `replay_cli` and `learn_cli`.

Only argparse is imported here, so building the `forge` parser stays cheap for every other verb.
"""

from __future__ import annotations

import argparse
import asyncio


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "evaluate",
        help="compare two Formula variants over frozen task plans (--cohort)",
        description="Compare two Formula variants over frozen task plans.",
    )
    parser.add_argument("--cohort", metavar="COHORT.json")
    parser.add_argument("--source", metavar="REPO")
    parser.add_argument("--out", metavar="DIR")
    parser.add_argument("--approve", metavar="DIGEST")
    parser.add_argument("--parallel", metavar="N", default="1")
    parser.add_argument("--keep-workspaces", action="store_true")
    parser.add_argument("--executor", default="local", metavar="local|dask")
    parser.add_argument("--scheduler", metavar="ADDRESS")
    parser.add_argument("--recheck", action="store_true", help=argparse.SUPPRESS)
    parser.set_defaults(run=run)
    modes = parser.add_subparsers(dest="mode", metavar="replay")
    replay = modes.add_parser(
        "replay",
        help="build frozen evaluation tasks from merged pull requests",
        description="Build frozen evaluation tasks from a project's own merged pull requests.",
    )
    replay.add_argument("--repo", metavar="OWNER/REPO")
    replay.add_argument("--pr", metavar="N", action="append", default=[])
    replay.add_argument("--source", metavar="CHECKOUT")
    replay.add_argument("--out", metavar="NEW_DIR")
    replay.add_argument("--python", metavar="PYTHON", default="python3")
    replay.set_defaults(run=run_replay)
    _register_learning(subparsers)


def _register_learning(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    learn = subparsers.add_parser(
        "learn",
        help="propose a Formula change from finished attempts (saved for review)",
        description="Run the Formula's learn atom over finished attempts and save a pending "
        "suggestion; --pending runs the queued learn requests. Never approves anything.",
    )
    learn.add_argument("paths", nargs="*", metavar="RUN_OR_ATTEMPT")
    learn.add_argument("--pending", action="store_true")
    learn.add_argument("--variant", metavar="NAME")
    learn.add_argument("--formula", metavar="PATH")
    learn.add_argument("--lab", metavar="DIR")
    learn.add_argument("--json", action="store_true")
    learn.set_defaults(run=run_learn)
    suggestion = subparsers.add_parser(
        "suggestion",
        help="review a learning suggestion: show, --approve or --dismiss",
        description="List suggestions, show one, or record a decision on it.",
    )
    suggestion.add_argument("id", nargs="?", metavar="ID")
    suggestion.add_argument("--approve", action="store_true")
    suggestion.add_argument("--dismiss", action="store_true")
    suggestion.add_argument("--lab", metavar="DIR")
    suggestion.add_argument("--json", action="store_true")
    suggestion.set_defaults(run=run_suggestion)


def run(args: argparse.Namespace) -> int:
    from forge.lab.evaluate import evaluate

    return asyncio.run(evaluate(args))


def run_replay(args: argparse.Namespace) -> int:
    from forge.lab.replay_cli import replay_command

    return asyncio.run(replay_command(args))


def run_learn(args: argparse.Namespace) -> int:
    from forge.lab.learn_cli import learn_command

    return learn_command(args)


def run_suggestion(args: argparse.Namespace) -> int:
    from forge.lab.learn_cli import suggestion_command

    return suggestion_command(args)
