"""What a forge.toml poll and a refusal cost, side by side in one run.

    .venv/bin/python bench/config_reload.py

1. One watcher poll: `os.stat` alone (O-G5's gate) against read + SHA-256 (what the watcher does)
   and a full reload (read, parse, validate, build the document), for the defaults file and a file
   with 50 projects.
2. A refusal: loading a file whose last key is wrong (the line is located by bisection) against
   loading the same file without the fault, for 60, 600 and 1800 lines.
Prints medians in microseconds and the ratios.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from forge.config.loader import ConfigError, fingerprint_of, load_config
from forge.config.template import defaults_toml


def median_us(action: Callable[[], object], repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1e6


def projects(count: int) -> str:
    return "".join(
        f'[[projects]]\norg = "acme"\nname = "p{index}"\npath = "~/src/p{index}"\n\n'
        for index in range(count)
    )


def read_and_hash(path: Path) -> str:
    """What one watcher poll does before it knows whether anything changed."""
    return fingerprint_of(path.read_bytes())


def refused(path: Path) -> None:
    try:
        load_config(path)
    except ConfigError:
        return
    raise AssertionError("the faulty file loaded")


def main() -> None:
    with tempfile.TemporaryDirectory() as name:
        run(Path(name))


def run(folder: Path) -> None:
    print("poll step (median us)        stat   read+hash   reload   hash/stat   reload/stat")
    for name, text in (("defaults", defaults_toml()), ("50 projects", projects(50))):
        path = folder / "forge.toml"
        path.write_text(text)
        stat = median_us(partial(os.stat, path), 2000)
        hashed = median_us(partial(read_and_hash, path), 2000)
        reload = median_us(partial(load_config, path), 200)
        print(
            f"{name:<12} {len(text):>6} B   {stat:6.1f}   {hashed:9.1f}   {reload:6.0f}"
            f"   {hashed / stat:9.1f}   {reload / stat:11.0f}"
        )
    print("\nrefusal (median us)     lines     good    faulty   faulty/good")
    for count in (10, 100, 300):
        good, bad = folder / "good.toml", folder / "bad.toml"
        text = projects(count).replace("\n\n", '\nshell = "/bin/sh"\n\n')
        good.write_text(text)
        bad.write_text(text + '[server]\nport = "x"\n')
        loaded = median_us(partial(load_config, good), 20)
        failed = median_us(partial(refused, bad), 20)
        lines = len(text.splitlines())
        print(f"{'':<20} {lines:>8} {loaded:8.0f} {failed:9.0f}   {failed / loaded:11.1f}")


if __name__ == "__main__":
    main()
