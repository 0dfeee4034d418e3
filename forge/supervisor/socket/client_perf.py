"""`client_perf {records}`: a web page's own perf records, written beside forge.log.

The page has no shell to write its records through, so it batches them (keystroke-to-paint,
frame decode, reconnects) and the server appends each one as a JSON line to
`forge-perf-web.log` in forge.log's folder (0600, as forge.log), rolled once past `MAX_BYTES`
(one `.1` copy kept).
Nothing answers a batch. A batch is bounded (`MAX_RECORDS`, `MAX_LINE` bytes a record) so a
page cannot fill the disk faster than the roll lets it.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import msgspec

from forge import paths
from forge.clock import epoch_ms
from forge.logs import LOG_FILE_ENV
from forge.logs_rotation import Rotation, SharedRotatingFileHandler
from forge.supervisor.socket.connection import Connection
from forge.supervisor.socket.core import Supervisor
from forge.wire.client import ClientPerf

PERF_LOG = "forge-perf-web.log"
MAX_BYTES = 4 * 1024 * 1024
MAX_RECORDS = 1000
MAX_LINE = 4096

_encoder = msgspec.json.Encoder()


def perf_log_path() -> Path:
    """Beside forge.log: the folder `forge supervise` logs to, else forge's state folder."""
    log_file = os.environ.get(LOG_FILE_ENV)
    folder = Path(log_file).parent if log_file else paths.state_dir()
    return folder / PERF_LOG


class PerfLog:
    """Appends records as JSON lines; the file is created on the first record."""

    def __init__(self, path: Path, *, max_bytes: int = MAX_BYTES) -> None:
        self.path = path
        self._handler = SharedRotatingFileHandler(
            path, Rotation(max_bytes=max_bytes, backups=1), delay=True
        )
        self._handler.setFormatter(logging.Formatter("%(message)s"))

    def write(self, peer: str, at_ms: int, records: list[Any]) -> int:
        """Write up to MAX_RECORDS records of one batch; returns how many were written."""
        written = 0
        self.path.parent.mkdir(parents=True, exist_ok=True)
        for record in records[:MAX_RECORDS]:
            line = _encoder.encode({"at_ms": at_ms, "peer": peer, "record": record})
            if len(line) > MAX_LINE:
                line = _encoder.encode({"at_ms": at_ms, "peer": peer, "dropped": len(line)})
            self._handler.handle(logging.makeLogRecord({"msg": line.decode()}))
            written += 1
        return written

    def close(self) -> None:
        self._handler.close()


def install(supervisor: Supervisor, path: Path | None = None) -> PerfLog:
    """Serve `client_perf` on `supervisor`, writing to `path` (default: beside forge.log)."""
    log = PerfLog(path or perf_log_path())

    async def handle(connection: Connection, message: ClientPerf) -> None:
        log.write(connection.peer, epoch_ms(supervisor.clock), message.records)

    async def close() -> None:
        log.close()

    supervisor.register_verb(ClientPerf, handle)
    supervisor.on_shutdown(close)
    return log
