"""A walked forest as the flat rows a client draws (O-H7): parents first, full list per push."""

from __future__ import annotations

from collections.abc import Iterable

from forge.procs import ProcessInfo
from forge.workers.walker.protocol import ProcessRow


def process_rows(forest: Iterable[ProcessInfo]) -> list[ProcessRow]:
    """Every process of the forest, each tree parents first, a pid at most once."""
    rows: list[ProcessRow] = []
    seen: set[int] = set()
    for root in forest:
        for process in root.walk():
            if process.pid in seen:
                continue
            seen.add(process.pid)
            rows.append(
                ProcessRow(
                    pid=process.pid,
                    ppid=process.ppid,
                    name=process.name,
                    cmdline=list(process.cmdline),
                    cpu_percent=round(process.cpu_percent, 1),
                    rss_bytes=process.rss,
                    started_ms=int(process.started * 1000),
                )
            )
    return rows
