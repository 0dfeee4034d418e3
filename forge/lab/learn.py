"""`forge learn`: run a Formula's learn atom over finished attempts and save its proposal.

The atom is an explicit command the Formula binds (`role: learn`, trailing); learn never binds
one. It reads the evidence (the Formula's exact YAML and each attempt's outcome, failed checks and
changes) as JSON on stdin and prints one JSON object: `summary`, `rationale`, `expectedImpact`,
`evaluation` and the complete proposed Formula `yaml`. Learn refuses, before running anything,
pending or invalid attempts, mixed Formula snapshots, damaged evidence, and a Formula file that
no longer holds the snapshot; after it, a proposal that is invalid or only cosmetic, and one made
while the Formula changed. A success is saved as a pending suggestion: never applied here.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import secrets
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from forge.attempt.command import MARKER_ENV, run_command
from forge.attempt.errors import LabRefusal
from forge.attempt.formula import decode_formula
from forge.attempt.strictjson import loads_object
from forge.clock import SYSTEM_CLOCK, Clock
from forge.lab.evidence import Finished, attempt_evidence, snapshot
from forge.lab.suggestions import (
    Evidence,
    EvidenceAttempt,
    RequestLink,
    Suggestion,
    cosmetic_problem,
    new_id,
    save,
    sha256_text,
)
from forge.untrusted import one_line

OUTPUT_CAP = 1 << 20
PROPOSAL_FIELDS = ("summary", "rationale", "expectedImpact", "evaluation", "yaml")
INPUT_ENV = "FORGE_LEARN_INPUT"
INSTRUCTIONS = (
    "Propose at most one small change to the Formula's process (how the next attempts will work "
    "differently), supported by the evidence; insufficient evidence is a valid finding.",
    "Separate what the records show from your interpretation; do not claim causality from one run.",
    "Keep every command binding, the learn atom and the checks unless the change is about them.",
    "Ticket-specific code instructions belong to a task, not to the Formula.",
    "Print one JSON object: summary, rationale, expectedImpact, evaluation, yaml (the complete "
    "proposed Formula).",
)


class LearnFailed(LabRefusal):
    """The learn command failed, timed out, or proposed something that cannot be saved."""


@dataclass(frozen=True)
class LearnJob:
    formula_path: Path
    attempts: list[Finished]
    request: RequestLink | None = None
    failure_class: str | None = None


def check_evidence(attempts: list[Finished]) -> str:
    """Refuse unusable attempts or mixed snapshots; the one Formula sha they share."""
    if not attempts:
        raise LabRefusal("learn needs at least one finished attempt")
    for item in attempts:
        if item.refusal is not None:
            raise LabRefusal(f"{item.attempt_dir}: {item.refusal}")
    shas = sorted({item.record.formula_sha256 for item in attempts})
    if len(shas) > 1:
        raise LabRefusal(
            "the attempts ran different Formula snapshots (" + ", ".join(shas) + "); learn reads "
            "one snapshot at a time (pick a variant with --variant)"
        )
    return shas[0]


async def learn(lab: Path, job: LearnJob, now: str, clock: Clock = SYSTEM_CLOCK) -> Suggestion:
    sha = check_evidence(job.attempts)
    pinned = snapshot(job.attempts[0].run_dir, sha)
    if pinned is None:
        raise LabRefusal(f"{job.attempts[0].run_dir}: the Formula snapshot {sha} is damaged")
    current = _read(job.formula_path)
    if hashlib.sha256(current).hexdigest() != sha:
        raise LabRefusal(
            f"{job.formula_path} no longer holds the Formula these attempts ran (snapshot {sha}, "
            f"file {hashlib.sha256(current).hexdigest()}); learn reads the current recipe's runs"
        )
    formula = decode_formula(current, file=str(job.formula_path))
    if formula.learn is None:
        raise LabRefusal(
            f"{job.formula_path} binds no learn atom: add a trailing atom with `role: learn` and "
            "its command (learn never configures one)"
        )
    document = {
        "schemaVersion": "v1",
        "instructions": list(INSTRUCTIONS),
        "formula": {"path": str(job.formula_path), "sha256": sha, "yaml": current.decode()},
        "failureClass": job.failure_class,
        "attempts": [attempt_evidence(item) for item in job.attempts],
    }
    proposal = await _run_atom(
        lab, formula.learn.command, formula.learn.timeout_ms, document, clock
    )
    proposed = proposal["yaml"].encode("utf-8")
    try:
        decode_formula(proposed, file="proposal")
    except LabRefusal as error:
        raise LearnFailed(f"the proposed Formula is not valid: {error}") from None
    if proposed == current:
        raise LearnFailed("the proposal is the current Formula unchanged")
    problem = cosmetic_problem(current, proposed)
    if problem is not None:
        raise LearnFailed(f"refused: {problem}; a proposal must change the process")
    if hashlib.sha256(_read(job.formula_path)).hexdigest() != sha:
        raise LabRefusal(f"{job.formula_path} changed while the learn command ran; nothing saved")
    suggestion = Suggestion(
        schema_version=1,
        id=new_id(),
        status="pending",
        created_at=now,
        formula_path=str(job.formula_path),
        original_sha256=sha,
        proposed_sha256=sha256_text(proposal["yaml"]),
        original_yaml=current.decode("utf-8"),
        proposed_yaml=proposal["yaml"],
        summary=proposal["summary"],
        rationale=proposal["rationale"],
        expected_impact=proposal["expectedImpact"],
        evaluation=proposal["evaluation"],
        evidence=Evidence(
            formula_sha256=sha,
            attempts=[
                EvidenceAttempt(
                    attempt_id=item.record.attempt_id,
                    path=str(item.attempt_dir),
                    outcome=str(item.record.outcome),
                )
                for item in job.attempts
            ],
        ),
        learn_command=list(formula.learn.command),
        request=job.request,
    )
    save(lab, suggestion)
    return suggestion


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as error:
        raise LabRefusal(f"the Formula {path} cannot be read: {error}") from None


async def _run_atom(
    lab: Path, argv: tuple[str, ...], timeout_ms: int, document: dict[str, Any], clock: Clock
) -> dict[str, str]:
    """Run the learn command in a private directory under a scrubbed environment."""
    nonce = secrets.token_hex(6)
    work = lab / "learn-work" / nonce
    home = work / "home"
    await asyncio.to_thread(home.mkdir, parents=True)
    data = (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode()
    await asyncio.to_thread((work / "input.json").write_bytes, data)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home)}
    for name in ("LANG", "TMPDIR"):
        if name in os.environ:
            env[name] = os.environ[name]
    env[INPUT_ENV] = str(work / "input.json")
    env[MARKER_ENV] = f"learn-{nonce}"
    try:
        result = await run_command(
            argv,
            cwd=work,
            env=env,
            timeout_s=timeout_ms / 1000,
            clock=clock,
            output_cap=OUTPUT_CAP,
            stdin=data,
        )
    finally:
        await asyncio.to_thread(shutil.rmtree, work, True)
    if result.start_error is not None:
        raise LearnFailed(f"the learn command could not start: {one_line(result.start_error)}")
    if result.timed_out:
        raise LearnFailed(f"the learn command timed out after {timeout_ms} ms")
    if not result.ok:
        tail = result.stderr.decode("utf-8", errors="replace")[-2000:]
        raise LearnFailed(f"the learn command exited {result.exit_code}: {one_line(tail)}")
    try:
        top = loads_object(result.stdout.strip(), file="learn command output", limit=OUTPUT_CAP)
    except LabRefusal as error:
        raise LearnFailed(one_line(str(error))) from None
    proposal: dict[str, str] = {}
    for name in PROPOSAL_FIELDS:
        value = top.get(name)
        if not isinstance(value, str) or not value.strip():
            raise LearnFailed(f"the learn command's output lacks a non-blank string {name!r}")
        proposal[name] = value
    return proposal
