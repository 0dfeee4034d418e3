"""A walked forest as the flat rows a client draws (O-H7): parents first, full list per push."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypedDict

from forge.procs import ProcessInfo


class ProcessRow(TypedDict):
    """One process of a seat's view; `ppid` lets a client draw the tree from the flat list."""

    pid: int
    ppid: int
    name: str
    cmdline: list[str]
    """The argument vector as the kernel holds it (a string would lose argument boundaries)."""
    cpu_percent: float
    """Share of one core since the previous walk, to one decimal; 0.0 on a process's first."""
    rss_bytes: int
    started_ms: int


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
