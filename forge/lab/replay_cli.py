"""`forge evaluate replay`: flags checked here (exit 1, not argparse's 2), then one line per PR."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from forge.attempt.errors import LabRefusal
from forge.lab.replay_tasks import ReplayOptions, check_options, replay


async def replay_command(args: argparse.Namespace) -> int:
    for flag in ("repo", "source", "out"):
        if getattr(args, flag) is None:
            raise LabRefusal(f"evaluate replay needs --{flag}")
    out = Path(args.out)
    prs = check_options(args.repo, args.pr, out)
    result = await replay(
        ReplayOptions(
            repo=args.repo,
            prs=prs,
            source=Path(args.source),
            out=out,
            python=args.python,
            caller_env=dict(os.environ),
        )
    )
    for name, _ in result.built:
        sys.stdout.write(f"{name}: built\n")
    for skip in result.skipped:
        sys.stdout.write(f"pr-{skip['pr']}: skipped: {skip['reason']}\n")
    if result.source_error is not None:
        sys.stderr.write(f"forge: {out}/source could not be written: {result.source_error}\n")
    sys.stdout.write(
        f"built {len(result.built)}, skipped {len(result.skipped)}: review "
        f"{out}/tasks/*/approval.md, then {out}/cohort.stub.json "
        f"(evaluate --cohort with --source {out}/source)\n"
    )
    return 0
