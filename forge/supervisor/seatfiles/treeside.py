"""`python -m forge.supervisor.seatfiles.treeside`: the supervisor's tree process, git and
watches apart.

One long-lived child of the supervisor runs every git read of a seat's tree (`gitstate`: status,
numstat, the ahead chain, the streamed and capped diff, a file at a revision) and holds every
watched tree's inotify watch (watchfiles' Rust `notify`, recursive, one thread per tree). They
run here rather than in the supervisor because both stall the process that runs them: starting
a git is a fork whose parent waits for the child to exec while holding the GIL (on a loaded
machine, tens of milliseconds per git and several gits per read), parsing a patch is Python
work, and setting a recursive watch up holds the GIL for the whole walk of the tree (about half a
second for 20,000 files). The supervisor only reads lines (`treeproto`).

A watch reports `ready` once it is up and `changed` after each burst that touches something a
work row reads: the tree's files, and inside a git folder only HEAD, the index, refs, packed-refs
and the *_HEAD marks (object writes and lock files are noise). A burst ends after `STEP_MS` of
quiet or `DEBOUNCE_MS` in all. The process ends when its stdin closes, or quietly on SIGINT.
"""

from __future__ import annotations

import asyncio
import signal
import sys
import threading
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import msgspec
from watchfiles._rust_notify import RustNotify

from forge import eventloop
from forge.git import GitError
from forge.supervisor.seatfiles.gitstate import LocalTrees, git
from forge.supervisor.seatfiles.treeproto import (
    AnyAsk,
    Event,
    ReadBlob,
    ReadRecord,
    ReadScan,
    ReadWork,
    Reply,
    ResolveCommit,
    Unwatch,
    Watch,
)

STEP_MS = 50
"""A burst of changes is over once this long passes without another."""
DEBOUNCE_MS = 300
"""A burst that never goes quiet is reported this often at most."""
GIT_MARKS = frozenset(
    {"HEAD", "index", "packed-refs", "MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD", "REBASE_HEAD"}
)
LINE_LIMIT = 1 << 20
"""The longest ask line read (asks are a few hundred bytes)."""

Tell = Callable[[Event], None]


def relevant(path: str, git_folders: list[str]) -> bool:
    """Whether a change at `path` can move a work row (`git_folders` end with a slash)."""
    for folder in git_folders:
        if path.startswith(folder):
            inside = path[len(folder) :]
            if inside.endswith(".lock"):
                return False
            return inside in GIT_MARKS or inside.startswith("refs/")
    return True


async def git_folders(tree: Path) -> list[Path]:
    """The tree's own git folder and the common one (they differ for a linked worktree), read
    as every other git of the tree is (`gitstate.git`); none when git does not run there."""
    try:
        out = await git(tree, "rev-parse", "--absolute-git-dir", "--git-common-dir")
    except GitError:
        return []
    own, common = out.decode("utf-8", "surrogateescape").splitlines()[:2]
    return list(dict.fromkeys([Path(own), (tree / common).resolve()]))


def watch(ident: int, tree: Path, folders: list[Path], stop: threading.Event, tell: Tell) -> None:
    """One tree's watch (in a thread of its own), until `stop`."""
    marks = [str(folder) + "/" for folder in (folders or [tree / ".git"])]
    watched = [tree, *(folder for folder in folders if not folder.is_relative_to(tree))]
    try:
        notify = RustNotify([str(path) for path in watched], False, False, 0, True, True)
    except Exception as error:
        tell(Event(id=ident, word="failed", why=f"{type(error).__name__}: {error}"))
        return
    try:
        tell(Event(id=ident, word="ready"))
        while True:
            raw = notify.watch(DEBOUNCE_MS, STEP_MS, 0, stop)
            if raw == "stop":
                return
            if isinstance(raw, set) and any(relevant(path, marks) for _, path in raw):
                tell(Event(id=ident, word="changed"))
    finally:
        notify.close()


async def answer(ask: AnyAsk, trees: LocalTrees) -> Any:
    """What a read ask is answered with."""
    match ask:
        case ReadWork():
            return await trees.work(Path(ask.directory))
        case ReadScan():
            return await trees.scan(Path(ask.directory))
        case ReadRecord():
            return await trees.record(Path(ask.directory))
        case ResolveCommit():
            return await trees.commit(Path(ask.directory), ask.revision)
        case ReadBlob():
            return await trees.blob(Path(ask.directory), ask.commit, ask.path, ask.limit)
    raise TypeError(f"not a read: {ask!r}")


class _Side:
    def __init__(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.trees = LocalTrees()
        self.stops: dict[int, threading.Event] = {}
        self.tasks: set[asyncio.Task[None]] = set()
        self._encoder = msgspec.json.Encoder()

    def send(self, message: Reply | Event) -> None:
        try:
            sys.stdout.buffer.write(self._encoder.encode(message) + b"\n")
            sys.stdout.buffer.flush()
        except BrokenPipeError:  # the supervisor is gone; stdin closes next
            pass

    def tell(self, event: Event) -> None:
        """From a watch thread: sent by the loop, so lines never interleave."""
        self.loop.call_soon_threadsafe(self.send, event)

    def take(self, ask: AnyAsk) -> None:
        if isinstance(ask, Watch):
            self.stops[ask.id] = threading.Event()
            self.spawn(self.start_watch(ask))
        elif isinstance(ask, Unwatch):
            if ask.id in self.stops:
                self.stops.pop(ask.id).set()
        else:
            self.spawn(self.reply(ask))

    def spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = self.loop.create_task(work)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def start_watch(self, ask: Watch) -> None:
        """Find the tree's git folders here (a git, on the loop), then watch in a thread."""
        tree = Path(ask.tree)
        folders = await git_folders(tree)
        stop = self.stops.get(ask.id)
        if stop is None:  # unwatched meanwhile
            return
        args = (ask.id, tree, folders, stop, self.tell)
        threading.Thread(target=watch, args=args, daemon=True).start()

    async def reply(self, ask: AnyAsk) -> None:
        try:
            self.send(Reply(id=ask.id, result=await answer(ask, self.trees)))
        except GitError as failed:
            self.send(Reply(id=ask.id, failed=failed.why))
        except Exception as error:  # a bug here must answer its ask, not hang it
            self.send(Reply(id=ask.id, failed=f"the tree process failed: {error!r}"))

    def close(self) -> None:
        for stop in self.stops.values():
            stop.set()
        for task in self.tasks:
            task.cancel()


async def serve() -> None:
    side = _Side()
    reader = asyncio.StreamReader(limit=LINE_LIMIT)
    stdin, _ = await side.loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), sys.stdin
    )
    side.loop.add_signal_handler(signal.SIGINT, stdin.close)  # ends as a closed stdin does
    decoder = msgspec.json.Decoder(AnyAsk)
    try:
        while line := await reader.readline():
            side.take(decoder.decode(line))
    finally:
        side.close()


if __name__ == "__main__":
    eventloop.run(serve())
