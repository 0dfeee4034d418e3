"""What each subject's snapshot carries (H01-H13, D1), built from the supervisor's state.

Keys this server has nothing for yet are present with the document's "nothing" values (O-H1),
so a client that reads them finds what it expects. The `work` rows are read by the `WorkReader`
the seat files register (else every row is `NO_GIT`); a seat's `git` layer and `diff` are laid
over its session by them too.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any

from forge.config import ForgeConfig, ProjectConfig
from forge.supervisor.socket.seats import SeatState
from forge.wire.git import NO_GIT, Work
from forge.wire.seats import Seat

Data = dict[str, Any]
WorkReader = Callable[[Path], Awaitable[Work]]
"""The `work` row of the tree at a path."""


async def no_work(directory: Path) -> Work:
    """The row of a tree nobody reads: git does not run there, as far as the core knows."""
    del directory
    return NO_GIT


def agents_row(state: SeatState, work: Work) -> Data:
    """A home `agents` row (O-H3); `tree` only appears for a seat working outside its project."""
    return {
        "slot": state.seat,
        "label": state.seat.label,
        "lifecycle": state.lifecycle,
        "has_background": state.has_background,
        "waiting": state.waiting,
        "last_active_ms": state.last_active_ms,
        "failed": state.failed,
        "work": work,
    }


def project_row(project: ProjectConfig, sessions: int, work: Work) -> Data:
    return {
        "project": {
            "name": project.name,
            "org": project.org,
            "path": str(project.path),
            "sessions": sessions,
            "has_model": False,
        },
        "work": work,
        "would_bind": None,
        "chip": None,
    }


async def home(
    config: ForgeConfig,
    seats: Iterable[SeatState],
    *,
    unseen: Iterable[Seat],
    facts: Data,
    read_work: WorkReader,
) -> Data:
    """The fleet: projects and agents with their git work, plus the run's own facts."""
    started = list(seats)
    works = await asyncio.gather(
        *(read_work(project.path) for project in config.projects),
        *(read_work(state.directory) for state in started),
    )
    project_works, seat_works = works[: len(config.projects)], works[len(config.projects) :]
    return {
        "projects": [
            project_row(
                project,
                sum(
                    1
                    for s in started
                    if (s.seat.org, s.seat.project) == (project.org, project.name)
                ),
                work,
            )
            for project, work in zip(config.projects, project_works, strict=True)
        ],
        "agents": [
            agents_row(state, work) for state, work in zip(started, seat_works, strict=True)
        ],
        "unseen": list(unseen),
        "fleet": [],
        "accounts": None,
        "connectors": None,
        "biometric": [],
        "vault": None,
        "dictate": None,
        "voice": None,
        "cli_version": None,
        **facts,
    }


def session(state: SeatState) -> Data:
    """One seat (H09-H13): slot, header with the next seq and the epoch, state, terminal...
    (`work`, `git` and `diff` say git does not run there until the seat files lay theirs over)."""
    return {
        "slot": state.seat,
        "header": {
            "session_id": state.epoch,
            "model": None,
            "models": [],
            "effort": None,
            "permission_mode": None,
            "context_usage": None,
            "turn_in_flight": False,
            "seq": state.window.next_seq,
        },
        "state": {
            "cwd": str(state.directory),
            "queue": [],
            "voice_listeners": state.voice_listeners,
        },
        "terminal": state.terminal,
        "processes": state.processes,
        "background_tasks": state.background_tasks,
        "work": NO_GIT,
        "conversation": {"turns": [], "cursor": None, "compactions": 0},
        "git": None,
        "pr": None,
        "closes": [],
        "diff": None,
        "mcp": None,
        "file_index": None,
        "composer": None,
        "pending_ask": None,
        "pending_asks": [],
        "slash_commands": [],
        "subagents": [],
        "monitors": [],
        "reviews": {"threads": [], "reviews": []},
    }


def board(config: ForgeConfig) -> Data:
    """D1: every configured project with an empty board (no tasks, crons or connector sets)."""
    return {
        "projects": [
            {
                "project": {"org": project.org, "name": project.name},
                "rows": [],
                "crons": [],
                "connectors": {"gotify": [], "slack": []},
            }
            for project in config.projects
        ]
    }


def usage() -> Data:
    """D1: the four windows (today, week, month, lifetime) with nothing pooled, and no price
    table loaded."""
    window: Data = {"by_model": [], "by_project": [], "total": None}
    return {
        "today": window,
        "week": window,
        "month": window,
        "lifetime": window,
        "pricing_available": False,
    }


def dictate_models(config: ForgeConfig) -> Data:
    """D1: dictation's switch from forge.toml and the models page with nothing in it: no
    models directory, no catalogue check yet, nothing installed, running or measured."""
    return {
        "enabled": config.dictate.enabled,
        "models_dir": None,
        "speaking": None,
        "in_use": [],
        "check": {"state": "never"},
        "updates": [],
        "rows": [],
        "install": {"state": "idle"},
        "activate": {"state": "idle"},
        "installed": [],
        "bench": None,
        "results": [],
        "speaking_bench": None,
        "speaking_results": [],
        "read_aloud": None,
    }


def extensions() -> Data:
    """D1: no plugin scan (`snapshot` null), no LSP rows, no update run."""
    return {"snapshot": None, "lsp": [], "update_run": None}
