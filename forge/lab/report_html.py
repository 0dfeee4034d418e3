"""report.html: report.md's content as one self-contained page, rendered from the same data.

`render_html` is pure: report.json's document, the records and excerpts of each attempt's files
in, one HTML string out (Jinja2 with autoescaping: everything an attempt wrote is text, never
markup). The page loads nothing (no script at all, styles inline, the chart inline SVG) and its
Content-Security-Policy forbids loading or running anything, so a recipe's output that slipped
past escaping would still be inert. `excerpts` reads the attempts' files: at most
`HTML_DIFF_BYTES` of a diff's start and `HTML_STREAM_BYTES` of each transcript stream's end, and
no more than `HTML_EXCERPTS_BYTES` over the whole page (later attempts then show only their
links), so the page stays small however long the run; the full files are linked. `read_page`
reads a written page back for the supervisor's `lab_report`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup, escape
from msgspec import UNSET

from forge.attempt.record import AttemptRecord, known
from forge.lab import attempt_words, headtohead
from forge.lab.report import FAILED_LINES_SHOWN, TIMES, last_lines, outcome_class

HTML_DIFF_BYTES = 256 << 10
"""A diff's first 256 KiB are shown in the page."""
HTML_STREAM_BYTES = 64 << 10
"""Each transcript stream's last 64 KiB are shown in the page."""
HTML_EXCERPTS_BYTES = 6 << 20
"""At most 6 MiB of excerpts in one page, attempts in coordinate order."""
PAGE_MAX_BYTES = 12 << 20
"""`read_page` refuses a larger file (a socket message is bounded at 16 MiB)."""
PAGE = "report.html"

_ENVIRONMENT = jinja2.Environment(
    loader=jinja2.PackageLoader("forge.lab", "templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)


@dataclass(frozen=True)
class Excerpt:
    """Part of a file: its text and how many bytes of it are left out."""

    text: str
    left_out: int


@dataclass(frozen=True)
class AttemptFiles:
    diff: Excerpt | None = None
    stdout: Excerpt | None = None
    stderr: Excerpt | None = None


def excerpts_of(out: Path, records: Sequence[AttemptRecord]) -> dict[str, AttemptFiles]:
    """Each attempt's excerpts by attempt id, in order, while the page's budget lasts."""
    found: dict[str, AttemptFiles] = {}
    used = 0
    for record in records:
        if used >= HTML_EXCERPTS_BYTES:
            break
        files = excerpts(out, record)
        found[record.attempt_id] = files
        used += sum(len(e.text) for e in (files.diff, files.stdout, files.stderr) if e)
    return found


def read_page(out: Path) -> str:
    """The run's report.html, never through a symbolic link and never past `PAGE_MAX_BYTES`."""
    fd = os.open(out / PAGE, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(PAGE_MAX_BYTES + 1)
    if len(data) > PAGE_MAX_BYTES:
        raise OSError(f"{PAGE} is larger than {PAGE_MAX_BYTES} bytes")
    return data.decode("utf-8", errors="replace")


def excerpts(out: Path, record: AttemptRecord) -> AttemptFiles:
    """The attempt's diff (its start) and transcript (each stream's end), those that exist."""
    folder = out / attempt_words.folder(record)
    transcript = known(record.transcript)
    return AttemptFiles(
        diff=_read(folder / "changes.diff", HTML_DIFF_BYTES, tail=False),
        stdout=_read(folder / transcript.stdout, HTML_STREAM_BYTES, tail=True)
        if transcript
        else None,
        stderr=_read(folder / transcript.stderr, HTML_STREAM_BYTES, tail=True)
        if transcript
        else None,
    )


def _read(path: Path, limit: int, *, tail: bool) -> Excerpt | None:
    try:
        with path.open("rb") as handle:
            size = handle.seek(0, 2)
            handle.seek(max(size - limit, 0) if tail else 0)
            data = handle.read(limit)
    except OSError:
        return None
    return Excerpt(data.decode("utf-8", errors="replace"), size - len(data))


def render_html(
    report: Mapping[str, Any],
    records: Sequence[AttemptRecord],
    files: Mapping[str, AttemptFiles],
) -> str:
    """The page, from report.json's document, the records in coordinate order and each
    attempt's excerpts by attempt id."""
    head = report["headToHead"]
    variants = [row["name"] for row in head["variants"]]
    template = _ENVIRONMENT.get_template("report.html.j2")
    return template.render(
        variants=variants,
        hypothesis=report["cohort"]["hypothesis"],
        status=report["status"],
        abort_reason=report["abortReason"],
        primary_outcome=report["cohort"]["primaryOutcome"],
        digest=report["approval"].get("digest", "n/a"),
        method=headtohead.method_text(_shape(report)),
        chart=_chart(head),
        head=_head(head, variants),
        legend=headtohead.legend(),
        notes=report["notes"],
        history=[e["text"] for e in report["history"]["events"]],
        attempts=[_attempt(r, files.get(r.attempt_id, AttemptFiles())) for r in records],
    )


def _shape(report: Mapping[str, Any]) -> str:
    cohort = report["cohort"]
    return f"{len(cohort['tasks'])} tasks {TIMES} {cohort['repetitions']} reps"


def _head(head: Mapping[str, Any], variants: list[str]) -> dict[str, Any]:
    return {
        "variants": [
            {
                "name": row["name"],
                "accepted": row["accepted"],
                "n": row["n"],
                "wilson": headtohead.interval_text(row["wilson95"], ""),
                "cost": headtohead.usd(row["costPerAcceptedUsd"]),
                "time": headtohead.seconds_text(row["elapsedPerAcceptedMs"]),
            }
            for row in head["variants"]
        ],
        "differences": [headtohead.difference_text(d) for d in head["differences"]],
        "unstable": [
            f"{row['name']} on {u['task']}: {u['accepted']} of {u['n']} accepted"
            for row in head["variants"]
            for u in row["unstable"]
        ],
        "grid": [(task, [marks[v] for v in variants]) for task, marks in head["grid"].items()],
    }


def _chart(head: Mapping[str, Any]) -> Markup:
    """Inline SVG: each variant's accepted share (a bar over 0 to 1) with its Wilson interval,
    then each difference (a dot on -1 to +1, zero dashed in the middle) with its Newcombe
    interval."""
    rows = head["variants"]
    differences = head["differences"]
    width, left, scale = 640, 140, 460
    height = 30 * (len(rows) + len(differences)) + 40
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" aria-label="accepted share per variant">'
    ]
    y = 20
    for row in rows:
        share = row["accepted"] / row["n"] if row["n"] else 0.0
        parts.append(_label(y, f"{row['name']} ({row['accepted']}/{row['n']})"))
        parts.append(
            f'<rect x="{left}" y="{y - 10}" width="{share * scale:.1f}" height="14" '
            'fill="#54aeff"/>'
        )
        parts.append(_whisker(row["wilson95"], y, lambda v: left + v * scale))
        y += 30
    zero = left + scale / 2
    parts.append(
        f'<line x1="{zero}" y1="{y - 14}" x2="{zero}" y2="{height - 6}" stroke="#57606a" '
        'stroke-dasharray="3 3"/>'
    )
    for d in differences:
        parts.append(_label(y, f"{d['variant']} - {d['against']}"))
        value = d["difference"]
        if value is not None:
            x = zero + value * scale / 2
            parts.append(f'<circle cx="{x:.1f}" cy="{y - 3}" r="5" fill="#8250df"/>')
        parts.append(_whisker(d["newcombe95"], y, lambda v: zero + v * scale / 2))
        y += 30
    parts.append("</svg>")
    return Markup("".join(parts))


def _label(y: int, text: str) -> str:
    return f'<text x="4" y="{y + 2}" font-size="12">{escape(text)}</text>'


def _whisker(pair: Sequence[float] | None, y: int, at: Any) -> str:
    if pair is None:
        return ""
    low, high = at(pair[0]), at(pair[1])
    return (
        f'<line x1="{low:.1f}" y1="{y - 3}" x2="{high:.1f}" y2="{y - 3}" stroke="#1b1f24" '
        'stroke-width="2"/>'
    )


def _attempt(record: AttemptRecord, files: AttemptFiles) -> dict[str, Any]:
    facts = [
        f"outcome: {known(record.outcome)} ({outcome_class(record)})",
        f"models: {', '.join(record.models or ['unknown'])}; cost: "
        f"{headtohead.usd(known(record.cost_usd))}",
        f"elapsed: {attempt_words.seconds(known(record.elapsed_ms))}; recipe: "
        f"{attempt_words.seconds(known(record.harness_ms))}",
        f"required checks: {attempt_words.checks(record)}",
        f"seal: {_seal(record)}",
    ]
    if (timeout := attempt_words.timed_out(record)) is not None:
        facts.insert(1, timeout)
    failed = [
        {
            "title": f"failed {f.phase} {f.id} ({f.view} view, {attempt_words.ended(f)})",
            "stdout": "\n".join(last_lines(f.stdout_tail, FAILED_LINES_SHOWN)) or "(empty)",
            "stderr": "\n".join(last_lines(f.stderr_tail, FAILED_LINES_SHOWN)) or "(empty)",
        }
        for f in record.failed_check_output or []
    ]
    if record.harness_output:
        failed.append(
            {
                "title": f"harness output ({known(record.error)})",
                "stdout": record.harness_output.stdout_tail or "(empty)",
                "stderr": record.harness_output.stderr_tail or "(empty)",
            }
        )
    streams = [
        {"name": name, "text": excerpt.text or "(empty)", "cut": excerpt.left_out}
        for name, excerpt in (("stdout", files.stdout), ("stderr", files.stderr))
        if excerpt is not None
    ]
    return {
        "anchor": f"{record.task}-{record.variant}-rep-{record.repetition}",
        "title": f"{record.task} {record.variant} rep-{record.repetition}: {outcome_class(record)}",
        "facts": facts,
        "files": attempt_words.files(record),
        "failed": failed,
        "changed_files": known(record.changed_files) or [],
        "diff": _diff_lines(files.diff.text) if files.diff else [],
        "diff_cut": files.diff.left_out if files.diff else 0,
        "transcript": streams,
    }


def _seal(record: AttemptRecord) -> str:
    seal = known(record.seal)
    if seal is None:
        return "not recorded"
    sandbox = seal.sandbox or f"layout only ({seal.reason})"
    network = "network" if seal.network else "no network"
    if seal.egress is not UNSET and seal.egress:
        network = f"egress {', '.join(seal.egress)}"
    return f"{sandbox}; {network}"


def _diff_lines(text: str) -> list[tuple[str, str]]:
    """Each diff line with its kind: a file header, a hunk, an addition, a deletion, context."""
    kinds = []
    for line in text.splitlines():
        if line.startswith(("diff --git", "+++ ", "--- ")):
            kind = "file"
        elif line.startswith("@@"):
            kind = "hunk"
        elif line.startswith("+"):
            kind = "add"
        elif line.startswith("-"):
            kind = "del"
        else:
            kind = "ctx"
        kinds.append((kind, line))
    return kinds
