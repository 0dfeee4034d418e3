"""Suggestions: a learn proposal saved for a person's review, and the decision on it.

A suggestion holds the process change and its evidence, both exact YAML texts and their hashes.
`approve` replaces the Formula only if it still has the bytes the suggestion was made from (a
stale one is refused naming both hashes), under the Lab's Formula write lock, through an intent
file: a process that dies between the intent and the recorded decision is finished by the next
`approve` (or refused if someone else changed the Formula meanwhile). `dismiss` keeps the recipe.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import secrets
from pathlib import Path

import msgspec

from forge.attempt.errors import LabRefusal
from forge.attempt.formula import load_yaml
from forge.files import write_atomic
from forge.lab.labstate import locked
from forge.lab.learnhold import hold
from forge.untrusted import one_line, prose

SUGGESTIONS_DIR = "suggestions"
FORMULA_LOCK = "formula.lock"
MISSING = "(missing)"


class EvidenceAttempt(msgspec.Struct, rename="camel", kw_only=True):
    attempt_id: str
    path: str
    outcome: str


class Evidence(msgspec.Struct, rename="camel", kw_only=True):
    formula_sha256: str
    attempts: list[EvidenceAttempt]


class RequestLink(msgspec.Struct, rename="camel", kw_only=True):
    """The learn request a pending run saved this suggestion for, and that run's nonce."""

    id: str
    nonce: str


class Suggestion(msgspec.Struct, rename="camel", kw_only=True):
    schema_version: int
    id: str
    status: str
    """`pending`, `approved` or `dismissed`."""
    created_at: str
    reviewed_at: str | None = None
    formula_path: str
    original_sha256: str
    proposed_sha256: str
    original_yaml: str
    proposed_yaml: str
    summary: str
    rationale: str | None = None
    expected_impact: str | None = None
    evaluation: str | None = None
    evidence: Evidence
    learn_command: list[str]
    request: RequestLink | None = None


def new_id() -> str:
    return f"sg-{secrets.token_hex(6)}"


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def cosmetic_problem(original: bytes, proposed: bytes) -> str | None:
    """Why a proposal changes nothing a run would do, or None when it does.

    Structural: both parse to the same document (whitespace, comments, key order), or differ
    only in the Formula's `name` (metadata). A person still judges whether the change is useful.
    """
    before, after = load_yaml(original, file="formula"), load_yaml(proposed, file="proposal")
    if before == after:
        return "the proposal only changes whitespace, comments or key order"
    if isinstance(before, dict) and isinstance(after, dict):
        strip = {k: v for k, v in before.items() if k != "name"}
        if strip == {k: v for k, v in after.items() if k != "name"}:
            return "the proposal only changes metadata (the Formula's name)"
    return None


def path_of(lab: Path, suggestion_id: str) -> Path:
    if not suggestion_id.startswith("sg-") or not suggestion_id[3:].isalnum():
        raise LabRefusal(f"{suggestion_id!r} is not a suggestion id (sg-...)")
    return lab / SUGGESTIONS_DIR / f"{suggestion_id}.json"


def intent_of(lab: Path, suggestion_id: str) -> Path:
    return lab / SUGGESTIONS_DIR / f"{suggestion_id}.approving.json"


def save(lab: Path, suggestion: Suggestion) -> None:
    write_atomic(path_of(lab, suggestion.id), _encode(suggestion))


def load(lab: Path, suggestion_id: str) -> Suggestion:
    path = path_of(lab, suggestion_id)
    try:
        suggestion = msgspec.json.decode(path.read_bytes(), type=Suggestion)
    except FileNotFoundError:
        raise LabRefusal(f"no suggestion {suggestion_id} in {lab}") from None
    except (OSError, msgspec.DecodeError, msgspec.ValidationError) as error:
        raise LabRefusal(f"suggestion {suggestion_id} cannot be read: {error}") from None
    if sha256_text(suggestion.original_yaml) != suggestion.original_sha256:
        raise LabRefusal(f"suggestion {suggestion_id} is damaged: the original YAML's hash differs")
    if sha256_text(suggestion.proposed_yaml) != suggestion.proposed_sha256:
        raise LabRefusal(f"suggestion {suggestion_id} is damaged: the proposed YAML's hash differs")
    return suggestion


def load_all(lab: Path) -> tuple[list[Suggestion], list[str]]:
    """Every readable suggestion (oldest first) and one line per unreadable one."""
    found: list[Suggestion] = []
    problems: list[str] = []
    for path in sorted((lab / SUGGESTIONS_DIR).glob("sg-*.json")):
        if path.name.endswith(".approving.json"):
            continue
        try:
            found.append(load(lab, path.stem))
        except LabRefusal as error:
            problems.append(str(error))
    found.sort(key=lambda s: (s.created_at, s.id))
    return found, problems


def render(suggestion: Suggestion) -> str:
    """The explanation first, then the exact change: the diff recomputed from the hashed YAML."""
    decided = f" at {suggestion.reviewed_at}" if suggestion.reviewed_at else ""
    lines = [
        f"Suggestion {suggestion.id}: {suggestion.status}{decided}",
        f"Formula: {suggestion.formula_path}",
        f"Created: {suggestion.created_at}",
        "",
        "Process change:",
        _block(suggestion.summary),
        "",
        "Evidence and reasoning:",
        _block(suggestion.rationale),
        "  attempts (Formula snapshot " + suggestion.evidence.formula_sha256 + "):",
        *(
            f"    {a.attempt_id} ({one_line(a.outcome, 40)}) {a.path}"
            for a in suggestion.evidence.attempts
        ),
        "",
        "Expected impact (a hypothesis, unverified):",
        _block(suggestion.expected_impact),
        "",
        "Evaluation on the next comparable run:",
        _block(suggestion.evaluation),
        "",
        f"Learn command: {json.dumps(suggestion.learn_command)}",
        f"Original sha256: {suggestion.original_sha256}",
        f"Proposed sha256: {suggestion.proposed_sha256}",
        "",
    ]
    diff = difflib.unified_diff(
        suggestion.original_yaml.splitlines(keepends=True),
        suggestion.proposed_yaml.splitlines(keepends=True),
        fromfile=f"a/{Path(suggestion.formula_path).name}",
        tofile=f"b/{Path(suggestion.formula_path).name}",
    )
    lines.append(prose("".join(diff)).rstrip("\n"))
    return "\n".join(lines) + "\n"


def _block(text: str | None) -> str:
    if text is None:
        return f"  {MISSING}"
    return "\n".join(f"  {line}" for line in prose(text).splitlines() or [""])


def approve(lab: Path, suggestion_id: str, now: str) -> str:
    """Apply a pending suggestion to its Formula; finish an interrupted approval."""
    with locked(lab / FORMULA_LOCK):
        suggestion = load(lab, suggestion_id)
        intent = intent_of(lab, suggestion_id)
        target = Path(suggestion.formula_path)
        try:
            current = hashlib.sha256(target.read_bytes()).hexdigest()
        except OSError as error:
            raise LabRefusal(f"the Formula {target} cannot be read: {error}") from None
        recovering = intent.exists()
        if suggestion.status != "pending" and not recovering:
            raise LabRefusal(f"suggestion {suggestion_id} is already {suggestion.status}")
        if recovering and current == suggestion.proposed_sha256:
            _decide(lab, suggestion, "approved", now)
            intent.unlink()
            return f"finished the interrupted approval of {suggestion_id}: {target} is updated"
        if current != suggestion.original_sha256:
            raise LabRefusal(
                f"suggestion {suggestion_id} is stale: it was made from {target} with sha256 "
                f"{suggestion.original_sha256}, which now has sha256 {current}; learn again from "
                "the current Formula"
            )
        if not recovering:
            _write_intent(intent, suggestion)
        hold("approve-intent")
        write_atomic(target, suggestion.proposed_yaml.encode("utf-8"))
        hold("approve-applied")
        _decide(lab, suggestion, "approved", now)
        intent.unlink()
    return f"approved {suggestion_id}: {target} now has sha256 {suggestion.proposed_sha256}"


def dismiss(lab: Path, suggestion_id: str, now: str) -> str:
    with locked(lab / FORMULA_LOCK):
        suggestion = load(lab, suggestion_id)
        if intent_of(lab, suggestion_id).exists():
            raise LabRefusal(
                f"an approval of {suggestion_id} was interrupted; run `forge suggestion "
                f"{suggestion_id} --approve` to finish it (a dismissal cannot undo it)"
            )
        if suggestion.status != "pending":
            raise LabRefusal(f"suggestion {suggestion_id} is already {suggestion.status}")
        _decide(lab, suggestion, "dismissed", now)
    return f"dismissed {suggestion_id}: {suggestion.formula_path} is unchanged"


def _write_intent(intent: Path, suggestion: Suggestion) -> None:
    document = {
        "suggestion": suggestion.id,
        "nonce": secrets.token_hex(8),
        "formulaPath": suggestion.formula_path,
        "originalSha256": suggestion.original_sha256,
        "proposedSha256": suggestion.proposed_sha256,
    }
    write_atomic(intent, (json.dumps(document, indent=2) + "\n").encode())
    directory = os.open(intent.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def _decide(lab: Path, suggestion: Suggestion, status: str, now: str) -> None:
    suggestion.status = status
    suggestion.reviewed_at = now
    save(lab, suggestion)


def _encode(suggestion: Suggestion) -> bytes:
    document = msgspec.to_builtins(suggestion)
    return (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode()
