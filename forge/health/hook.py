"""The Python side of the shim: run only for what the shell script cannot do alone (cache serve
and invalidation, queue, replay).

`python -I -m forge.health.hook ACTION -- ARGV...`, with the live call's outcome in FORGE_SHIM_*
variables. Whatever goes wrong here, the caller still gets the live call's own stdout, stderr and
exit code (or, before a live call, a plain exec of the real gh): the shim must never break gh.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from forge.clock import epoch_ms
from forge.health import cache_events, gh_args, readcache, spool
from forge.health.settings import Settings, clock_from_env

GH_ERROR_EXIT = 1
"""What gh exits with when it rejects an argument (`invalid issue format`)."""


def _read(path: str | None) -> bytes:
    if not path:
        return b""
    try:
        return Path(path).read_bytes()
    except OSError:
        return b""


def _live_outcome() -> tuple[int, bytes, bytes]:
    env = os.environ
    return (
        int(env.get("FORGE_SHIM_RC", "1")),
        _read(env.get("FORGE_SHIM_OUT")),
        _read(env.get("FORGE_SHIM_ERR")),
    )


def _emit(stdout: bytes, stderr: bytes) -> None:
    sys.stdout.buffer.write(stdout)
    sys.stdout.buffer.flush()
    sys.stderr.buffer.write(stderr)
    sys.stderr.buffer.flush()


def serve() -> int:
    """A failed allowlisted read: last-known state if fresh enough, else the live failure."""
    rc, out, err = _live_outcome()
    settings, clock = Settings.from_env(), clock_from_env()
    root = Path(os.environ["FORGE_SHIM_ROOT"])
    signal = os.environ["FORGE_SHIM_SIGNAL"]
    path = readcache.entry_path(root, os.environ["FORGE_SHIM_KEY"])
    now_ms = epoch_ms(clock)
    try:
        cached: bytes | None = path.read_bytes()
        age_s: int | None = max(0, (now_ms - path.stat().st_mtime_ns // 1_000_000) // 1000)
    except FileNotFoundError:
        cached, age_s = None, None
    decision = readcache.decide(signal, age_s, settings.cache_max_age_s)
    if isinstance(decision, readcache.Serve) and cached is not None:
        cache_events.append(settings.state_dir, now_ms, "served", decision.age_s, signal, root)
        _emit(cached, (decision.marker(signal) + "\n").encode())
        return 0
    if isinstance(decision, readcache.PassThrough) and decision.note:
        stale = decision.stale_age_s or 0
        cache_events.append(settings.state_dir, now_ms, "stale", stale, signal, root)
        err += (decision.note + "\n").encode()
    _emit(out, err)
    return rc


def spool_write(argv: Sequence[str], *, live: bool = True) -> int:
    """An allowlisted write the forge could not take (or that waits for a handle): spool it."""
    from forge.health import queue

    rc, out, err = _live_outcome() if live else (1, b"", b"")
    settings, clock = Settings.from_env(), clock_from_env()
    project_queue = spool.ProjectQueue.of(settings.state_dir, Path(os.environ["FORGE_SHIM_ROOT"]))
    try:
        result = queue.enqueue(
            project_queue,
            argv,
            max_pending=settings.queue_max,
            clock=clock,
            env=os.environ,
            live_signal=os.environ["FORGE_SHIM_SIGNAL"] if live else None,
            live_stderr=err.decode("utf-8", "replace"),
            read_stdin=sys.stdin.buffer.read,
        )
    except OSError as error:
        # A full disk (or a write budget): the entry was not written, so the write is failed,
        # loudly, and can never land later (a slot with no entry is skipped by replay).
        note = f"[forge-queue] NOT queued \u2014 the spool cannot be written: {error}\n"
        _emit(out, err + note.encode())
        return (rc or GH_ERROR_EXIT) if live else GH_ERROR_EXIT
    if isinstance(result, (queue.Refused, queue.NotReplayable)):
        _emit(out, err + (result.marker() + "\n").encode())
        return rc if live else GH_ERROR_EXIT
    spool.mark_pending(settings.state_dir, project_queue.project)
    url = result.handle_url()
    _emit(b"" if url is None else (url + "\n").encode(), (result.marker() + "\n").encode())
    return 0


def handles(argv: Sequence[str]) -> int:
    """FORGE-Q<n> arguments: substituted when their create has landed, else spooled behind it."""
    project_queue = spool.ProjectQueue.of(
        Settings.from_env().state_dir, Path(os.environ["FORGE_SHIM_ROOT"])
    )
    known = spool.load_handles(project_queue)
    names = gh_args.handles_in(argv)
    if all(name in known for name in names):
        shim = os.environ["FORGE_SHIM_SELF"]
        substituted = gh_args.substitute(argv, known)
        os.execv(shim, [shim, *substituted])
    if gh_args.spoolable_kind(argv) is None:
        # Not a write the queue owns: the real gh refuses the handle, honestly.
        real = os.environ["FORGE_SHIM_REAL_GH"]
        os.execv(real, [real, *argv])
    entries, refused = spool.scan(project_queue)
    queued = {e.handle for e in entries if e.handle} | {r.handle for r in refused}
    unknown = [name for name in names if name not in known and name not in queued]
    if unknown:
        # A mistyped handle would otherwise wait forever for a create that does not exist.
        print(
            f"[forge-queue] {', '.join(unknown)}: no such handle in this project's queue "
            f"({project_queue.directory}); no spooled create was given that name, so this write "
            "was neither sent nor spooled",
            file=sys.stderr,
        )
        return GH_ERROR_EXIT
    return spool_write(argv, live=False)


def invalidate(argv: Sequence[str]) -> int:
    """The forge answered 404/410 for an `issue view`: every cached view of that issue goes
    (the shim has already dropped this very key)."""
    from forge.health import queue

    root = Path(os.environ["FORGE_SHIM_ROOT"])
    explicit = os.environ.get("GH_REPO")
    origin = queue.origin_remote(root) if not explicit else None
    default = gh_args.split_repo(explicit)[1] if explicit else (origin[1] if origin else None)
    readcache.drop_issue_views(root, argv, default)
    return 0


def replay_auto() -> int:
    """Detached from the gh call that found the breadcrumb; drains one batch per project."""
    from forge.health import replay

    with contextlib.suppress(OSError):  # already a session leader
        os.setsid()
    settings, clock = Settings.from_env(), clock_from_env()
    for root in spool.breadcrumb_roots(settings.state_dir):
        replay.replay(root, settings, clock, apply=True, batch=settings.queue_batch)
    return 0


def main(argv: Sequence[str]) -> int:
    action, rest = argv[0], list(argv[2:]) if argv[1:2] == ["--"] else list(argv[1:])
    try:
        if action == "serve":
            return serve()
        if action == "spool":
            return spool_write(rest)
        if action == "handles":
            return handles(rest)
        if action == "replay-auto":
            return replay_auto()
        if action == "invalidate":
            return invalidate(rest)
    except Exception as error:  # the shim must never break gh
        print(f"[forge] internal error ({type(error).__name__}: {error})", file=sys.stderr)
        if action in ("serve", "spool"):
            rc, out, err = _live_outcome()
            _emit(out, err)
            return rc
        if action == "handles":
            real = os.environ["FORGE_SHIM_REAL_GH"]
            os.execv(real, [real, *rest])
        return 1
    raise SystemExit(f"forge.health.hook: unknown action {action!r}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
