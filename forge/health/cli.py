"""`forge health | cache | queue | shim`: thin argparse adapters over the engine, cache and queue.

`forge-health` and `forge-queue` are the same parsers as console scripts; their exit codes are
the answer a script reads (0 operational, 3 degraded, 4 unreachable, 5 unknown; 0 nothing
undelivered, 3 something pending, set aside, corrupt or untrusted).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from forge.errors import UserError
from forge.health.settings import SettingError, Settings, clock_from_env, non_negative_int

if TYPE_CHECKING:
    from forge.health.spool import ProjectQueue

UNDELIVERED_EXIT = 3


def _seconds(name: str) -> Any:
    def parse(text: str) -> int:
        try:
            return non_negative_int(text, name)
        except SettingError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    return parse


def _status_flags(parser: argparse.ArgumentParser) -> None:
    sup = argparse.SUPPRESS
    parser.add_argument("--json", action="store_true", default=sup, help="the verdict as JSON")
    parser.add_argument("--no-probe", action="store_true", default=sup, help="never issue a call")
    parser.add_argument("--ttl", type=_seconds("--ttl"), default=sup, help="verdict TTL, seconds")
    parser.add_argument("--window", type=_seconds("--window"), default=sup, help="seconds")


def _add_health(subparsers: Any) -> None:
    health = subparsers.add_parser("health", help="the forge availability verdict (exit 0/3/4/5)")
    _status_flags(health)
    health.set_defaults(run=_health_status)
    verbs = health.add_subparsers(dest="health_verb", metavar="VERB")
    status = verbs.add_parser("status", help="the verdict (the default)")
    _status_flags(status)
    status.set_defaults(run=_health_status)
    record = verbs.add_parser("record", help="record one call that bypassed the shim")
    record.add_argument("--rc", type=int, required=True)
    record.add_argument("--ms", type=_seconds("--ms"), default=0)
    record.add_argument("--signal", choices=_signals())
    record.add_argument("--sub", default="?")
    record.set_defaults(run=_health_record)
    observations = verbs.add_parser("observations", help="the raw evidence inside the window")
    observations.add_argument("--json", action="store_true")
    observations.add_argument("--window", type=_seconds("--window"))
    observations.set_defaults(run=_health_observations)
    reset = verbs.add_parser("reset", help="drop the observations and the cached verdict")
    reset.set_defaults(run=_health_reset)


def _signals() -> list[str]:
    from forge.health.signals import SIGNALS

    return list(SIGNALS)


def _add_cache(subparsers: Any) -> None:
    cache = subparsers.add_parser("cache", help="the per-project gh read cache")
    verbs = cache.add_subparsers(dest="cache_verb", metavar="VERB", required=True)
    status = verbs.add_parser("status", help="what is cached, and how old")
    status.add_argument("--json", action="store_true")
    status.set_defaults(run=_cache_status)
    verbs.add_parser("clear", help="drop it; costs a re-fetch").set_defaults(run=_cache_clear)


def _add_queue(subparsers: Any) -> None:
    queue = subparsers.add_parser("queue", help="the per-project gh write queue (exit 0/3)")
    queue.add_argument("--json", action="store_true", default=argparse.SUPPRESS)
    queue.set_defaults(run=_queue_status)
    verbs = queue.add_subparsers(dest="queue_verb", metavar="VERB")
    status = verbs.add_parser("status", help="depth, oldest entry, unresolved handles")
    status.add_argument("--json", action="store_true", default=argparse.SUPPRESS)
    status.set_defaults(run=_queue_status)
    listing = verbs.add_parser("list", help="what is pending, in replay order")
    listing.set_defaults(run=_queue_list)
    show = verbs.add_parser("show", help="one entry, body included")
    show.add_argument("seq", type=int)
    show.set_defaults(run=_queue_show)
    replay = verbs.add_parser("replay", help="what replay would deliver; --apply delivers it")
    replay.add_argument("--apply", action="store_true")
    replay.add_argument("--batch", type=_seconds("--batch"), default=0, help="entries; 0 = all")
    replay.add_argument("--json", action="store_true")
    replay.set_defaults(run=_queue_replay)


def _add_shim(subparsers: Any) -> None:
    shim = subparsers.add_parser("shim", help="the gh PATH shim")
    verbs = shim.add_subparsers(dest="shim_verb", metavar="VERB", required=True)
    install = verbs.add_parser("install", help="deploy it as gh in $FORGE_HOME/bin")
    install.add_argument("--dir", type=Path, help="install here instead")
    install.set_defaults(run=_shim_install)


def register(subparsers: Any) -> None:
    """Hooked into `forge` by forge/cli.py."""
    _add_health(subparsers)
    _add_cache(subparsers)
    _add_queue(subparsers)
    _add_shim(subparsers)


def _settings() -> Settings:
    return Settings.from_env()


def _project() -> Path | None:
    from forge.health.settings import project_root

    return project_root()


def _require_project() -> Path:
    root = _project()
    if root is None:
        raise UserError("not inside a git project: the cache and the queue are per project")
    return root


def _project_queue() -> ProjectQueue:
    """This project's queue, in forge's state directory (never in the project)."""
    from forge.health.spool import ProjectQueue

    return ProjectQueue.of(_settings().state_dir, _require_project())


def _print_json(data: Any) -> None:
    print(json.dumps(data, indent=2, sort_keys=True))


def _health_status(args: argparse.Namespace) -> int:
    from forge.health import engine
    from forge.health.shim_install import bypass_warning, gh_on_path

    request = engine.StatusRequest(
        probe=not getattr(args, "no_probe", False),
        ttl_s=getattr(args, "ttl", None),
        window_s=getattr(args, "window", None),
    )
    result = engine.report(_settings(), clock_from_env(), request, _project())
    warning = bypass_warning(gh_on_path())
    if warning is not None:
        print(f"forge health: {warning}", file=sys.stderr)
    if getattr(args, "json", False):
        _print_json(result)
    else:
        sample = ", ".join(f"{k} {v}" for k, v in result["sample"].items()) or "none"
        print(f"forge: {result['state']} — {result['reason']} (sample: {sample})")
        cache = result["cache"]
        if cache["served"] or cache["stale_refused"]:
            print(
                f"forge cache: {cache['served']} reads served from cache in the last "
                f"{cache['window_s']}s (oldest copy {cache['oldest_served_age_s']}s), "
                f"{cache['stale_refused']} stale copies refused"
            )
        queue = result["queue"]
        if queue["pending"] or queue["set_aside"] or queue["corrupt"] or queue["untrusted"]:
            print(
                f"forge queue: {queue['pending']} pending, {queue['set_aside']} set aside, "
                f"{queue['corrupt']} corrupt, {queue['untrusted']} untrusted"
            )
        for project in queue["projects"]:
            for item in project["set_aside_entries"]:
                print(
                    f"  set aside {item['entry']} ({item['kind']}) in {project['project']}: "
                    f"{item['reason']}"
                )
            for verdict in ("corrupt", "untrusted"):
                for item in project[f"{verdict}_entries"]:
                    print(f"  {verdict} {item['entry']} ({item['file']}): {item['problem']}")
    return engine.exit_code(result)


def _health_record(args: argparse.Namespace) -> int:
    from forge.clock import epoch_ms
    from forge.health import obslog
    from forge.health.signals import classify_rc_only
    from forge.health.verdict import Observation

    signal = args.signal or classify_rc_only(args.rc)
    obs = Observation(epoch_ms(clock_from_env()), args.rc, args.ms, signal, args.sub)
    obslog.append(_settings().state_dir, obs)
    return 0


def _health_observations(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from forge.clock import epoch_ms
    from forge.health import obslog
    from forge.health.verdict import format_line, in_window

    settings = _settings()
    window = settings.window_s if args.window is None else args.window
    rows = in_window(obslog.read(settings.state_dir), epoch_ms(clock_from_env()), window)
    if args.json:
        _print_json([asdict(obs) for obs in rows])
    else:
        sys.stdout.write("".join(format_line(obs) for obs in rows))
    return 0


def _health_reset(args: argparse.Namespace) -> int:
    from forge.health import obslog
    from forge.health.engine import HEALTH_FILE

    state = _settings().state_dir
    obslog.reset(state)
    (state / HEALTH_FILE).unlink(missing_ok=True)
    return 0


def _cache_status(args: argparse.Namespace) -> int:
    from forge.clock import epoch_ms
    from forge.health import readcache

    root = _require_project()
    now_ms = epoch_ms(clock_from_env())
    rows: list[dict[str, Any]] = [
        {
            "key": e.key,
            "argv": e.argv,
            "age_s": max(0, (now_ms - e.stored_ms) // 1000),
            "bytes": e.size,
        }
        for e in readcache.entries(root)
    ]
    if args.json:
        _print_json(rows)
        return 0
    print(f"forge cache: {len(rows)} entries in {readcache.cache_dir(root)}")
    for row in rows:
        print(f"  {row['age_s']:>7}s  {row['bytes']:>7}B  gh {' '.join(row['argv'])}")
    return 0


def _cache_clear(args: argparse.Namespace) -> int:
    from forge.health import readcache

    root = _require_project()
    print(f"forge cache: dropped {readcache.clear(root)} entries")
    return 0


def _queue_status(args: argparse.Namespace) -> int:
    from forge.clock import epoch_ms
    from forge.health import queue_summary

    summary = queue_summary.project_summary(_project_queue(), epoch_ms(clock_from_env()))
    if getattr(args, "json", False):
        _print_json(summary)
    else:
        print("\n".join(queue_summary.render(summary, color=sys.stdout.isatty())))
    return UNDELIVERED_EXIT if queue_summary.needs_attention(summary) else 0


def _queue_list(args: argparse.Namespace) -> int:
    from forge.health import spool
    from forge.health.replay_plan import select

    queue = _project_queue()
    entries, refused = spool.scan(queue)
    lines = []
    for entry in select(entries, 0):
        target = f" {entry.target}" if entry.target else ""
        text = f"{entry.name} {entry.kind}{target} {entry.repo or ''} (attempts {entry.attempts})"
        lines.append((entry.seq, text))
    lines += [
        (r.seq, f"{r.name} {r.verdict} ({r.path}): {r.problem}")
        for r in [*refused, *spool.in_project_entries(queue)]
    ]
    print("\n".join(line for _, line in sorted(lines)))
    return 0


def _queue_show(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from forge.health import spool

    queue = _project_queue()
    entry = spool.load_entry(queue, args.seq)
    if entry is None:
        raise UserError(f"no queue entry {args.seq} in {queue.directory}")
    body = spool.body_path(queue, entry.seq)
    if isinstance(entry, spool.RefusedEntry):
        # What survives, for a person to recover the write by hand; never run from here.
        data: dict[str, Any] = {
            "entry": entry.name,
            entry.verdict: True,
            "file": str(entry.path),
            "problem": entry.problem,
            "content": entry.path.read_bytes().decode("utf-8", "replace"),
        }
        if body.exists():
            data["body"] = body.read_bytes().decode("utf-8", "replace")
        _print_json(data)
        return UNDELIVERED_EXIT
    data = asdict(entry)
    if entry.has_body:
        data["body"] = body.read_bytes().decode("utf-8", "replace")
    _print_json(data)
    return 0


def _queue_replay(args: argparse.Namespace) -> int:
    from forge.health import replay

    root = _require_project()
    report = replay.replay(root, _settings(), clock_from_env(), apply=args.apply, batch=args.batch)
    if args.json:
        _print_json(report.to_json())
    elif not args.apply:
        print(f"forge queue replay (dry run): {len(report.plan)} entries would be attempted")
        print("\n".join(f"  {line}" for line in report.plan))
    else:
        _print_replay(report)
    return 0 if report.clean else UNDELIVERED_EXIT


def _print_replay(report: Any) -> None:
    if report.busy:
        print("forge queue replay: another replay is draining this queue; nothing done")
        return
    print(f"forge queue replay: {len(report.delivered)} delivered, {report.remaining} pending")
    for line in report.corrupt:
        print(f"  corrupt {line} — never replayed, kept on disk")
    for line in report.untrusted:
        print(f"  untrusted {line} — never replayed, kept on disk")
    for line in report.set_aside:
        print(f"  set aside {line}")
    for line in report.retrying:
        print(f"  failed, will retry {line}")
    for name in report.waiting:
        print(f"  waiting {name}")
    if report.stopped:
        print(f"  stopped at {report.stopped}")


def _shim_install(args: argparse.Namespace) -> int:
    import os

    from forge.health.shim_install import gh_on_path, install, path_line

    target = install(_settings(), args.dir)
    print(f"forge shim: installed {target}")
    found = gh_on_path()
    if found is not None and found.samefile(target):
        print(f"forge shim: gh on PATH is forge's shim ({found}); nothing to add")
        return 0
    wanted = path_line(target.parent, os.environ.get("SHELL"))
    now = f"gh on PATH is {found}, not this shim" if found else "no gh is on PATH yet"
    print(
        f"forge shim: {now}; add this line to {wanted.rcfile} and open a new shell:\n"
        f"  {wanted.line}"
    )
    return 0
