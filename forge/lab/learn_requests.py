"""Learn requests: a recurring failure queues one durable request; `forge learn --pending` runs it.

After every `forge evaluate --cohort` run the Lab reads its most recent finished records; when
the newest records of a variant's current Formula show one failure class `threshold` times in a
row (`learning.recurrenceThreshold`, default 3), and the Formula binds a learn atom, it writes one
request under `learn-requests/` (else it prints one line recommending one). Nothing here starts
the learn command except `run_pending`. The rules, all under the Lab's learn lock:
- a class never fires again for the same Formula bytes while a request or a suggestion from it is
  pending (or that suggestion cannot be read);
- after a dismissal, or a failed learn run, it fires again only on `threshold` new occurrences
  (records no earlier request used); a failed request is retired as superseded before the fresh
  one is written, so a crash never leaves two pending requests for one class;
- a Formula change retires the old Formula's pending requests as stale;
- `run_pending` writes an intent (a random nonce) on the request before it runs the command; after
  a crash the next run adopts the suggestion that run saved, and only runs the command again when
  there is none;
- the directory stays bounded: at most 20 terminal requests, and no run lock of a finished one.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from pathlib import Path

import msgspec

from forge.attempt.cohort import Cohort
from forge.attempt.errors import LabRefusal
from forge.attempt.formula import decode_formula
from forge.clock import SYSTEM_CLOCK, Clock
from forge.files import write_atomic
from forge.lab.evidence import Finished, finished_attempt, recent_finished
from forge.lab.labstate import RegisteredFormula, lab_dir, locked, register_run
from forge.lab.learn import LearnJob, learn
from forge.lab.learnhold import hold
from forge.lab.recurrence import CLASSES, Entry, streak
from forge.lab.suggestions import EvidenceAttempt, RequestLink, Suggestion, load, load_all
from forge.untrusted import one_line

REQUESTS_DIR = "learn-requests"
LEARN_LOCK = "learn.lock"
KEEP_TERMINAL = 20


class Intent(msgspec.Struct, rename="camel", kw_only=True):
    nonce: str
    started_at: str


class LearnRequest(msgspec.Struct, rename="camel", kw_only=True):
    schema_version: int
    id: str
    failure_class: str = msgspec.field(name="class")
    formula_path: str
    formula_sha256: str
    attempts: list[EvidenceAttempt]
    created_at: str
    status: str
    """`pending`, `done` (a suggestion was saved), `stale` (the Formula changed) or `superseded`."""
    last_error: str | None = None
    failed_at: str | None = None
    suggestion: str | None = None
    intent: Intent | None = None
    retired_at: str | None = None


def _dir(lab: Path) -> Path:
    return lab / REQUESTS_DIR


def _save(lab: Path, request: LearnRequest) -> None:
    data = msgspec.json.format(msgspec.json.encode(request), indent=2) + b"\n"
    write_atomic(_dir(lab) / f"{request.id}.json", data)


def load_requests(lab: Path) -> tuple[list[LearnRequest], list[str]]:
    found: list[LearnRequest] = []
    problems: list[str] = []
    for path in sorted(_dir(lab).glob("lr-*.json")):
        try:
            found.append(msgspec.json.decode(path.read_bytes(), type=LearnRequest))
        except (OSError, msgspec.DecodeError, msgspec.ValidationError) as error:
            problems.append(f"skipped an unreadable learn request {path.name}: {error}")
    found.sort(key=lambda r: (r.created_at, r.id))
    return found, problems


@dataclass(frozen=True)
class CurrentFormula:
    path: str
    sha256: str
    threshold: int
    learn_bound: bool


def current_formula(path: str) -> CurrentFormula | str:
    """The Formula file as it is now, or why it cannot be read."""
    try:
        raw = Path(path).read_bytes()
        formula = decode_formula(raw, file=path)
    except (OSError, LabRefusal) as error:
        return f"the Formula {path} cannot be read: {error}"
    return CurrentFormula(
        path=path,
        sha256=hashlib.sha256(raw).hexdigest(),
        threshold=formula.recurrence_threshold,
        learn_bound=formula.learn is not None,
    )


def report_after_run(cohort: Cohort, cohort_file: Path, out: Path, now: str) -> list[str]:
    """What `forge evaluate --cohort` shows after a run; a failure here is one line, never an
    exit code (the learning rules must not change how a run ends)."""
    formulas = [
        RegisteredFormula(
            variant=v.spec.name,
            path=str((cohort_file.parent / v.spec.formula).resolve()),
            sha256=v.spec.formula_sha256,
        )
        for v in cohort.variants
    ]
    try:
        return after_run(lab_dir(), out, formulas, now)
    except (OSError, LabRefusal, ValueError, msgspec.MsgspecError) as error:
        return [f"the learning rules were not evaluated: {error}"]


def after_run(lab: Path, out: Path, formulas: list[RegisteredFormula], now: str) -> list[str]:
    """Register the run, evaluate the recurrence rules for its Formulas; lines to show."""
    register_run(lab, out, formulas)
    lines: list[str] = []
    with locked(lab / LEARN_LOCK):
        finished, problems = recent_finished(lab)
        requests, unreadable = load_requests(lab)
        lines += problems + unreadable
        for path in sorted({f.path for f in formulas}):
            formula = current_formula(path)
            if isinstance(formula, str):
                lines.append(formula)
                continue
            lines += _evaluate(lab, formula, finished, requests, now, out)
        _prune(lab)
    return lines + pending_lines(lab)


def _evaluate(
    lab: Path,
    formula: CurrentFormula,
    finished: list[Finished],
    requests: list[LearnRequest],
    now: str,
    out: Path,
) -> list[str]:
    lines: list[str] = []
    this_run = {f.record.attempt_id for f in finished if f.run_dir.resolve() == out.resolve()}
    for request in requests:
        stale = request.formula_path == formula.path and request.formula_sha256 != formula.sha256
        if stale and request.status == "pending":
            _retire(lab, request, "stale", now)
    entries = [
        Entry(f.record, f.refusal) for f in finished if f.record.formula_sha256 == formula.sha256
    ]
    for failure_class in CLASSES:
        mine = [
            r
            for r in requests
            if r.formula_path == formula.path
            and r.formula_sha256 == formula.sha256
            and r.failure_class == failure_class
        ]
        if _blocked(lab, mine):
            continue
        used = {a.attempt_id for r in mine for a in r.attempts}
        ids = streak(entries, failure_class, formula.threshold, used)
        if ids is None:
            continue
        if not formula.learn_bound:
            if notice := _recurring_notice(failure_class, formula.path, ids, this_run):
                lines.append(notice)
            continue
        for old in mine:
            if old.status == "pending":
                _retire(lab, old, "superseded", now)
        request = _new_request(failure_class, formula, ids, finished, now)
        _save(lab, request)
        requests.append(request)
        lines.append(
            f"queued learn request {request.id}: {failure_class} {len(ids)} times in a row in "
            f"{formula.path}; run `forge learn --pending`"
        )
    return lines


def _recurring_notice(
    failure_class: str, formula_path: str, ids: list[str], this_run: set[str]
) -> str | None:
    """The end-of-run line for a streak with no learn atom to hand it to: this run's attempts
    by id, earlier runs' counted; nothing when this run added none (an earlier run said it)."""
    mine = [i for i in ids if i in this_run]
    if not mine:
        return None
    earlier = len(ids) - len(mine)
    also = f" (and {earlier} attempt(s) of earlier runs)" if earlier else ""
    return (
        f"recurring failure {failure_class} in {formula_path}: {', '.join(mine)}{also}; bind a "
        "trailing `role: learn` atom in that Formula to queue a learn request"
    )


def _blocked(lab: Path, mine: list[LearnRequest]) -> bool:
    """A pending request that has not failed, or a request's suggestion awaiting review (or
    unreadable) holds the class."""
    for request in mine:
        if request.status == "pending" and request.last_error is None:
            return True
        if request.status == "done" and request.suggestion is not None:
            try:
                if load(lab, request.suggestion).status == "pending":
                    return True
            except LabRefusal:
                return True
    return False


def _new_request(
    failure_class: str, formula: CurrentFormula, ids: list[str], finished: list[Finished], now: str
) -> LearnRequest:
    by_id = {f.record.attempt_id: f for f in finished}
    key = "\0".join([failure_class, formula.path, formula.sha256, *ids])
    return LearnRequest(
        schema_version=1,
        id=f"lr-{hashlib.sha256(key.encode()).hexdigest()[:12]}",
        failure_class=failure_class,
        formula_path=formula.path,
        formula_sha256=formula.sha256,
        attempts=[
            EvidenceAttempt(
                attempt_id=i,
                path=str(by_id[i].attempt_dir),
                outcome=str(by_id[i].record.outcome),
            )
            for i in ids
        ],
        created_at=now,
        status="pending",
    )


def _retire(lab: Path, request: LearnRequest, status: str, now: str) -> None:
    request.status = status
    request.retired_at = now
    request.intent = None
    _save(lab, request)


def _prune(lab: Path) -> None:
    """Keep the newest 20 terminal requests; drop the run locks of requests no longer pending."""
    requests, _ = load_requests(lab)
    terminal = [r for r in requests if _terminal(r, requests)]
    for request in terminal[: max(0, len(terminal) - KEEP_TERMINAL)]:
        (_dir(lab) / f"{request.id}.json").unlink(missing_ok=True)
    for request in requests:
        if request.status != "pending":
            (_dir(lab) / f"{request.id}.lock").unlink(missing_ok=True)


def _terminal(request: LearnRequest, requests: list[LearnRequest]) -> bool:
    """Stale, superseded, or done and replaced by a newer request of its class and Formula."""
    if request.status in ("stale", "superseded"):
        return True
    return request.status == "done" and any(
        other.created_at > request.created_at
        and other.failure_class == request.failure_class
        and other.formula_path == request.formula_path
        for other in requests
    )


def pending_lines(lab: Path) -> list[str]:
    """Pending requests and the suggestions saved from requests that await review."""
    requests, _ = load_requests(lab)
    lines = []
    for request in requests:
        if request.status == "pending":
            failed = f" (last run failed: {request.last_error})" if request.last_error else ""
            lines.append(
                f"learn request {request.id} pending: {request.failure_class} in "
                f"{request.formula_path}{failed}; run `forge learn --pending`"
            )
        elif request.status == "done" and request.suggestion is not None:
            try:
                status = load(lab, request.suggestion).status
            except LabRefusal:
                continue
            if status == "pending":
                lines.append(
                    f"suggestion {request.suggestion} (from learn request {request.id}) awaits "
                    f"review: forge suggestion {request.suggestion}"
                )
    return lines


@dataclass
class PendingOutcome:
    lines: list[str]
    ok: bool


async def run_pending(lab: Path, now: str, clock: Clock = SYSTEM_CLOCK) -> PendingOutcome:
    """Run every pending request once through the normal learn path."""
    outcome = PendingOutcome([], True)
    with locked(lab / LEARN_LOCK):
        requests, problems = load_requests(lab)
        outcome.lines += problems
        for request in requests:
            if request.status != "pending":
                continue
            formula = current_formula(request.formula_path)
            if isinstance(formula, str) or formula.sha256 != request.formula_sha256:
                _retire(lab, request, "stale", now)
                outcome.lines.append(f"learn request {request.id} is stale: its Formula changed")
        pending = [r.id for r in load_requests(lab)[0] if r.status == "pending"]
    for request_id in pending:
        with locked(_dir(lab) / f"{request_id}.lock", blocking=False) as mine:
            if not mine:
                outcome.lines.append(f"learn request {request_id} is being run by another process")
                continue
            await _run_one(lab, request_id, now, clock, outcome)
        with locked(lab / LEARN_LOCK):
            _prune(lab)
    return outcome


async def _run_one(
    lab: Path, request_id: str, now: str, clock: Clock, outcome: PendingOutcome
) -> None:
    request = msgspec.json.decode(
        (_dir(lab) / f"{request_id}.json").read_bytes(), type=LearnRequest
    )
    if request.status != "pending":
        return
    if request.intent is not None:
        adopted = _saved_by(lab, request, request.intent.nonce)
        if adopted is not None:
            _done(lab, request, adopted)
            outcome.lines.append(
                f"learn request {request.id}: adopted suggestion {adopted.id}, which the "
                "interrupted run saved (the learn command was not run again)"
            )
            return
    nonce = secrets.token_hex(8)
    request.intent = Intent(nonce=nonce, started_at=now)
    _save(lab, request)
    try:
        attempts = [finished_attempt(Path(a.path)) for a in request.attempts]
        suggestion = await learn(
            lab,
            LearnJob(
                formula_path=Path(request.formula_path),
                attempts=attempts,
                request=RequestLink(id=request.id, nonce=nonce),
                failure_class=request.failure_class,
            ),
            now,
            clock,
        )
    except LabRefusal as error:
        request.intent = None
        request.last_error = one_line(str(error), 300)
        request.failed_at = now
        _save(lab, request)
        outcome.ok = False
        outcome.lines.append(f"learn request {request.id} failed: {request.last_error}")
        return
    hold("pending-saved")
    _done(lab, request, suggestion)
    outcome.lines.append(
        f"learn request {request.id}: saved suggestion {suggestion.id}; review it with "
        f"`forge suggestion {suggestion.id}`"
    )


def _saved_by(lab: Path, request: LearnRequest, nonce: str) -> Suggestion | None:
    """The suggestion the interrupted run saved for exactly this request's attempts and Formula."""
    wanted = [a.attempt_id for a in request.attempts]
    for suggestion in load_all(lab)[0]:
        link = suggestion.request
        if (
            link is not None
            and link.id == request.id
            and link.nonce == nonce
            and suggestion.original_sha256 == request.formula_sha256
            and [a.attempt_id for a in suggestion.evidence.attempts] == wanted
        ):
            return suggestion
    return None


def _done(lab: Path, request: LearnRequest, suggestion: Suggestion) -> None:
    request.status = "done"
    request.suggestion = suggestion.id
    request.intent = None
    request.last_error = None
    _save(lab, request)
