"""`forge evaluate --cohort`: the verb's arguments; the work is in `forge.lab.evaluate`.

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


def run(args: argparse.Namespace) -> int:
    from forge.lab.evaluate import evaluate

    return asyncio.run(evaluate(args))
