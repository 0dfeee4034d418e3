"""forge.files: an atomic write replaces the whole file and leaves no temp file behind."""

from __future__ import annotations

from pathlib import Path

from forge.files import write_atomic


def test_an_atomic_write_creates_the_folder_replaces_the_bytes_and_leaves_nothing_else(
    tmp_path: Path,
) -> None:
    path = tmp_path / "state" / "report.json"
    write_atomic(path, b"old")
    write_atomic(path, b"new")
    assert path.read_bytes() == b"new"
    assert list(path.parent.iterdir()) == [path]
