"""forge's folders and files are the person's alone: a real `forge supervise` started under umask
022 leaves nothing of its own open to other users, closes the folder an older forge left 0755
(saying so once in the log), and refuses a runtime folder another user made first."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from forge.filemodes import ForeignFolder, loose, private_dir
from forge.testing.supervised import Start

ROOT = os.geteuid() == 0
NOBODY = 65534


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


@pytest.fixture
def umask_022() -> Iterator[None]:
    """The umask most accounts have: files 0644, folders 0755 unless forge says otherwise."""
    previous = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(previous)


def test_a_new_folder_is_private_whatever_the_umask(tmp_path: Path, umask_022: None) -> None:
    folder = tmp_path / "state" / "forge"
    assert private_dir(folder) is None
    assert mode(folder) == 0o700


def test_a_folder_an_older_forge_left_open_is_closed_once(tmp_path: Path) -> None:
    folder = tmp_path / "forge"
    folder.mkdir()
    folder.chmod(0o755)
    assert loose(folder) == (
        f"{folder} is open to every user of this machine (mode 0755): chmod 700 {folder}"
    )
    assert private_dir(folder) == 0o755
    assert mode(folder) == 0o700
    assert private_dir(folder) is None
    assert loose(folder) is None


@pytest.mark.skipif(not ROOT, reason="giving a folder to another user needs root")
def test_a_folder_or_symlink_another_user_made_first_is_refused(tmp_path: Path) -> None:
    squatted = tmp_path / "forge-0"
    squatted.mkdir()
    squatted.chmod(0o777)
    os.chown(squatted, NOBODY, NOBODY)
    with pytest.raises(ForeignFolder, match=f"{squatted} belongs to uid {NOBODY}, not to you"):
        private_dir(squatted)
    assert mode(squatted) == 0o777
    mine = tmp_path / "mine"
    mine.mkdir(mode=0o700)
    link = tmp_path / "forge-link"
    link.symlink_to(mine)
    os.lchown(link, NOBODY, NOBODY)  # whoever owns the link can point it elsewhere later
    with pytest.raises(ForeignFolder, match=f"belongs to uid {NOBODY}"):
        private_dir(link)


async def test_a_supervisor_under_umask_022_keeps_its_files_private(
    supervise: Start, forge_dirs: dict[str, Path], umask_022: None
) -> None:
    state = forge_dirs["state"] / "forge"
    state.mkdir(mode=0o755)  # what forge made before its folders were private
    old_log = state / "forge.log"
    old_log.write_text("")
    old_log.chmod(0o644)
    supervised = await supervise("")
    await supervised.greeted()  # served once listening.json is written (the same turn of its loop)
    assert mode(state) == 0o700
    for name in ("forge.log", "token", "listening.json"):
        assert mode(state / name) == 0o600, name
    assert mode(forge_dirs["runtime"] / "forge") == 0o700
    closed = await supervised.record("folder_closed")
    assert (closed["path"], closed["was"]) == (str(state), "0755")
    await supervised.stop()
    again = await supervise("")
    await again.record("socket_listening")
    assert again.records("folder_closed") == []


@pytest.mark.skipif(not ROOT, reason="giving a folder to another user needs root")
def test_supervise_refuses_a_runtime_folder_another_user_made_first(
    forge_dirs: dict[str, Path], free_port: int
) -> None:
    squatted = forge_dirs["runtime"] / "forge"
    squatted.mkdir(mode=0o777)
    squatted.chmod(0o777)
    os.chown(squatted, NOBODY, NOBODY)
    config = forge_dirs["config"] / "forge.toml"
    config.write_text("")
    done = subprocess.run(
        [sys.executable, "-m", "forge.cli", "supervise", "--config", str(config),
         "--port", str(free_port)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert f"forge: {squatted} belongs to uid {NOBODY}, not to you" in done.stderr
    assert list(squatted.iterdir()) == []
