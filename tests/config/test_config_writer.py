"""Replacing forge.toml: through a symlink, in its mode, never partial, refused when it moved."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from forge.config.loader import fingerprint_of
from forge.config.writer import WriteRefused, replace_file


def test_a_symlinked_file_is_written_through_in_its_own_mode(tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "forge.toml"
    real.parent.mkdir()
    real.write_text("[log]\n")
    real.chmod(0o640)
    link = tmp_path / "forge.toml"
    link.symlink_to(real)
    replace_file(link, b'[log]\nlevel = "debug"\n', fingerprint_of(b"[log]\n"))
    assert link.is_symlink()
    assert os.readlink(link) == str(real)
    assert real.read_text() == '[log]\nlevel = "debug"\n'
    assert real.stat().st_mode & 0o7777 == 0o640
    assert sorted(p.name for p in real.parent.iterdir()) == ["forge.toml"]


def test_an_editor_replacing_the_file_before_the_rename_wins(tmp_path: Path) -> None:
    """The fingerprint is read again after the temp file exists and before the rename."""
    path = tmp_path / "forge.toml"
    path.write_text("[log]\n")
    seen: list[list[str]] = []

    def editor_saves() -> None:
        seen.append(sorted(p.name for p in tmp_path.iterdir()))
        (tmp_path / "forge.toml.editor").write_text("# the editor's text\n")
        (tmp_path / "forge.toml.editor").rename(path)

    with pytest.raises(WriteRefused) as refused:
        replace_file(path, b"# the save\n", fingerprint_of(b"[log]\n"), before_rename=editor_saves)
    assert refused.value.reason == "stale"
    assert path.read_text() == "# the editor's text\n"
    [names] = seen
    assert len(names) == 2
    assert names[0].startswith(".forge.toml.")
    assert names[0].endswith(".tmp")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["forge.toml"]


def test_a_missing_file_is_created_and_a_stale_fingerprint_refused(tmp_path: Path) -> None:
    path = tmp_path / "conf" / "forge.toml"
    with pytest.raises(WriteRefused) as refused:
        replace_file(path, b"[log]\n", fingerprint_of(b"something else"))
    assert refused.value.reason == "stale"
    assert not path.exists()
    replace_file(path, b"[log]\n", fingerprint_of(b""))
    assert path.read_bytes() == b"[log]\n"


def test_a_file_that_cannot_be_written_is_io_and_leaves_nothing(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    with pytest.raises(WriteRefused) as refused:
        replace_file(blocker / "forge.toml", b"[log]\n", fingerprint_of(b""))
    assert refused.value.reason == "io"
    assert "not a directory" in refused.value.message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["not-a-folder"]
