"""The documents under one root (the seat's tree or a document root), for the Docs pane to offer.

The walk is `os.fwalk` without following symlinks: a link to a folder is never entered, and a
folder swapped for a link between its listing and its opening is skipped (fwalk checks the folder
it opened is the one it listed), so the walk stays under the root. Only regular files are listed
(a symlinked document is read by its own path, which `confined` checks). Hidden folders (`.git`,
`.venv`) and dependency or cache folders are skipped, and the walk stops at `MAX_LISTED` documents
or `MAX_FOLDERS` folders, whichever comes first: a large tree answers quickly with what it found.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Collection, Generator
from dataclasses import dataclass
from pathlib import Path
from typing import cast

MAX_LISTED = 1000
"""Documents listed at most; a root with more says so (`truncated`)."""
MAX_FOLDERS = 5000
"""Folders opened at most, so a huge tree with few documents is not walked to its end."""
SKIPPED_FOLDERS = frozenset({"node_modules", "__pycache__", "venv", "target", "dist", "build"})
"""Folders that hold dependencies or build output, not a person's documents."""


@dataclass(frozen=True)
class Listed:
    path: str
    """Relative to the root, `/`-separated."""
    size: int


@dataclass(frozen=True)
class Listing:
    root: Path
    """The root resolved (its own links followed once: a root may be a link)."""
    documents: list[Listed]
    truncated: bool
    """A bound stopped the walk before it saw everything."""


def list_documents(root: Path, extensions: Collection[str]) -> Listing:
    """Regular files under `root` whose lowercased extension is in `extensions`, sorted by
    path. Raises OSError (its `strerror` says why) when `root` is not a folder that opens."""
    root = Path(os.path.realpath(root))
    os.close(os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC))
    found: list[Listed] = []
    truncated = False
    walk = cast(
        "Generator[tuple[str, list[str], list[str], int]]", os.fwalk(root, follow_symlinks=False)
    )
    try:
        for folders, (folder, subfolders, files, fd) in enumerate(walk, 1):
            if folders > MAX_FOLDERS:
                truncated = True
                break
            subfolders[:] = sorted(
                name
                for name in subfolders
                if not name.startswith(".") and name not in SKIPPED_FOLDERS
            )
            relative = Path(folder).relative_to(root)
            for name in sorted(files):
                if Path(name).suffix[1:].lower() not in extensions:
                    continue
                try:
                    status = os.stat(name, dir_fd=fd, follow_symlinks=False)
                except OSError:
                    continue  # gone since the folder was listed
                if stat.S_ISREG(status.st_mode):
                    found.append(Listed((relative / name).as_posix(), status.st_size))
            if len(found) > MAX_LISTED:
                truncated = True
                break
    finally:
        walk.close()  # its open folders' descriptors, now rather than when it is collected
    return Listing(root, sorted(found, key=lambda listed: listed.path)[:MAX_LISTED], truncated)
