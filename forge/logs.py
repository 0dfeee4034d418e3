"""Structured logs: one JSON object per line, each named by its record (`socket_origin_refused`...).

Every process (supervisor, workers, CLI) calls `configure` once; modules call `get_logger()` and
log a record name with fields: `log.info("socket_origin_refused", origin=o, peer=p)` writes
`{"record": "socket_origin_refused", "origin": ..., "peer": ..., "level": "info", "ts": ...}`.
Workers inherit the log path through `FORGE_LOG_FILE` and append to the same file, the lowest
level written (`[log] level`, set with `set_level`) through `FORGE_LOG_LEVEL`, and the file's
rotation (`[log] max_size_mib` and `backups`) through `FORGE_LOG_ROTATION`. Every writer of the file
follows a rotation another one made; only those given a rotation make one (`forge.logs_rotation`).

A console (`forge supervise`'s terminal) gets either human lines, one short line per warning or
error (`12:03:04 warning socket_origin_refused origin=https://evil.example peer=...`), so what a
person must read (the URL, a refusal) does not scroll away under the records, or the file's own
JSON lines at the file's level (`console="json"`, `forge supervise --log-console json`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
from collections.abc import Iterator, MutableMapping
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import structlog

from forge.logs_rotation import Rotation, SharedRotatingFileHandler

LOG_FILE_ENV = "FORGE_LOG_FILE"
"""Environment variable that hands the log path from the supervisor to its workers."""
LOG_LEVEL_ENV = "FORGE_LOG_LEVEL"
"""Environment variable that hands `[log] level` from the supervisor to the workers it starts."""
LOG_ROTATION_ENV = "FORGE_LOG_ROTATION"
"""Environment variable that hands the log's rotation, `<max bytes>:<backups>`, to the workers."""

LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}
"""`[log] level`'s names."""

Console = Literal["human", "json"]
"""How records are written to a console: short human lines (warnings and errors) or JSON."""
CONSOLES: tuple[Console, ...] = ("human", "json")
HUMAN_LEVEL = logging.WARNING
"""The lowest level a human console shows; the rest is in the log file."""
HUMAN_SKIPPED = frozenset({"record", "level", "ts", "process", "pid", "logger", "exception"})
"""Fields a human line shows in its own places (or, `process` and `pid`, not at all)."""

_SHARED_PROCESSORS: list[Any] = [
    structlog.contextvars.merge_contextvars,
    structlog.stdlib.add_log_level,
    structlog.processors.TimeStamper(fmt="iso", utc=True, key="ts"),
    structlog.processors.EventRenamer("record"),
]


def configure(
    log_file: Path | None,
    *,
    to_stderr: bool | None = None,
    console: Console = "human",
    level: int = logging.DEBUG,
    process: str | None = None,
    rotation: Rotation | None = None,
) -> None:
    """Route every record (ours and the libraries') to `log_file` and, when `to_stderr` (by
    default: on a terminal), to stderr as `console` says; `log_file` is rotated per `rotation`
    (without one, this process only appends)."""
    formatter = _formatter()
    handlers: list[logging.Handler] = []
    if log_file is not None:
        log_file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        handlers.append(SharedRotatingFileHandler(log_file, rotation))
        os.environ[LOG_FILE_ENV] = str(log_file)
        if rotation is None:
            os.environ.pop(LOG_ROTATION_ENV, None)
        else:
            os.environ[LOG_ROTATION_ENV] = f"{rotation.max_bytes}:{rotation.backups}"
    for handler in handlers:
        handler.setFormatter(formatter)
    if to_stderr is None:
        to_stderr = sys.stderr.isatty()
    if to_stderr:
        handlers.append(_console_handler(console))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
        old.close()
    for handler in handlers:
        root.addHandler(handler)
    root.setLevel(level)
    logging.getLogger("websockets").setLevel(logging.WARNING)
    _skip_unused_record_fields()
    structlog.configure(
        processors=[
            # A record under the level is dropped before the chain stamps and renames it.
            structlog.stdlib.filter_by_level,
            *_SHARED_PROCESSORS,
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,
    )
    if process is not None:
        structlog.contextvars.bind_contextvars(process=process, pid=os.getpid())


def _skip_unused_record_fields() -> None:
    """Our JSON lines carry none of a `LogRecord`'s caller, thread or process fields, so the
    stdlib need not gather them for every record: the logging HOWTO's "Optimization" switches.
    The caller's frame walk alone was ~3 % of the supervisor's CPU per accepted connection."""
    logging._srcfile = None  # the HOWTO's documented switch
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False


def _formatter() -> logging.Formatter:
    return structlog.stdlib.ProcessorFormatter(
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.format_exc_info,
            structlog.processors.JSONRenderer(sort_keys=False),
        ],
        foreign_pre_chain=[*_SHARED_PROCESSORS, structlog.stdlib.add_logger_name],
    )


def _console_handler(console: Console) -> logging.Handler:
    handler = logging.StreamHandler(sys.stderr)
    if console == "json":
        handler.setFormatter(_formatter())
        return handler
    handler.setLevel(HUMAN_LEVEL)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                structlog.processors.format_exc_info,
                human_line,
            ],
            foreign_pre_chain=[*_SHARED_PROCESSORS, structlog.stdlib.add_logger_name],
        )
    )
    return handler


def human_line(_logger: Any, _method: str, event: MutableMapping[str, Any]) -> str:
    """One record as a person reads it: local time, level, record name, its fields as
    `key=value` (a value with spaces quoted), then any traceback on the lines below."""
    when = _local_time(event.get("ts"))
    fields = " ".join(
        f"{key}={_human_value(value)}" for key, value in event.items() if key not in HUMAN_SKIPPED
    )
    parts = (when, event.get("level"), event.get("record"), fields)
    line = " ".join(part for part in parts if part)
    exception = event.get("exception")
    return f"{line}\n{exception}" if exception else line


def _local_time(stamp: object) -> str:
    try:
        return datetime.fromisoformat(str(stamp)).astimezone().strftime("%H:%M:%S")
    except ValueError:
        return ""


def _human_value(value: object) -> str:
    """A string as is unless it needs quotes to read as one value; anything else as JSON."""
    if not isinstance(value, str):
        return json.dumps(value, default=str, separators=(",", ":"))
    plain = value and not any(c.isspace() or c == '"' for c in value)
    return value if plain else json.dumps(value)


@contextlib.contextmanager
def tee(log_file: Path, key: str, value: str) -> Iterator[None]:
    """Also write our records bound to `key=value` (`structlog.contextvars`) to `log_file`, in
    the same JSON lines, for the block: one Lab run's own log inside the supervisor."""

    def bound(record: logging.LogRecord) -> bool:
        return isinstance(record.msg, dict) and record.msg.get(key) == value

    handler = logging.FileHandler(log_file, encoding="utf-8")
    handler.setFormatter(_formatter())
    handler.addFilter(bound)
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield
    finally:
        root.removeHandler(handler)
        handler.close()


def set_level(name: str) -> None:
    """Write records from level `name` up, in this process from now on and in every worker it
    starts later (a running worker keeps the level it started with)."""
    logging.getLogger().setLevel(LEVELS[name])
    os.environ[LOG_LEVEL_ENV] = name


def configure_from_env(process: str) -> None:
    """For a worker: write where the supervisor writes (or nowhere if it set no file), from the
    level it set (every level if it set none), rotating the file as it does."""
    path = os.environ.get(LOG_FILE_ENV)
    level = LEVELS.get(os.environ.get(LOG_LEVEL_ENV, ""), logging.DEBUG)
    configure(
        Path(path) if path else None,
        to_stderr=False,
        level=level,
        process=process,
        rotation=_rotation_from_env(),
    )


def _rotation_from_env() -> Rotation | None:
    """`FORGE_LOG_ROTATION`'s rotation; None when it is unset or not `<max bytes>:<backups>`."""
    max_bytes, _, backups = os.environ.get(LOG_ROTATION_ENV, "").partition(":")
    try:
        return Rotation(max_bytes=int(max_bytes), backups=int(backups))
    except ValueError:
        return None


def get_logger(name: str | None = None) -> structlog.stdlib.BoundLogger:
    logger: structlog.stdlib.BoundLogger = structlog.stdlib.get_logger(name)
    return logger
