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
  configured; a repository forge does not own is read with `driver_overrides` added.

Who is at fault when git fails depends on the caller: `GitError` is forge's (an internal error),
and the Lab refuses bad input before it runs git.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path

from forge.errors import InternalError

TIMEOUT_S = 30.0
"""One git command's default bound; past it the process is killed and `GitError` says so."""

PROFILE: tuple[tuple[str, str], ...] = (
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


def profile_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The whole environment of a git forge runs: PATH from forge's own, the fixed variables,
    the profile's overrides, then `extra` (an index file, a fixed identity)."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **_FIXED}
    env["GIT_CONFIG_COUNT"] = str(len(PROFILE))
    for index, (key, value) in enumerate(PROFILE):
        env[f"GIT_CONFIG_KEY_{index}"] = key
        env[f"GIT_CONFIG_VALUE_{index}"] = value
    env.update(extra or {})
    return env


_DRIVER_KEYS = r"^(filter|diff|merge)\..+\.(clean|smudge|process|textconv|command|driver)$"


_INERT = {"clean": "", "smudge": "", "process": "", "textconv": "cat", "command": "false"}
"""What each driver key becomes: an empty filter is no filter, `cat` converts nothing, and an
external diff or merge driver that is `false` fails the command instead of running anything."""


async def driver_overrides(cwd: Path) -> list[str]:
    """`-c` options that make every filter, diff and merge driver the repository at `cwd`
    configures (its own config and what it includes) inert (`_INERT`; a filter is no longer
    `required`, so its missing clean is not an error)."""
    try:
        raw = await run(cwd, "config", "-z", "--name-only", "--get-regexp", _DRIVER_KEYS)
    except GitError:
        return []  # no such key (exit 1), or no repository: nothing to switch off
    names = {key for key in raw.decode("utf-8", "surrogateescape").split("\0") if key}
    options: list[str] = []
    for name in sorted(names):
        options += ["-c", f"{name}={_INERT.get(name.rsplit('.', 1)[1], 'false')}"]
    for driver in sorted({n.rsplit(".", 1)[0] for n in names if n.startswith("filter.")}):
        options += ["-c", f"{driver}.required=false"]
    return options


@contextlib.asynccontextmanager
async def process(
    cwd: Path,
    *args: str,
    env: Mapping[str, str] | None = None,
    stdin: bool = False,
    timeout_s: float = TIMEOUT_S,
) -> AsyncIterator[asyncio.subprocess.Process]:
    """A running git under the profile, killed and reaped when the block ends however it ends;
    past `timeout_s` the block raises `GitError`."""
    try:
        proc = await asyncio.create_subprocess_exec(
            "git", "--no-pager", *args,
            cwd=cwd,
            env=profile_env(env),
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
    stdin: bytes | None = None,
    timeout_s: float = TIMEOUT_S,
) -> bytes:
    """The output of a git that succeeded, else `GitError`."""
    async with process(cwd, *args, env=env, stdin=stdin is not None, timeout_s=timeout_s) as proc:
        out, err = await proc.communicate(stdin)
    if proc.returncode != 0:
        raise failure(args, proc.returncode, err)
    return out
