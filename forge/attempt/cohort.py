"""The cohort file: two pinned Formula variants over pinned task plans, decoded strictly.

`decode_cohort` is pure (bytes in, a spec out). `load_cohort` reads every file the cohort names
(refusing symlinks, since a link target could change after pinning), checks each pin and decodes
the Formulas, plans, issues and acceptance scripts, so a loaded `Cohort` holds every byte the
activation digest covers and nothing is read again from the person's tree after approval.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import ParamSpec, TypeVar

from forge.attempt.agent_atom import system_prompt_text
from forge.attempt.errors import LabRefusal
from forge.attempt.fields import Reader
from forge.attempt.formula import Formula, decode_formula
from forge.attempt.plan import Issue, Plan, decode_issue, decode_plan
from forge.attempt.strictjson import loads_object

T = TypeVar("T")
P = ParamSpec("P")

COHORT_LIMIT = 65_536
"""A cohort file is at most 64 KiB, checked on the raw bytes before decoding."""

HYPOTHESIS_MAX_CHARS = 2000
MAX_TASKS = 50
MAX_REPETITIONS = 10
PRIMARY_OUTCOMES = ("hiddenAcceptancePassRate", "requiredChecksPassRate", "costPerAcceptedOutcome")
VARIANT_NAME_RE = re.compile(r"[a-z][a-z0-9-]{0,31}")
TASK_NAME_RE = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")


@dataclass(frozen=True)
class VariantSpec:
    name: str
    formula: str
    formula_sha256: str


@dataclass(frozen=True)
class TaskSpec:
    name: str
    plan: str
    plan_sha256: str


@dataclass(frozen=True)
class Stop:
    max_attempts: int | None = None
    max_cost_usd: float | None = None


@dataclass(frozen=True)
class CohortSpec:
    hypothesis: str
    primary_outcome: str
    variants: tuple[VariantSpec, VariantSpec]
    tasks: tuple[TaskSpec, ...]
    repetitions: int
    stop: Stop


def decode_cohort(raw: bytes, *, file: str, reader: Reader | None = None) -> CohortSpec:
    """Decode the cohort's bytes (strict JSON, 64 KiB) or refuse naming every faulty field.

    With a `reader`, problems are left in it for the caller to list with its own (stand-ins fill
    the spec); without, they are refused here."""
    own = reader is None
    reader = reader or Reader(file)
    top = reader.obj(
        loads_object(raw, file=file, limit=COHORT_LIMIT),
        "",
        required={
            "schemaVersion",
            "hypothesis",
            "primaryOutcome",
            "variants",
            "tasks",
            "repetitions",
        },
        optional={"stop"},
    )
    reader.integer(top["schemaVersion"], "schemaVersion", lo=1, hi=1)
    hypothesis = reader.nonblank(top["hypothesis"], "hypothesis", max_chars=HYPOTHESIS_MAX_CHARS)
    primary = reader.one_of(top["primaryOutcome"], "primaryOutcome", PRIMARY_OUTCOMES)
    variant_items = reader.array(top["variants"], "variants", lo=2, hi=2)
    variants = [_variant(reader, item, f"variants[{i}]") for i, item in enumerate(variant_items)]
    variants += [VariantSpec("", "", "")] * (2 - len(variants))
    reader.unique([v.name for v in variants], "variants", "name")
    task_items = reader.array(top["tasks"], "tasks", lo=1, hi=MAX_TASKS)
    tasks = tuple(_task(reader, item, f"tasks[{i}]") for i, item in enumerate(task_items))
    reader.unique([t.name for t in tasks], "tasks", "name")
    repetitions = reader.integer(top["repetitions"], "repetitions", lo=1, hi=MAX_REPETITIONS)
    stop = Stop()
    if "stop" in top:
        stop_obj = reader.obj(
            top["stop"], "stop", required=(), optional={"maxAttempts", "maxCostUSD"}
        )
        stop = Stop(
            max_attempts=(
                reader.integer(stop_obj["maxAttempts"], "stop.maxAttempts", lo=1)
                if "maxAttempts" in stop_obj
                else None
            ),
            max_cost_usd=(
                reader.positive_number(stop_obj["maxCostUSD"], "stop.maxCostUSD")
                if "maxCostUSD" in stop_obj
                else None
            ),
        )
    if own:
        reader.check()
    return CohortSpec(
        hypothesis=hypothesis,
        primary_outcome=primary,
        variants=(variants[0], variants[1]),
        tasks=tasks,
        repetitions=repetitions,
        stop=stop,
    )


def _variant(reader: Reader, value: object, path: str) -> VariantSpec:
    item = reader.obj(value, path, required={"name", "formula", "formulaSha256"})
    return VariantSpec(
        name=reader.matching(item["name"], f"{path}.name", VARIANT_NAME_RE),
        formula=reader.clean_path(item["formula"], f"{path}.formula"),
        formula_sha256=reader.sha256(item["formulaSha256"], f"{path}.formulaSha256"),
    )


def _task(reader: Reader, value: object, path: str) -> TaskSpec:
    item = reader.obj(value, path, required={"name", "plan", "planSha256"})
    return TaskSpec(
        name=reader.matching(item["name"], f"{path}.name", TASK_NAME_RE),
        plan=reader.clean_path(item["plan"], f"{path}.plan"),
        plan_sha256=reader.sha256(item["planSha256"], f"{path}.planSha256"),
    )


@dataclass(frozen=True)
class Variant:
    spec: VariantSpec
    formula: Formula


@dataclass(frozen=True)
class Task:
    spec: TaskSpec
    plan: Plan
    issue: Issue
    task_file: str
    """The issue file, cohort-relative."""
    task_sha256: str
    acceptance_file: str
    """The hidden acceptance script, cohort-relative."""
    acceptance_sha256: str


@dataclass(frozen=True)
class Cohort:
    spec: CohortSpec
    raw: bytes
    sha256: str
    variants: tuple[Variant, Variant]
    tasks: tuple[Task, ...]
    files: dict[str, bytes]
    """Every referenced file by cohort-relative path: `<out>/inputs/` holds these."""

    def pins(self) -> dict[str, str]:
        """Cohort-relative path -> sha256 of every input, the cohort itself as `cohort.json`."""
        pins = {"cohort.json": self.sha256}
        pins.update({path: sha256_hex(data) for path, data in self.files.items()})
        return pins


def load_cohort(cohort_path: Path) -> Cohort:
    """Read and check the cohort and every file it names; refuse once, naming every field at
    fault (a file that cannot be read or decoded is skipped, its problems listed)."""
    file = str(cohort_path)
    raw = read_regular(cohort_path.parent, cohort_path.name, what=file)
    reader = Reader(file)
    spec = decode_cohort(raw, file=file, reader=reader)
    base = cohort_path.parent
    files: dict[str, bytes] = {}

    def pinned(rel: str, sha: str, field: str) -> bytes | None:
        if reader.failed(field.rsplit(".", 1)[0]):
            return None
        try:
            data = read_regular(base, rel, what=f"{file}: {field}")
        except LabRefusal as refusal:
            reader.absorb(refusal)
            return None
        if sha256_hex(data) != sha:
            reader.note(
                field, f"sha256 mismatch for {rel}: pinned {sha}, file has {sha256_hex(data)}"
            )
            return None
        files[rel] = data
        return data

    def decoded(decode: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T | None:
        try:
            return decode(*args, **kwargs)
        except LabRefusal as refusal:
            reader.absorb(refusal)
            return None

    variants: list[Variant] = []
    for index, vspec in enumerate(spec.variants):
        data = pinned(vspec.formula, vspec.formula_sha256, f"variants[{index}].formulaSha256")
        formula = None if data is None else decoded(decode_formula, data, file=vspec.formula)
        if formula is not None:
            formula = _with_prompt_file(base, vspec.formula, formula, files, reader)
        if formula is not None:
            variants.append(Variant(vspec, formula))
    if len(variants) == 2 and variants[0].spec.formula_sha256 == variants[1].spec.formula_sha256:
        reader.note(
            "variants", "both variants pin the same Formula bytes; a comparison needs two recipes"
        )
    tasks: list[Task] = []
    for index, tspec in enumerate(spec.tasks):
        data = pinned(tspec.plan, tspec.plan_sha256, f"tasks[{index}].planSha256")
        plan = None if data is None else decoded(decode_plan, data, file=tspec.plan)
        if plan is None:
            continue
        task = decoded(_task_files, base, tspec, plan, files)
        if task is not None:
            tasks.append(task)
    reader.check()
    return Cohort(
        spec=spec,
        raw=raw,
        sha256=sha256_hex(raw),
        variants=(variants[0], variants[1]),
        tasks=tuple(tasks),
        files=files,
    )


def _with_prompt_file(
    base: Path, formula_file: str, formula: Formula, files: dict[str, bytes], reader: Reader
) -> Formula | None:
    """A `claude-code` atom's `systemPromptFile` (Formula-relative) read into its system prompt
    and kept with the inputs, so the digest and every attempt's re-hash cover it."""
    agent = formula.coding.agent
    if agent is None or agent.system_prompt_file is None:
        return formula
    rel = posixpath.join(posixpath.dirname(formula_file), agent.system_prompt_file)
    field = "atoms[0].systemPromptFile"
    own = Reader(formula_file)
    try:
        text = read_regular(base, rel, what=f"{formula_file}: {field}").decode("utf-8")
    except LabRefusal as refusal:
        own.absorb(refusal)
    except UnicodeDecodeError:
        own.note(field, f"{rel} is not UTF-8 text")
    else:
        system_prompt_text(own, text, f"{field} ({rel})")
    if own.problems:
        reader.problems.extend(own.problems)
        return None
    files[rel] = text.encode("utf-8")
    coding = replace(formula.coding, agent=replace(agent, system_prompt=text))
    return replace(formula, coding=coding)


def _task_files(base: Path, spec: TaskSpec, plan: Plan, files: dict[str, bytes]) -> Task:
    """A plan's issue and acceptance script (plan-relative), read and kept with the inputs."""
    plan_dir = posixpath.dirname(spec.plan)
    task_file = posixpath.join(plan_dir, plan.task)
    acceptance_file = posixpath.join(plan_dir, plan.acceptance)
    issue_bytes = read_regular(base, task_file, what=f"{spec.plan}: task")
    acceptance_bytes = read_regular(base, acceptance_file, what=f"{spec.plan}: acceptance")
    issue = decode_issue(issue_bytes, file=task_file)
    files[task_file] = issue_bytes
    files[acceptance_file] = acceptance_bytes
    return Task(
        spec=spec,
        plan=plan,
        issue=issue,
        task_file=task_file,
        task_sha256=sha256_hex(issue_bytes),
        acceptance_file=acceptance_file,
        acceptance_sha256=sha256_hex(acceptance_bytes),
    )


def read_regular(base: Path, rel: str, *, what: str) -> bytes:
    """Read `base/rel`, refusing a missing file, a non-regular file or a symlink on the way."""
    current = base
    parts = rel.split("/")
    for index, part in enumerate(parts):
        current = current / part
        try:
            mode = os.lstat(current).st_mode
        except FileNotFoundError:
            raise LabRefusal(f"{what}: {rel} does not exist") from None
        if stat.S_ISLNK(mode):
            raise LabRefusal(f"{what}: {rel} goes through a symbolic link; pin real files")
        if index < len(parts) - 1 and not stat.S_ISDIR(mode):
            raise LabRefusal(f"{what}: {rel} is not under a directory")
    if not stat.S_ISREG(os.lstat(current).st_mode):
        raise LabRefusal(f"{what}: {rel} is not a regular file")
    return current.read_bytes()


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
