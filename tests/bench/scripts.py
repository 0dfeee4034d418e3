"""The bench scripts' pure modules, loaded by path (by the tests and by bench/chaos.py):
`bench/` is no package, and holds a `socket.py` that must never shadow the standard library's
on `sys.path`."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[2] / "bench"


def load(name: str) -> ModuleType:
    """`bench/<name>.py` as module `name` (registered, so its dataclasses resolve their types)."""
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
