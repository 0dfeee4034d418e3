"""`forge supervise` with tracemalloc on, for `bench/chaos.py --trace-memory`.

    python -P bench/traced_supervise.py OUT_DIR supervise [forge's own arguments]

SIGUSR2 writes a tracemalloc snapshot to OUT_DIR/snapshot-N.bin (N counts from 0), so the chaos
run can compare what the supervisor holds after warm-up with what it holds at the end: the lines
whose allocations grew are where an RSS slope comes from. Beside it, snapshot-N.json holds the
layers below: the resident size, what tracemalloc counts, glibc's heap in use and free
(`mallinfo2`), and snapshot-N.pymalloc.txt the interpreter's small-object arenas
(`sys._debugmallocstats`). An RSS growth that none of them shows is in other mappings.
Tracing costs the supervisor CPU and memory of its own, so a traced run's latencies and RSS are
not the published figures.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import sys
import tracemalloc
from pathlib import Path
from types import FrameType

from forge.allocator import heap

FRAMES = 10


def layers() -> dict[str, int]:
    """Bytes at each layer below the Python objects, now."""
    figures = heap()
    traced, _peak = tracemalloc.get_traced_memory()
    with open("/proc/self/statm") as statm:
        resident_pages = int(statm.read().split()[1])
    return {
        "rss": resident_pages * os.sysconf("SC_PAGE_SIZE"),
        "traced": traced,
        **({} if figures is None else {
            "heap_in_use": figures.in_use, "heap_free": figures.free,
            "heap_arena": figures.arena, "mmapped": figures.mmapped,
        }),
    }  # fmt: skip


def pymalloc_stats(target: Path) -> None:
    """`sys._debugmallocstats` writes to the C stderr: point it at `target` for the call."""
    saved = os.dup(2)
    try:
        with target.open("wb") as sink:
            os.dup2(sink.fileno(), 2)
            sys._debugmallocstats()
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def main() -> int:
    out = Path(sys.argv[1])
    numbers = itertools.count()

    def snapshot(_signum: int, _frame: FrameType | None) -> None:
        target = out / f"snapshot-{next(numbers)}.bin"
        target.with_suffix(".json").write_text(json.dumps(layers()))
        pymalloc_stats(target.with_suffix(".pymalloc.txt"))
        tracemalloc.take_snapshot().dump(str(target.with_suffix(".part")))
        target.with_suffix(".part").rename(target)

    tracemalloc.start(FRAMES)
    signal.signal(signal.SIGUSR2, snapshot)
    from forge.cli import main as forge

    return forge(sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
