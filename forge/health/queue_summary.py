"""What the spool holds, for `forge queue` and the health report's queue block.

Pending entries replay on the next successful gh call and need nobody; set-aside ones will not
arrive on their own and need a person, and so do corrupt ones (entry files that no longer read
back) and untrusted ones (entry files forge cannot vouch for: no valid seal, a shape outside the
allow-list, or found in the project's own `.forge/queue`), which are never replayed and kept on
disk. They are counted apart everywhere, and each carries its reason.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, Final

from forge.health import gh_args, spool
from forge.health.spool import ProjectQueue, RefusedEntry


def _refused_json(items: list[RefusedEntry]) -> list[dict[str, Any]]:
    return [
        {"entry": r.name, "file": str(r.path), "problem": r.problem, "moved_aside": r.moved_aside}
        for r in items
    ]


def project_summary(queue: ProjectQueue, now_ms: int) -> dict[str, Any]:
    entries, refused = spool.scan(queue)
    untrusted = [r for r in refused if r.verdict == "untrusted"]
    untrusted += spool.in_project_entries(queue)
    pending = [e for e in entries if e.status == "pending"]
    aside = [e for e in entries if e.status == "set_aside"]
    handles = spool.load_handles(queue)
    unresolved = sorted(
        {h for e in pending for h in [*e.depends_on, *([e.handle] if e.handle else [])]}
        - set(handles),
        key=gh_args.handle_seq,
    )
    crashed = [f"q{spool.seq_name(seq)}" for seq in spool.orphan_slots(queue, now_ms)[1]]
    last = spool.replay_log(queue)
    oldest = min((e.enqueued_at for e in pending), default=None)
    return {
        "project": str(queue.project),
        "pending": len(pending),
        "set_aside": len(aside),
        "oldest_age_s": None if oldest is None else max(0, (now_ms - oldest) // 1000),
        "oldest_enqueued_ms": oldest,
        "pending_by_kind": dict(Counter(e.kind for e in pending)),
        "unresolved_handles": unresolved,
        "set_aside_entries": [{"entry": e.name, "kind": e.kind, "reason": e.reason} for e in aside],
        "corrupt_entries": _refused_json([r for r in refused if r.verdict == "corrupt"]),
        "untrusted_entries": _refused_json(untrusted),
        "crashed_slots": crashed,
        "last_replay": (
            None
            if not last
            else {
                "ts_ms": int(last[-1][0]),
                "entry": f"q{int(last[-1][1]):06d}",
                "outcome": last[-1][3],
                "reason": last[-1][4],
            }
        ),
    }


def block(state_dir: Path, project: Path | None, now_ms: int) -> dict[str, Any]:
    """Totals over this project and every project the breadcrumb names.

    Only stable facts (counts, reasons, absolute times), so a publisher that pushes on change
    is not woken every second by an age ticking up.
    """
    roots = list(
        dict.fromkeys([*([project] if project else []), *spool.breadcrumb_roots(state_dir)])
    )
    projects = []
    for root in roots:
        queue = ProjectQueue.of(state_dir, root)
        if not queue.directory.is_dir() and not spool.in_project_entries(queue):
            continue
        summary = project_summary(queue, now_ms)
        if needs_attention(summary):
            projects.append(
                {
                    "project": summary["project"],
                    "pending": summary["pending"],
                    "set_aside": summary["set_aside"],
                    "corrupt": len(summary["corrupt_entries"]),
                    "corrupt_entries": summary["corrupt_entries"],
                    "untrusted": len(summary["untrusted_entries"]),
                    "untrusted_entries": summary["untrusted_entries"],
                    "oldest_enqueued_ms": summary["oldest_enqueued_ms"],
                    "unresolved_handles": summary["unresolved_handles"],
                    "set_aside_entries": summary["set_aside_entries"],
                }
            )
    return {
        "pending": sum(p["pending"] for p in projects),
        "set_aside": sum(p["set_aside"] for p in projects),
        "corrupt": sum(p["corrupt"] for p in projects),
        "untrusted": sum(p["untrusted"] for p in projects),
        "projects": projects,
    }


def needs_attention(summary: dict[str, Any]) -> bool:
    """Something undelivered or refused: pending, set aside, corrupt or untrusted (`forge queue`
    exits 3)."""
    return bool(
        summary["pending"]
        or summary["set_aside"]
        or summary["corrupt_entries"]
        or summary["untrusted_entries"]
    )


YELLOW: Final = "\033[33m"
RED: Final = "\033[31m"
RESET: Final = "\033[0m"


def render(summary: dict[str, Any], *, color: bool = False) -> list[str]:
    """Lines for a person; nothing to say gives one quiet line, not a permanent `queue: 0`.

    On a terminal the headline is yellow while entries merely wait and red once one is set aside,
    corrupt or untrusted: those will not arrive on their own and need a person.
    """
    if not needs_attention(summary) and not summary["crashed_slots"]:
        return [f"forge queue: nothing undelivered in {summary['project']}"]
    mix = ", ".join(f"{kind} {n}" for kind, n in sorted(summary["pending_by_kind"].items()))
    refused = {verdict: summary[f"{verdict}_entries"] for verdict in ("corrupt", "untrusted")}
    counts = "".join(f", {len(items)} {verdict}" for verdict, items in refused.items() if items)
    headline = (
        f"forge queue: {summary['pending']} pending ({mix or 'none'}), "
        f"{summary['set_aside']} set aside{counts} — {summary['project']}"
    )
    if color:
        alarming = summary["set_aside"] or any(refused.values())
        headline = f"{RED if alarming else YELLOW}{headline}{RESET}"
    lines = [headline]
    if summary["oldest_age_s"] is not None:
        lines.append(f"  oldest pending entry: {summary['oldest_age_s']}s old")
    if summary["unresolved_handles"]:
        lines.append(f"  unresolved handles: {', '.join(summary['unresolved_handles'])}")
    lines.extend(
        f"  set aside {item['entry']} ({item['kind']}): {item['reason']}"
        for item in summary["set_aside_entries"]
    )
    lines.extend(
        f"  {verdict} {item['entry']} ({item['file']}): {item['problem']} — "
        f"{'moved aside, ' if item.get('moved_aside') else ''}never replayed, kept on disk"
        for verdict, items in refused.items()
        for item in items
    )
    if summary["crashed_slots"]:
        lines.append(
            f"  crashed allocations (no entry written): {', '.join(summary['crashed_slots'])}"
        )
    last = summary["last_replay"]
    if last:
        lines.append(f"  last replay: {last['entry']} {last['outcome']} {last['reason']}".rstrip())
    return lines
