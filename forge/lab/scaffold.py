"""`forge evaluate init` and `forge evaluate pin`: a starter cohort, and pins after an edit.

`init` writes a cohort that previews and runs as written (its Formula stubs run a placeholder
recipe that changes nothing), so a person edits a working cohort rather than a blank page. `pin`
rewrites the sha256 pins a person would otherwise compute by hand; it approves nothing, since
the activation digest still covers every byte.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path
from typing import Any

from forge.attempt.checkouts import inspect_source, list_files
from forge.attempt.cohort import TASK_NAME_RE, load_cohort, read_regular, sha256_hex
from forge.attempt.errors import LabRefusal, refusal
from forge.attempt.fields import clean_path_problem
from forge.attempt.plan import is_test_file
from forge.attempt.strictjson import loads_object
from forge.files import write_atomic
from forge.git import GitError, resolve_commit
from forge.lab.evaluate import absolute

COHORT_FILE = "cohort.json"
TIMEOUT_MS = 600_000

PLACEHOLDER_RECIPE = (
    "cat >/dev/null; "
    'echo \'{"schemaVersion": "v1", "outcome": "no-change", "usage": {"model": "%s"}}\''
)
"""Reads the task, changes nothing, reports `no-change`: replace it with your harness."""

FORMULA_STUB = """\
# A Formula: the recipe one variant runs. docs/lab.md describes every field.
schemaVersion: 1
name: {name}
atoms:
  - id: code
    role: coding
    # The coding harness: reads the task JSON on stdin, edits the workspace (its cwd) and
    # prints one JSON report on stdout. This placeholder changes nothing: replace it.
    command: {command}
    timeoutMs: {timeout}
    # The model this variant pins; the harness gets it as FORGE_MODEL.
    model: {model}
    # The recipe runs without network unless this is true (shown when you approve).
    network: false
# Checks this recipe adds to every task's required checks (same form as a plan's).
checks: []
"""


def _write_new(folder: Path, rel: str, data: bytes, mode: int = 0o644) -> None:
    target = folder / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    target.chmod(mode)


def _json(document: Any) -> bytes:
    return (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode()


def _sha(path: Path) -> str:
    return sha256_hex(path.read_bytes())


def _shell_check(index: int, command: str) -> dict[str, Any]:
    return {
        "id": f"check-{index + 1}",
        "argv": ["/bin/sh", "-c", command],
        "category": "test",
        "timeoutMs": TIMEOUT_MS,
    }


async def init(args: argparse.Namespace) -> int:
    """Write plan, issue stub, acceptance script, two Formula stubs and a pinned cohort."""
    out = absolute(args.out)
    problems = []
    if TASK_NAME_RE.fullmatch(args.task) is None:
        problems.append(f"--task must match {TASK_NAME_RE.pattern}, got {args.task!r}")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        problems.append(f"--out {out} exists and is not an empty directory")
    for path in args.allowed or []:
        problem = clean_path_problem(path)
        if problem is not None:
            problems.append(f"--allowed {path!r}: {problem}")
    source = await inspect_source(absolute(args.source))
    try:
        base = await resolve_commit(Path(source.toplevel), args.base)
    except GitError:
        problems.append(f"--base {args.base} is not a commit in {source.toplevel}")
        base = ""
    if problems:
        raise refusal(problems)
    allowed = args.allowed or [
        p for p in await list_files(Path(source.toplevel), base) if not is_test_file(p)
    ]
    task = args.task
    plan = {
        "schemaVersion": 1,
        "task": "issue.json",
        "acceptance": "acceptance.sh",
        "baseCommit": base,
        "allowedFiles": allowed,
        "setup": [],
        "checks": [_shell_check(i, c) for i, c in enumerate(args.check or [])],
    }
    issue = {
        "title": "Describe the task in one line (what the recipe is asked to do)",
        "body": "The issue as the recipe sees it: what is wrong, what is expected. "
        "Never the fix, never the hidden acceptance.",
    }
    acceptance = (
        "#!/bin/sh\n# The hidden acceptance, run in the candidate tree; exit 0 = accepted.\n"
        f"set -e\n{args.acceptance}\n"
    )
    out.mkdir(parents=True, exist_ok=True)
    _write_new(out, f"{task}/plan.json", _json(plan))
    _write_new(out, f"{task}/issue.json", _json(issue))
    _write_new(out, f"{task}/acceptance.sh", acceptance.encode(), 0o755)
    for name, model in (("a", "model-a"), ("b", "model-b")):
        command = json.dumps(["/bin/sh", "-c", PLACEHOLDER_RECIPE % model])
        stub = FORMULA_STUB.format(name=name, command=command, timeout=TIMEOUT_MS, model=model)
        _write_new(out, f"{name}.yaml", stub.encode())
    cohort = {
        "schemaVersion": 1,
        "hypothesis": "What you expect variant b to do better than variant a, and why",
        "primaryOutcome": "hiddenAcceptancePassRate",
        "variants": [
            {"name": n, "formula": f"{n}.yaml", "formulaSha256": _sha(out / f"{n}.yaml")}
            for n in ("a", "b")
        ],
        "tasks": [
            {
                "name": task,
                "plan": f"{task}/plan.json",
                "planSha256": _sha(out / task / "plan.json"),
            }
        ],
        "repetitions": 1,
    }
    _write_new(out, COHORT_FILE, _json(cohort))
    load_cohort(out / COHORT_FILE)
    cohort_arg = shlex.quote(str(Path(args.out) / COHORT_FILE))
    sys.stdout.write(
        f"Wrote a starter cohort in {out}:\n"
        f"  {COHORT_FILE}, a.yaml, b.yaml, {task}/plan.json, {task}/issue.json, "
        f"{task}/acceptance.sh\n"
        f"Edit the issue, the Formulas' commands and models, then re-pin and preview:\n"
        f"  forge evaluate pin {cohort_arg}\n"
        f"  forge evaluate --cohort {cohort_arg} --source {shlex.quote(args.source)} "
        "--out RESULTS\n"
    )
    return 0


def _repin(
    document: dict[str, Any], base: Path, key: str, path_key: str, sha_key: str, file: str
) -> tuple[list[str], list[str]]:
    """Recompute one list's pins in place: (changes, problems)."""
    changes: list[str] = []
    problems: list[str] = []
    items = document.get(key)
    if not isinstance(items, list):
        return changes, [f"{file}: {key}: must be an array"]
    for index, item in enumerate(items):
        where = f"{key}[{index}]"
        rel = item.get(path_key) if isinstance(item, dict) else None
        if not isinstance(rel, str) or clean_path_problem(rel) is not None:
            problems.append(f"{file}: {where}.{path_key}: not a clean relative path: {rel!r}")
            continue
        try:
            sha = sha256_hex(read_regular(base, rel, what=f"{file}: {where}.{path_key}"))
        except LabRefusal as refusal:
            problems.append(str(refusal))
            continue
        old = item.get(sha_key)
        if old != sha:
            item[sha_key] = sha
            changes.append(f"{where}.{sha_key} ({rel}): {old} -> {sha}")
    return changes, problems


def pin(cohort_arg: str) -> int:
    """Rewrite the cohort's pins from the files they name; list what changed."""
    path = absolute(cohort_arg)
    file = str(path)
    raw = read_regular(path.parent, path.name, what=file)
    document = loads_object(raw, file=file, limit=1 << 20)
    changes: list[str] = []
    problems: list[str] = []
    for key, path_key, sha_key in (
        ("variants", "formula", "formulaSha256"),
        ("tasks", "plan", "planSha256"),
    ):
        found, wrong = _repin(document, path.parent, key, path_key, sha_key, file)
        changes += found
        problems += wrong
    if problems:
        raise refusal(problems)
    if changes:
        write_atomic(path, _json(document))
        sys.stdout.write(f"Re-pinned {file}:\n" + "".join(f"  {c}\n" for c in changes))
    else:
        sys.stdout.write(f"Every pin in {file} is current.\n")
    load_cohort(path)
    sys.stdout.write(
        "Pinning approves nothing: preview again for the new activation digest "
        "(issue and acceptance files are covered by the digest, not by a pin).\n"
    )
    return 0
