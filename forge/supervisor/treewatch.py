"""`python -m forge.supervisor.treewatch`: the supervisor's tree watches, in a process apart.

One child of the supervisor holds every watched tree's inotify watch (watchfiles' Rust `notify`,
recursive). It runs apart because setting a recursive watch up holds Python's GIL for the whole
walk of the tree (about half a second for 20,000 files), which in the supervisor would stall every
connection; and it is one long-lived process so a watch starts without a Python start-up.

The protocol is lines. In, from the supervisor: `watch <id> <json [tree, git folder...]>` and
`unwatch <id>`. Out: `<id> ready` once a watch is up, `<id> changed` after each burst that touches
something a work row reads (the tree's files; inside a git folder only HEAD, the index, refs,
packed-refs and the *_HEAD marks: object writes and lock files are noise), and `<id> failed
<json why>` when a watch cannot be set up. A burst ends after `STEP_MS` of quiet or `DEBOUNCE_MS`
in all. The process ends when its stdin closes.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from watchfiles._rust_notify import RustNotify

STEP_MS = 50
"""A burst of changes is over once this long passes without another."""
DEBOUNCE_MS = 300
"""A burst that never goes quiet is reported this often at most."""
GIT_MARKS = frozenset(
    {"HEAD", "index", "packed-refs", "MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD", "REBASE_HEAD"}
)

Say = Callable[..., None]


def relevant(path: str, git_folders: list[str]) -> bool:
    """Whether a change at `path` can move a work row (`git_folders` end with a slash)."""
    for folder in git_folders:
        if path.startswith(folder):
            inside = path[len(folder) :]
            if inside.endswith(".lock"):
                return False
            return inside in GIT_MARKS or inside.startswith("refs/")
    return True


def watch(ident: str, paths: list[str], stop: threading.Event, say: Say) -> None:
    """One tree's watch, until `stop`: `paths` is the tree, then its git folders."""
    tree, *folders = (Path(path) for path in paths)
    git_folders = [str(folder) + "/" for folder in (folders or [tree / ".git"])]
    watched = [tree, *(folder for folder in folders if not folder.is_relative_to(tree))]
    try:
        notify = RustNotify([str(path) for path in watched], False, False, 0, True, True)
    except Exception as error:
        say(ident, "failed", json.dumps(f"{type(error).__name__}: {error}"))
        return
    try:
        say(ident, "ready")
        while True:
            raw = notify.watch(DEBOUNCE_MS, STEP_MS, 0, stop)
            if raw == "stop":
                return
            if isinstance(raw, set) and any(relevant(path, git_folders) for _, path in raw):
                say(ident, "changed")
    finally:
        notify.close()


def main() -> int:
    lock = threading.Lock()

    def say(*words: str) -> None:
        with lock:
            try:
                print(*words, flush=True)
            except BrokenPipeError:  # the supervisor is gone
                os._exit(0)

    stops: dict[str, threading.Event] = {}
    for line in sys.stdin:
        verb, ident, *rest = line.rstrip("\n").split(" ", 2)
        if verb == "watch":
            stops[ident] = threading.Event()
            args = (ident, json.loads(rest[0]), stops[ident], say)
            threading.Thread(target=watch, args=args, daemon=True).start()
        elif verb == "unwatch" and ident in stops:
            stops.pop(ident).set()
    return 0


if __name__ == "__main__":
    sys.exit(main())
