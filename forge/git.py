"""Every git forge runs, under one hardened profile.

A repository forge reads may have been written by someone else: a recipe in the Lab, an agent on
a seat, whoever committed to a clone. git reads configuration from the system, the user and the
repository, and several keys name programs git then runs (`core.fsmonitor`, hooks, filters,
textconv and external diff drivers, pagers, signature programs). The profile:

- runs git with a minimal environment of forge's choosing (no caller `GIT_*` variable, no
  credentials, `HOME` pointing nowhere), so no system or global configuration is read;
- overrides, through `GIT_CONFIG_COUNT` (which child gits inherit, submodules included), every
  command-running key that has a fixed name: hooks, fsmonitor, pagers, editors, signatures, the
  `ext::` transport, automatic gc;
- leaves the named drivers (`filter.<name>.*`, `diff.<name>.*`, `merge.<name>.*`) to the caller:
  the Lab runs git only on git directories it made and the recipe never saw, so no driver is ever
  configured; a repository forge does not own is read with `driver_overrides` added, which lists
  the drivers its configuration names (one `git config`) and sets each to an inert value, again
  through `GIT_CONFIG_COUNT`: a `-c name=value` option splits at the first `=`, so a driver named
  `a=b` would set `filter.a` and leave `filter.a=b.clean` running. The list is kept per directory
  (`DriverCache`) until a file it was read from changes.

Who is at fault when git fails depends on the caller: `GitError` is forge's (an internal error),
and the Lab refuses bad input before it runs git.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
import weakref
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from forge.clock import SYSTEM_CLOCK, Clock
from forge.errors import InternalError

TIMEOUT_S = 30.0
"""One git command's default bound; past it the process is killed and `GitError` says so."""

BINARY_PROBE = 8000
"""As git decides: a NUL in a file's first 8000 bytes makes it binary."""

Config = tuple[tuple[str, str], ...]
"""Configuration pairs given to git through `GIT_CONFIG_COUNT`: the last word on each key."""

PROFILE: Config = (
    ("core.hooksPath", "/dev/null"),
    ("core.fsmonitor", "false"),
    ("core.pager", "cat"),
    ("core.editor", "false"),
    ("sequence.editor", "false"),
    ("core.askPass", ""),
    ("core.sshCommand", "false"),
    ("core.gitProxy", ""),
    ("core.alternateRefsCommand", ""),
    ("credential.helper", ""),
    ("protocol.ext.allow", "never"),
    ("safe.bareRepository", "explicit"),
    ("log.showSignature", "false"),
    ("gpg.program", "false"),
    ("gpg.ssh.program", "false"),
    ("gpg.x509.program", "false"),
    ("diff.external", "false"),
    ("diff.submodule", "short"),
    ("submodule.recurse", "false"),
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
)
"""Keys whose value git runs (or that widen what it runs), set to inert values for every git."""

_FIXED = {
    "LC_ALL": "C",
    "HOME": "/nonexistent",
    "XDG_CONFIG_HOME": "/nonexistent",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_ATTR_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_NO_REPLACE_OBJECTS": "1",
    "GIT_PROTOCOL_FROM_USER": "0",
    "GIT_PAGER": "cat",
    "PAGER": "cat",
}


class GitError(InternalError):
    """A git command failed; `why` is git's own first line of complaint (or what stopped it)."""

    def __init__(self, args: Sequence[str], why: str) -> None:
        super().__init__(f"git {' '.join(args)}: {why}")
        self.why = why


def profile_env(extra: Mapping[str, str] | None = None, config: Config = ()) -> dict[str, str]:
    """The whole environment of a git forge runs: PATH from forge's own, the fixed variables,
    the profile's overrides and then `config`'s, then `extra` (an index file, a fixed identity)."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **_FIXED}
    pairs = (*PROFILE, *config)
    env["GIT_CONFIG_COUNT"] = str(len(pairs))
    for index, (key, value) in enumerate(pairs):
        env[f"GIT_CONFIG_KEY_{index}"] = key
        env[f"GIT_CONFIG_VALUE_{index}"] = value
    env.update(extra or {})
    return env


@contextlib.asynccontextmanager
async def process(
    cwd: Path,
    *args: str,
    env: Mapping[str, str] | None = None,
    config: Config = (),
    stdin: bool = False,
    timeout_s: float = TIMEOUT_S,
) -> AsyncIterator[asyncio.subprocess.Process]:
    """A running git under the profile (and `config`), killed and reaped when the block ends
    however it ends; past `timeout_s` the block raises `GitError`."""
    try:
        proc = await asyncio.create_subprocess_exec(
            "git", "--no-pager", *args,
            cwd=cwd,
            env=profile_env(env, config),
            stdin=asyncio.subprocess.PIPE if stdin else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
    except OSError as error:
        raise GitError(args, f"git cannot run: {error.strerror or error}") from None
    try:
        async with asyncio.timeout(timeout_s):
            yield proc
    except TimeoutError:
        raise GitError(args, f"did not answer within {timeout_s:.0f} s") from None
    finally:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
        await proc.communicate()  # reaps it and reads its pipes to their end, closing them


def failure(args: Sequence[str], code: int | None, err: bytes) -> GitError:
    """The error for a git that exited `code`: its first line of stderr, or the code."""
    lines = err.decode("utf-8", "replace").strip().splitlines()
    return GitError(args, lines[0] if lines else f"exited {code}")


async def run(
    cwd: Path,
    *args: str,
    env: Mapping[str, str] | None = None,
    config: Config = (),
    stdin: bytes | None = None,
    timeout_s: float = TIMEOUT_S,
) -> bytes:
    """The output of a git that succeeded, else `GitError`."""
    async with process(
        cwd, *args, env=env, config=config, stdin=stdin is not None, timeout_s=timeout_s
    ) as proc:
        out, err = await proc.communicate(stdin)
    if proc.returncode != 0:
        raise failure(args, proc.returncode, err)
    return out


_DRIVER_KEYS = r"^(filter|diff|merge)\..+\.(clean|smudge|process|textconv|command|driver)$"
_INCLUDE_KEYS = r"^include(if\..+)?\.path$"

_INERT = {"clean": "", "smudge": "", "process": "", "textconv": "cat", "command": "false"}
"""What each driver key becomes: an empty filter is no filter, `cat` converts nothing, and an
external diff or merge driver that is `false` fails the command instead of running anything."""

RACY_S = 3.0
"""A file changed this recently (by its ctime, against the clock read before git read it) may
have changed while git read it, or change again within its timestamp's granularity (a jiffy;
a second or two on some file systems) with an equal stat: what was read from it is not kept."""
CACHED_MAX = 256
"""Directories whose overrides are kept; past it the oldest is dropped (and read again if asked)."""

Stamp = tuple[int, ...]


def inert(drivers: Iterable[str]) -> Config:
    """The pairs that make each named driver key inert (`_INERT`; a filter is no longer
    `required`, so its missing clean is not an error)."""
    names = sorted(set(drivers))
    pairs = [(name, _INERT.get(name.rsplit(".", 1)[1], "false")) for name in names]
    filters = sorted({name.rsplit(".", 1)[0] for name in names if name.startswith("filter.")})
    return (*pairs, *((f"{driver}.required", "false") for driver in filters))


@dataclass(frozen=True)
class Listing:
    """One `git config -z --show-origin --get-regexp` of the driver and include keys."""

    drivers: frozenset[str]
    includes: tuple[tuple[str, str, str], ...]
    """(the file the directive is in, its key, the path it names)."""
    origins: frozenset[str]
    """Every file a listed key came from, as git named it."""


NO_LISTING = Listing(frozenset(), (), frozenset())


def parse_listing(raw: bytes) -> Listing:
    """Records of `origin NUL key LF value NUL`; an origin is `file:<path>` for a file."""
    fields = raw.decode("utf-8", "surrogateescape").split("\0")
    drivers: set[str] = set()
    includes: list[tuple[str, str, str]] = []
    origins: set[str] = set()
    for origin, record in zip(fields[0::2], fields[1::2], strict=False):
        key, _, value = record.partition("\n")
        source = origin.removeprefix("file:") if origin.startswith("file:") else ""
        if source:
            origins.add(source)
        if key.startswith(("include.", "includeif.")):
            includes.append((source, key, value))
        else:
            drivers.add(key)
    return Listing(frozenset(drivers), tuple(includes), frozenset(origins))


def include_target(origin: str, value: str, toplevel: Path) -> Path | None:
    """The file an include directive found in `origin` names, as git opens it: a relative path
    from the folder of the file it is in, and a relative origin from the top level (where git
    runs). None for what forge does not resolve (`~/`, `%(prefix)/`, a directive in no file)."""
    if not origin or value.startswith(("~", "%(")):
        return None
    return (toplevel / origin).parent / value


def stamp(path: Path) -> Stamp | None:
    """What tells `path` changed: a file's device, inode, size, mtime and ctime (no write leaves
    all five as they were, and ctime cannot be set back); a folder's device, inode and owner (its
    times move with every lock file written in it). None when nothing is there."""
    try:
        info = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    if stat.S_ISDIR(info.st_mode):
        return (info.st_dev, info.st_ino, info.st_uid)
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def settled(stamps: Iterable[Stamp | None], read_at: float) -> bool:
    """Whether no file changed within `RACY_S` of `read_at` (when git began reading), so what
    git read is what the stamps describe, and any later change moves a stamp."""
    limit = int((read_at - RACY_S) * 1e9)
    return all(found is None or len(found) < 5 or found[4] < limit for found in stamps)


def discovery(cwd: Path, toplevel: Path | None) -> list[Path] | None:
    """Every path git's discovery looks at from `cwd` up to `toplevel` (to `/` when git found no
    repository): each folder and its `.git`. None when a folder on the way is a `.git` itself
    (git then uses it as the repository, by rules forge does not copy)."""
    real = Path(os.path.realpath(cwd))
    paths = [cwd]
    for folder in (real, *real.parents):
        if folder.name == ".git":
            return None
        paths += [folder, folder / ".git"]
        if folder == toplevel:
            break
    return paths


@dataclass(frozen=True)
class _Kept:
    config: Config
    paths: tuple[Path, ...]
    stamps: tuple[Stamp | None, ...]


class DriverCache:
    """Each directory's driver overrides, kept while no file they were read from changes.

    A hit costs a few `stat` calls; a miss, one `git rev-parse` and one `git config` side by
    side. What is watched: the folders and `.git` entries discovery passes, the git folders, the
    repository's `config`, `config.worktree` and `commondir`, every file an include directive
    names (active or not), and HEAD when an include depends on the branch. Nothing is kept when
    a file changed within `RACY_S`, an include cannot be resolved, or git read a file that is
    not on that list: the next read asks git again."""

    def __init__(self, clock: Clock = SYSTEM_CLOCK) -> None:
        self._clock = clock
        self._kept: dict[Path, _Kept] = {}
        self._locks: weakref.WeakValueDictionary[Path, asyncio.Lock] = weakref.WeakValueDictionary()

    async def overrides(self, cwd: Path) -> Config:
        """The pairs that make every driver the repository at `cwd` configures inert; raises
        `GitError` when git cannot list them (then no git should run there)."""
        found = self._still(cwd)
        if found is not None:
            return found
        lock = self._locks.get(cwd)
        if lock is None:
            lock = self._locks[cwd] = asyncio.Lock()
        async with lock:  # the gits of one scan, side by side, wait for one read
            found = self._still(cwd)
            if found is not None:
                return found
            return await self._read(cwd)

    def _still(self, cwd: Path) -> Config | None:
        kept = self._kept.get(cwd)
        if kept is None:
            return None
        try:
            now = tuple(stamp(path) for path in kept.paths)
        except OSError:
            return None
        return kept.config if now == kept.stamps else None

    async def _read(self, cwd: Path) -> Config:
        read_at = self._clock.time()
        located, listing = await asyncio.gather(_locate(cwd), _listing(cwd))
        config = inert(listing.drivers)
        self._kept.pop(cwd, None)
        paths = _watched(cwd, located, listing)
        if paths is None:
            return config
        try:
            stamps = tuple(stamp(path) for path in paths)
        except OSError:
            return config
        if settled(stamps, read_at):
            if len(self._kept) >= CACHED_MAX:
                del self._kept[next(iter(self._kept))]
            self._kept[cwd] = _Kept(config, paths, stamps)
        return config


_NOT_A_REPOSITORY = "fatal: not a git repository"
Located = tuple[Path, Path, Path] | Literal["no repository", "unknown"]
"""The git folder, common folder and top level at a directory; or that git found no repository
there; or that it failed otherwise (a refused bare repository, an owner git distrusts)."""


async def _locate(cwd: Path) -> Located:
    args = ("rev-parse", "--path-format=absolute", "--git-dir", "--git-common-dir")
    try:
        out = await run(cwd, *args, "--show-toplevel")
    except GitError as error:
        return "no repository" if error.why.startswith(_NOT_A_REPOSITORY) else "unknown"
    lines = out.decode("utf-8", "surrogateescape").splitlines()
    if len(lines) != 3:
        return "unknown"
    return Path(lines[0]), Path(lines[1]), Path(lines[2])


async def _listing(cwd: Path) -> Listing:
    """The driver keys and include directives git reads at `cwd` (none outside a repository)."""
    args = ("config", "-z", "--show-origin", "--get-regexp", f"{_DRIVER_KEYS}|{_INCLUDE_KEYS}")
    async with process(cwd, *args) as proc:
        out, err = await proc.communicate()
    if proc.returncode == 1:  # no such key
        return NO_LISTING
    if proc.returncode != 0:
        raise failure(args, proc.returncode, err)
    return parse_listing(out)


def _watched(cwd: Path, located: Located, listing: Listing) -> tuple[Path, ...] | None:
    """The paths whose stamps keep `listing`'s overrides true, or None when it cannot be kept."""
    if located == "unknown":
        return None
    if located == "no repository":
        return None if (found := discovery(cwd, None)) is None else tuple(found)
    gitdir, common, toplevel = located
    found = discovery(cwd, toplevel)
    if found is None:
        return None
    paths = [*found, gitdir, common, gitdir / "commondir", common / "config"]
    paths.append(gitdir / "config.worktree")
    for origin, key, value in listing.includes:
        target = include_target(origin, value, toplevel)
        if target is None:
            return None
        paths.append(target)
        if key.startswith("includeif.onbranch:"):
            paths.append(gitdir / "HEAD")
    known = {os.path.realpath(path) for path in paths}
    if any(os.path.realpath(toplevel / origin) not in known for origin in listing.origins):
        return None
    return tuple(dict.fromkeys(paths))


DRIVERS = DriverCache()
"""The process's cache: every git on a repository forge does not own asks it."""


async def driver_overrides(cwd: Path) -> Config:
    """`DRIVERS.overrides(cwd)`: the pairs to pass as `config=` to every git run at `cwd`."""
    return await DRIVERS.overrides(cwd)


async def run_foreign(
    cwd: Path,
    *args: str,
    env: Mapping[str, str] | None = None,
    config: Config = (),
    stdin: bytes | None = None,
    timeout_s: float = TIMEOUT_S,
) -> bytes:
    """`run` in a repository forge does not own (a seat's tree, replay's `--source`): `config`,
    then the repository's drivers made inert (`driver_overrides`, which raises `GitError` when
    git cannot list them: then no git runs there)."""
    overrides = await driver_overrides(cwd)
    return await run(
        cwd, *args, env=env, config=(*config, *overrides), stdin=stdin, timeout_s=timeout_s
    )


async def resolve_commit(cwd: Path, revision: str) -> str:
    """The commit id `revision` names in a repository forge may not own, resolved before git
    reads anything with it: after `--end-of-options`, so a string shaped like an option is only
    ever a (missing) revision. `GitError` when it names no commit."""
    spec = f"{revision}^{{commit}}"
    out = await run_foreign(cwd, "rev-parse", "--verify", "--quiet", "--end-of-options", spec)
    return out.decode("ascii", "replace").strip()
