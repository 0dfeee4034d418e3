"""Which seats run an agent, kept across supervisor restarts: `<state dir>/agents.json`.

A record holds what a new supervisor needs to bring a seat's agent back: the seat, its
directory, the model and mode it was spawned with, and the Claude Code session to resume. The
conversation itself is the CLI's transcript (`conversation`), so nothing else is kept here.
"""

from __future__ import annotations

import os
from pathlib import Path

import msgspec

from forge import paths
from forge.files import write_atomic
from forge.logs import get_logger
from forge.supervisor.agent.usage import Spend
from forge.wire.seats import Seat

log = get_logger(__name__)


class AgentRecord(msgspec.Struct, frozen=True, kw_only=True):
    key: Seat
    cwd: str
    model: str | None
    permission_mode: str
    session_id: str | None
    effort: str | None = None


class AgentRecords:
    """The file of records; each change rewrites it whole (a handful of seats)."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or paths.state_dir() / "agents.json"

    def load(self) -> list[AgentRecord]:
        try:
            return msgspec.json.decode(self.path.read_bytes(), type=list[AgentRecord])
        except FileNotFoundError:
            return []
        except (OSError, msgspec.DecodeError) as error:
            log.warning("agent_records_unreadable", path=str(self.path), reason=str(error))
            return []

    def save(self, records: list[AgentRecord]) -> None:
        write_atomic(self.path, msgspec.json.encode(records), mode=0o600)


class UsageLedger:
    """What each turn spent (`usage.Spend`), one JSON line each, in `<state dir>/usage.jsonl`
    (0600), so the `usage` subject's windows survive a supervisor restart. A line that does not
    read (a torn last write) is skipped."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or paths.state_dir() / "usage.jsonl"

    def load(self) -> list[Spend]:
        try:
            lines = self.path.read_bytes().splitlines()
        except FileNotFoundError:
            return []
        except OSError as error:
            log.warning("agent_usage_unreadable", path=str(self.path), reason=str(error))
            return []
        spends = []
        for line in lines:
            try:
                spends.append(msgspec.json.decode(line, type=Spend))
            except msgspec.DecodeError:
                continue
        return spends

    def append(self, spends: list[Spend]) -> None:
        if not spends:
            return
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "ab") as out:
            out.write(b"".join(msgspec.json.encode(spend) + b"\n" for spend in spends))
