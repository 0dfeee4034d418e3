"""forge health's JSON state files, written atomically (`forge.files.write_atomic`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from forge.files import write_atomic


def write_json(path: Path, data: Any) -> None:
    write_atomic(path, (json.dumps(data, indent=1, sort_keys=True) + "\n").encode())
