"""Which seats run an agent, kept across supervisor restarts: `<state dir>/agents.json`.

A record holds what a new supervisor needs to bring a seat's agent back: the seat, its
directory, the model and mode it was spawned with, and the Claude Code session to resume. The
conversation itself is the CLI's transcript (`conversation`), so nothing else is kept here.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from forge import paths
from forge.files import write_atomic
from forge.logs import get_logger
from forge.wire.seats import Seat

log = get_logger(__name__)


class AgentRecord(msgspec.Struct, frozen=True, kw_only=True):
    key: Seat
    cwd: str
    model: str | None
    permission_mode: str
    session_id: str | None


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
