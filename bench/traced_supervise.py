"""`forge supervise` with tracemalloc on, for `bench/chaos.py --trace-memory`.

    python -P bench/traced_supervise.py OUT_DIR supervise [forge's own arguments]

SIGUSR2 writes a tracemalloc snapshot to OUT_DIR/snapshot-N.bin (N counts from 0), so the chaos
run can compare what the supervisor holds after warm-up with what it holds at the end: the lines
whose allocations grew are where an RSS slope comes from. Tracing costs the supervisor CPU and
memory of its own, so a traced run's latencies and RSS are not the published figures.
"""

from __future__ import annotations

import itertools
import signal
import sys
import tracemalloc
from pathlib import Path
from types import FrameType

FRAMES = 10


def main() -> int:
    out = Path(sys.argv[1])
    numbers = itertools.count()

    def snapshot(_signum: int, _frame: FrameType | None) -> None:
        target = out / f"snapshot-{next(numbers)}.bin"
        tracemalloc.take_snapshot().dump(str(target.with_suffix(".part")))
        target.with_suffix(".part").rename(target)

    tracemalloc.start(FRAMES)
    signal.signal(signal.SIGUSR2, snapshot)
    from forge.cli import main as forge

    return forge(sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
