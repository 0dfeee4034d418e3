"""Approval and `<out>`: the review text, the frozen inputs, and which runs may resume.

Before approval nothing is written. On approval the inputs are copied under `<out>/inputs/` (0400)
with a manifest of their pins, and `<out>/activation.json` is created exclusively; a later run
with the same digest resumes, a different digest is refused so retained evidence is never mixed.
"""

from __future__ import annotations

import json
import os
import shlex
from enum import Enum
from pathlib import Path
from typing import Any

from forge import __version__
from forge.attempt.agent_atom import KIND, describe
from forge.attempt.cohort import Cohort, sha256_hex
from forge.attempt.errors import LabRefusal, RunAborted
from forge.attempt.layout import COHORT_INPUT, INPUTS_DIR
from forge.files import write_atomic

ACTIVATION_FILE = "activation.json"
MANIFEST_FILE = "manifest.json"


def review_text(
    cohort: Cohort,
    *,
    source: str,
    out: str,
    digest: str,
    approve_argv: list[str],
    seal: list[str],
) -> str:
    """What a person reads before approving: what will run, where, and the exact command."""
    spec = cohort.spec
    lines = [
        f"Cohort: {spec.hypothesis}",
        f"Primary outcome: {spec.primary_outcome}",
        f"Source: {source}",
        f"Output: {out}",
        f"Repetitions: {spec.repetitions}; attempts: {len(spec.tasks) * spec.repetitions * 2}",
    ]
    if spec.stop.max_attempts is not None or spec.stop.max_cost_usd is not None:
        lines.append(
            f"Stop: maxAttempts={spec.stop.max_attempts} maxCostUSD={spec.stop.max_cost_usd}"
        )
    for variant in cohort.variants:
        atom = variant.formula.coding
        coding = (
            f"coding agent {KIND}"
            if atom.agent is not None
            else f"coding argv {json.dumps(list(atom.command))}"
        )
        lines.append(
            f"Variant {variant.spec.name}: {variant.spec.formula} ({variant.spec.formula_sha256}) "
            f"model {atom.model}, {coding}, "
            f"timeout {atom.timeout_ms} ms, network: {'true' if atom.network else 'false'}"
        )
        if atom.agent is not None:
            lines.append(f"  agent: {describe(atom.agent)}")
        if atom.egress:
            lines.append(f"  egress: {', '.join(atom.egress)}")
        if atom.pass_env:
            lines.append(f"  passEnv: {', '.join(atom.pass_env)}")
        for check in variant.formula.checks:
            lines.append(f"  baseline check {check.id}: {json.dumps(list(check.argv))}")
    for task in cohort.tasks:
        plan = task.plan
        lines.append(
            f"Task {task.spec.name}: {task.spec.plan} ({task.spec.plan_sha256}) "
            f"base {plan.base_commit}"
        )
        lines.append(f"  issue {task.task_file} ({task.task_sha256}): {task.issue.title}")
        lines.append(f"  hidden acceptance {task.acceptance_file} ({task.acceptance_sha256})")
        lines.append(f"  allowed files: {', '.join(plan.allowed_files)}")
        for command in plan.setup:
            lines.append(f"  setup {command.id}: {json.dumps(list(command.argv))} in {command.dir}")
        for check in plan.checks:
            lines.append(f"  required check {check.id}: {json.dumps(list(check.argv))}")
        if plan.candidate_test_files:
            lines.append(
                "  plan-has-protected-exemptions: " + ", ".join(sorted(plan.candidate_test_files))
            )
    lines += seal
    lines += [
        "",
        f"Activation digest: {digest}",
        "Nothing has been created or run. To run this cohort, approve it with:",
        "",
        "  " + shlex.join(approve_argv),
    ]
    return "\n".join(lines) + "\n"


class OutState(Enum):
    FRESH = "fresh"
    RESUME = "resume"


def check_out(out: Path, digest: str) -> OutState:
    """Fresh (absent or empty), resumable (same digest), or refused (anything else)."""
    if not out.exists():
        return OutState.FRESH
    if not out.is_dir():
        raise LabRefusal(f"--out {out} exists and is not a directory")
    activation = out / ACTIVATION_FILE
    if activation.is_file():
        try:
            recorded = json.loads(activation.read_text())["digest"]
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise LabRefusal(f"--out {out}: {ACTIVATION_FILE} is unreadable ({error})") from None
        if recorded != digest:
            raise LabRefusal(
                f"--out {out} holds a run with activation digest {recorded}, not {digest}; "
                "a different cohort cannot write into retained evidence: choose another --out"
            )
        return OutState.RESUME
    if any(out.iterdir()):
        raise LabRefusal(
            f"--out {out} is not empty and holds no {ACTIVATION_FILE}; "
            "choose an empty or new directory"
        )
    return OutState.FRESH


def activate(
    cohort: Cohort, *, out: Path, digest: str, source: str, out_text: str, now: str
) -> dict[str, Any]:
    """Copy the inputs (0400), write the manifest, then create activation.json exclusively."""
    inputs = out / INPUTS_DIR
    inputs.mkdir(parents=True, exist_ok=True)
    files = {COHORT_INPUT: cohort.raw, **cohort.files}
    for rel, data in files.items():
        target = inputs / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.exists():
            target.chmod(0o600)
        target.write_bytes(data)
        target.chmod(0o400)
    pins = cohort.pins()
    write_atomic(
        inputs / MANIFEST_FILE, (json.dumps(pins, indent=2, sort_keys=True) + "\n").encode()
    )
    record = {
        "schemaVersion": 1,
        "digest": digest,
        "approvedAt": now,
        "cohort": {"sha256": cohort.sha256, "hypothesis": cohort.spec.hypothesis},
        "source": source,
        "out": out_text,
        "inputs": pins,
        "forgeVersion": __version__,
    }
    data = (json.dumps(record, indent=2) + "\n").encode()
    fd = os.open(out / ACTIVATION_FILE, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    return record


def read_activation(out: Path) -> dict[str, Any]:
    record: dict[str, Any] = json.loads((out / ACTIVATION_FILE).read_text())
    return record


def verify_inputs(inputs: Path, pins: dict[str, str]) -> None:
    """Re-hash every frozen input against its pin; a mismatch aborts the run (C15)."""
    for rel, sha in sorted(pins.items()):
        try:
            data = (inputs / rel).read_bytes()
        except OSError:
            raise RunAborted(f"input changed: {rel} is missing") from None
        if sha256_hex(data) != sha:
            raise RunAborted(f"input changed: {rel}")
