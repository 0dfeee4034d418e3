"""`forge evaluate` (with `init`, `pin` and `replay`), `forge learn`, `forge suggestion`: the
verbs' arguments and help. The work is in `forge.lab.evaluate`, `scaffold`, `replay_cli` and
`learn_cli`.

Only argparse is imported here, so building the `forge` parser stays cheap for every other verb.
A usage error of `evaluate` or any of its subcommands exits 1, not argparse's 2: for this verb 2
means "the run finished and some attempt was not correct".
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from forge import eventloop

EXIT_CODES = """\
exit codes:
  0    preview printed, or the run finished (complete or stopped) with every attempt correct
  1    refused (a faulty file, flag or path: every problem is listed) or the run aborted
       (an input changed, the report could not be saved, an attempt runner was lost), or
       the supervisor running it was lost (the approve command resumes it)
  2    the run finished and some attempt was not correct, or was invalid
  130  interrupted by SIGINT (Ctrl-C); 143 by SIGTERM: in-flight attempts are discarded and
       the same approve command resumes the run

Every path may be relative, ~-prefixed or absolute; each is resolved once, at the start.
File formats, the recipe's contract and the report: docs/lab.md.
"""

DESCRIPTION = """\
Compare two Formula variants (recipes) over frozen task plans.

Without --approve, forge evaluate prints what would run, the seal that will hold (the sandbox,
the network) and the activation digest with the exact approve command; it creates and runs
nothing. With --approve DIGEST it runs the cohort into --out, or resumes a run there: in the running
forge supervisor when one answers (its attempt runners; this command follows the run, and Ctrl-C
stops it), else, or with --local, in this process.
"""


def _usage_exits_1(parser: argparse.ArgumentParser) -> None:
    """Usage errors, unknown arguments included (the top parser would exit 2), exit 1."""
    parse = parser.parse_known_args

    def error(message: str) -> NoReturn:
        parser.print_usage(sys.stderr)
        parser.exit(1, f"{parser.prog}: error: {message}\n")

    def parse_known_args(
        args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        parsed, extras = parse(args, namespace)
        if extras:
            error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed, extras

    parser.error = error  # type: ignore[method-assign]
    parser.parse_known_args = parse_known_args  # type: ignore[method-assign, assignment]


RunCohort = Callable[[argparse.Namespace], int]
"""Runs `evaluate --cohort`: the socket client's front (`forge.client.evaluate`), which hands an
approved run to a running supervisor, wired in by `forge.cli`; without it, this process."""


def register(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
    run_cohort: RunCohort | None = None,
) -> None:
    parser = subparsers.add_parser(
        "evaluate",
        help="compare two Formula variants over frozen task plans (--cohort; init, pin)",
        description=DESCRIPTION,
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _usage_exits_1(parser)
    parser.add_argument(
        "--cohort",
        metavar="COHORT.json",
        help="the cohort file: two pinned Formula variants over pinned task plans",
    )
    parser.add_argument(
        "--source",
        metavar="REPO",
        help="a non-bare git checkout holding every plan's base commit; only ever read",
    )
    parser.add_argument(
        "--out",
        metavar="DIR",
        help="where the run writes (absent or empty for a new run; a run there resumes)",
    )
    parser.add_argument(
        "--approve",
        metavar="DIGEST",
        help="run: the activation digest the preview printed (any input change changes it)",
    )
    parser.add_argument(
        "--parallel",
        metavar="N",
        default="1",
        help="attempts at a time, 1 to 4 (default 1); not part of the digest",
    )
    parser.add_argument(
        "--keep-workspaces",
        action="store_true",
        help="keep each attempt's private trees (linked from <out>/attempts/.../work)",
    )
    parser.add_argument(
        "--executor",
        default="local",
        metavar="local|dask",
        help="local attempt runners (default) or a Dask cluster (needs --scheduler)",
    )
    parser.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="with --executor dask: the scheduler, tls://HOST:PORT (tcp:// only with "
        "--insecure-cluster)",
    )
    parser.add_argument(
        "--cluster-certs",
        metavar="DIR",
        help="with a tls:// scheduler: the folder holding ca.pem, client.pem and client.key "
        "(`forge evaluate cluster-certs DIR` makes it)",
    )
    parser.add_argument(
        "--insecure-cluster",
        action="store_true",
        help="run on a tcp:// scheduler, which runs code from anyone who reaches it (the report "
        "says the cluster was insecure)",
    )
    parser.add_argument(
        "--local",
        action="store_true",
        help="run in this process even when a forge supervisor is running (by default an "
        "approved run is handed to it and followed from here)",
    )
    parser.add_argument(
        "--url", help="the supervisor's socket (default: from forge.toml, as forge status finds it)"
    )
    parser.add_argument(
        "--config", metavar="PATH", help="the forge.toml that names the supervisor's socket"
    )
    parser.add_argument("--recheck", action="store_true", help=argparse.SUPPRESS)
    parser.set_defaults(run=functools.partial(run, run_cohort), action=None)
    actions = parser.add_subparsers(dest="action", metavar="[init | pin | replay | cluster-certs]")

    init = actions.add_parser(
        "init",
        help="write a starter cohort (plan, issue stub, two Formula stubs, pins)",
        description="Write a starter cohort into DIR: one task plan at --base with --acceptance "
        "as its hidden acceptance, an issue stub, two Formula stubs (a and b) and cohort.json "
        "with every pin computed. Edit the stubs, run `forge evaluate pin`, then preview.",
        epilog="exit codes: 0 written; 1 refused (every problem listed)",
    )
    _usage_exits_1(init)
    init.add_argument("--source", metavar="REPO", required=True, help="the git checkout")
    init.add_argument("--base", metavar="SHA", required=True, help="the task's base commit")
    init.add_argument(
        "--acceptance",
        metavar="COMMAND",
        required=True,
        help="the hidden acceptance, a shell command run in the candidate tree, "
        "for example 'python3 -m pytest -q tests/test_x.py::test_y'",
    )
    init.add_argument("--out", metavar="DIR", required=True, help="a new or empty directory")
    init.add_argument(
        "--task", metavar="NAME", default="task-1", help="the task's name (default task-1)"
    )
    init.add_argument(
        "--allowed",
        metavar="PATH",
        action="append",
        help="a file the recipe may change (repeat; default: every tracked non-test file)",
    )
    init.add_argument(
        "--check",
        metavar="COMMAND",
        action="append",
        help="a required check, a shell command (repeat; default: none)",
    )

    pin = actions.add_parser(
        "pin",
        help="recompute a cohort's sha256 pins after an edit and show what changed",
        description="Recompute every formulaSha256 and planSha256 in COHORT.json from the files "
        "they name and rewrite it; print each pin that changed. Pinning approves nothing: "
        "preview the cohort again for its new digest.",
        epilog="exit codes: 0 pins current (rewritten or unchanged); 1 refused",
    )
    _usage_exits_1(pin)
    pin.add_argument("pin_cohort", metavar="COHORT.json", help="the cohort file to re-pin")

    replay = actions.add_parser(
        "replay",
        help="build frozen evaluation tasks from merged pull requests",
        description="Build frozen evaluation tasks from a project's own merged pull requests.",
    )
    _usage_exits_1(replay)
    replay.add_argument("--repo", metavar="OWNER/REPO")
    replay.add_argument("--pr", metavar="N", action="append", default=[])
    replay.add_argument("--source", metavar="CHECKOUT")
    replay.add_argument("--out", metavar="NEW_DIR")
    replay.add_argument("--python", metavar="PYTHON", default="python3")
    replay.set_defaults(run=run_replay)

    certs = actions.add_parser(
        "cluster-certs",
        help="make a CA and TLS certificates for a Dask cluster (--executor dask)",
        description="Make a CA and a certificate and key each for the Dask scheduler, its workers "
        "and forge evaluate in DIR (a new 0700 folder; keys 0600), drop the CA's key, and print "
        "the dask scheduler, dask worker and forge evaluate options that use them. "
        "Any certificate of the CA may submit work to the cluster: see docs/lab-dask.md.",
        epilog="exit codes: 0 written; 1 refused (DIR exists and is not empty)",
    )
    _usage_exits_1(certs)
    certs.add_argument("certs_dir", metavar="DIR", help="an absent or empty directory")
    certs.add_argument(
        "--host",
        metavar="NAME",
        help="the scheduler's machine as workers and forge reach it, for the printed commands "
        "(default: this machine's host name)",
    )
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


def run(run_cohort: RunCohort | None, args: argparse.Namespace) -> int:
    if args.action == "init":
        from forge.lab.scaffold import init

        return eventloop.run(init(args))
    if args.action == "pin":
        from forge.lab.scaffold import pin

        return pin(args.pin_cohort)
    if args.action == "cluster-certs":
        from forge.lab.cluster_tls import cluster_certs_command

        return cluster_certs_command(args)
    if run_cohort is not None:
        return run_cohort(args)
    from forge.lab.evaluate import evaluate

    return eventloop.run(evaluate(args))


def run_replay(args: argparse.Namespace) -> int:
    from forge.lab.replay_cli import replay_command

    return eventloop.run(replay_command(args))


def run_learn(args: argparse.Namespace) -> int:
    from forge.lab.learn_cli import learn_command

    return learn_command(args)


def run_suggestion(args: argparse.Namespace) -> int:
    from forge.lab.learn_cli import suggestion_command

    return suggestion_command(args)
