"""Temp-then-rename writes: a reader never sees a torn file."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def write_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with temp.open("wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temp, path)


def write_json(path: Path, data: Any) -> None:
    write_bytes(path, (json.dumps(data, indent=1, sort_keys=True) + "\n").encode())
