"""`forge learn` and `forge suggestion`: the learning loop's two verbs.

`forge learn RUN_OR_ATTEMPT... [--variant V] [--formula PATH]` saves a pending suggestion from
finished attempts; `forge learn --pending` runs the queued learn requests. `forge suggestion`
lists suggestions and requests; `forge suggestion ID` shows one (the explanation, then the exact
change); `--approve` or `--dismiss` records the person's decision. Learn never approves.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import msgspec

from forge import eventloop
from forge.attempt.errors import LabRefusal
from forge.attempt.run import iso_utc
from forge.clock import SYSTEM_CLOCK
from forge.lab.evidence import Finished, attempts_of, finished_attempt
from forge.lab.labstate import lab_dir, registered_runs
from forge.lab.learn import LearnJob, check_evidence, learn
from forge.lab.learn_requests import load_requests, pending_lines, run_pending
from forge.lab.suggestions import approve, dismiss, load, load_all, render
from forge.untrusted import one_line


def _now() -> str:
    return iso_utc(SYSTEM_CLOCK.time())


def learn_command(args: argparse.Namespace) -> int:
    lab = lab_dir(args.lab)
    if args.pending:
        if args.paths or args.formula or args.variant:
            raise LabRefusal("learn --pending runs the queued requests; it takes no attempts")
        outcome = eventloop.run(run_pending(lab, _now()))
        if args.json:
            sys.stdout.write(json.dumps({"ok": outcome.ok, "lines": outcome.lines}) + "\n")
        else:
            for line in outcome.lines or ["no pending learn requests"]:
                sys.stdout.write(line + "\n")
        return 0 if outcome.ok else 1
    if not args.paths:
        raise LabRefusal("learn needs RUN_OR_ATTEMPT directories, or --pending")
    attempts = [
        finished_attempt(attempt_dir)
        for text in args.paths
        for attempt_dir in attempts_of(Path(text), args.variant)
    ]
    sha = check_evidence(attempts)
    formula = Path(args.formula).absolute() if args.formula else _registered(lab, attempts, sha)
    job = LearnJob(formula_path=formula, attempts=attempts)
    suggestion = eventloop.run(learn(lab, job, _now()))
    if args.json:
        sys.stdout.write(json.dumps({"suggestion": suggestion.id, "status": "pending"}) + "\n")
    else:
        sys.stdout.write(
            f"saved pending suggestion {suggestion.id}: {one_line(suggestion.summary, 200)}\n"
            f"review it with `forge suggestion {suggestion.id}`, then --approve or --dismiss\n"
        )
    return 0


def _registered(lab: Path, attempts: list[Finished], sha: str) -> Path:
    """The Formula file behind a snapshot, as `forge evaluate` registered the run."""
    runs = {str(a.run_dir.resolve()) for a in attempts}
    paths = {
        f.path
        for run in registered_runs(lab)
        if run.out in runs
        for f in run.formulas
        if f.sha256 == sha
    }
    if len(paths) != 1:
        why = "no registered Formula file" if not paths else "several Formula files"
        raise LabRefusal(
            f"{why} for snapshot {sha} in {lab}; name the Formula to improve with --formula PATH"
        )
    return Path(paths.pop())


def suggestion_command(args: argparse.Namespace) -> int:
    lab = lab_dir(args.lab)
    if args.approve and args.dismiss:
        raise LabRefusal("--approve and --dismiss exclude each other")
    if args.id is None:
        if args.approve or args.dismiss:
            raise LabRefusal("name the suggestion: forge suggestion ID --approve")
        return _list(lab, args.json)
    if args.approve:
        sys.stdout.write(approve(lab, args.id, _now()) + "\n")
        return 0
    if args.dismiss:
        sys.stdout.write(dismiss(lab, args.id, _now()) + "\n")
        return 0
    suggestion = load(lab, args.id)
    if args.json:
        sys.stdout.write(json.dumps(msgspec.to_builtins(suggestion), indent=2) + "\n")
    else:
        sys.stdout.write(render(suggestion))
    return 0


def _list(lab: Path, as_json: bool) -> int:
    suggestions, problems = load_all(lab)
    requests, unreadable = load_requests(lab)
    if as_json:
        document = {
            "suggestions": [
                {"id": s.id, "status": s.status, "formula": s.formula_path, "summary": s.summary}
                for s in suggestions
            ],
            "learnRequests": [msgspec.to_builtins(r) for r in requests],
            "problems": problems + unreadable,
        }
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
        return 0
    for s in suggestions:
        sys.stdout.write(
            f"{s.id} {s.status:9} {s.created_at} {s.formula_path}: {one_line(s.summary, 120)}\n"
        )
    for line in pending_lines(lab) + problems + unreadable:
        sys.stdout.write(line + "\n")
    if not suggestions and not requests:
        sys.stdout.write(f"no suggestions or learn requests in {lab}\n")
    return 0
