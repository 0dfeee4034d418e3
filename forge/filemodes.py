"""forge's own folders and files are the person's alone: folders 0700, files 0600.

Modes, not a umask: `forge supervise` starts the person's shells, runs git in their repositories
and runs the Lab's recipes, and a umask set in it would reach all of those and make the files
they create 0600 too. So forge gives a mode to what it creates itself (the state and runtime
folders, forge.log, the token, the TLS key), and what others create inside those folders
(Chromium's profiles, PulseAudio's log, the Lab's and forge health's state) is out of other
users' reach through the folder.

`private_dir` makes a folder forge keeps its files in 0700, tightening one an older forge made
0755, and refuses one another user owns: whoever made `/tmp/forge-<uid>` first could swap the
workers' sockets inside it. `loose` is the warning `forge config check` prints for a file or
folder its group or others may open; `kept_private` lists what it looks at.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from forge import paths
from forge.errors import UserError
from forge.logs import get_logger

log = get_logger(__name__)

OPEN_TO_OTHERS = 0o077
"""The group's and others' permission bits."""


class ForeignFolder(UserError):
    """A folder forge would keep its files in belongs to another user."""

    def __init__(self, path: Path, owner: int) -> None:
        super().__init__(
            f"{path} belongs to uid {owner}, not to you (uid {os.geteuid()}): forge keeps its "
            "files only in a folder of its own; remove it, or set XDG_STATE_HOME or "
            "XDG_RUNTIME_DIR to a folder of yours"
        )
        self.path = path
        self.owner = owner


def private_dir(path: Path) -> int | None:
    """Make `path` (with any missing parents) a folder only its owner can open.

    Returns the mode it had when it was open to others and this closed it (logged once, as
    `folder_closed{path, was}`: the next run finds it private), None when it was new or already
    private. Raises `ForeignFolder` when the folder, or a symlink standing for it, belongs to
    another user."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    uid = os.geteuid()
    for found in (path.lstat(), path.stat()):
        if found.st_uid != uid:
            raise ForeignFolder(path, found.st_uid)
    mode = stat.S_IMODE(path.stat().st_mode)
    if not mode & OPEN_TO_OTHERS:
        return None
    os.chmod(path, mode & ~OPEN_TO_OTHERS)
    log.warning("folder_closed", path=str(path), was=f"{mode:04o}")
    return mode


def loose(path: Path) -> str | None:
    """The one-line warning when `path` is open to its group or others (its mode and the
    chmod that closes it); None when it is private or absent."""
    try:
        found = path.stat()
    except FileNotFoundError:
        return None
    mode = stat.S_IMODE(found.st_mode)
    if not mode & OPEN_TO_OTHERS:
        return None
    who = "every user of this machine" if mode & 0o007 else "its group"
    private = "700" if stat.S_ISDIR(found.st_mode) else "600"
    return f"{path} is open to {who} (mode {mode:04o}): chmod {private} {path}"


def kept_private(tls_key: Path | None = None) -> list[Path]:
    """What must be the person's alone: the state folder, the token, the TLS private keys
    (`[server] tls_key` and the self-signed one) and forge.log with its older copies."""
    log = paths.log_file()
    listed = [
        paths.state_dir(),
        paths.token_file(),
        *([tls_key] if tls_key is not None else []),
        paths.tls_dir(),
        *sorted(paths.tls_dir().glob("*.key")),
        log,
        *sorted(log.parent.glob(f"{log.name}.*")),
    ]
    return list(dict.fromkeys(listed))
