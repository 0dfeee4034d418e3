"""Config tests write real forge.toml files into a temporary folder."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest


@pytest.fixture
def write_config(tmp_path: Path) -> Callable[[str], Path]:
    """Write `text` to tmp/forge.toml and return its path."""

    def write(text: str) -> Path:
        path = tmp_path / "forge.toml"
        path.write_text(text, encoding="utf-8")
        return path

    return write
