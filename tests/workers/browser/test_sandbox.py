"""Chromium keeps its own sandbox unless forge runs as root; as root its `--no-sandbox` is said
once in the log, on `forge status` and on every browser row (this suite runs as root in CI)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest

from forge.testing.supervised import Start, ask
from forge.workers.browser.chromium import LaunchSettings, chromium_argv
from forge.workers.browser.protocol import DEFAULT_EXECUTABLE, NO_SANDBOX, sandbox_off

ROOT_LINE = "forge runs as root, so Chromium runs without its sandbox (--no-sandbox)"


def test_chromium_keeps_its_sandbox_unless_forge_runs_as_root(tmp_path: Path) -> None:
    settings = LaunchSettings(DEFAULT_EXECUTABLE, tmp_path / "profile")
    for user in (1000, 65534):
        assert sandbox_off(user) is None
        assert NO_SANDBOX not in chromium_argv(settings, user)
    assert sandbox_off(0) == ROOT_LINE
    argv = chromium_argv(settings, 0)
    assert argv.count(NO_SANDBOX) == 1
    assert argv[0] == str(DEFAULT_EXECUTABLE)
    assert argv[-1] == f"--user-data-dir={tmp_path / 'profile'}"


async def _status(url: str, *flags: str) -> str:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "forge.cli", "status", "--url", url, *flags,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await process.communicate()
    assert process.returncode == 0, err
    return out.decode()


@pytest.mark.skipif(os.geteuid() != 0, reason="the root behaviour needs root")
@pytest.mark.skipif(not DEFAULT_EXECUTABLE.exists(), reason="no Chromium at /usr/bin/chromium")
async def test_as_root_the_missing_sandbox_is_said_in_the_log_status_and_rows(
    supervise: Start, tmp_path: Path
) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    supervised = await supervise(f'[[projects]]\norg = "acme"\nname = "proj"\npath = "{project}"\n')
    assert f"\nbrowser: {ROOT_LINE}\n" in await _status(supervised.url)
    assert json.loads(await _status(supervised.url, "--json"))["browser_sandbox_off"] == (ROOT_LINE)
    said = await supervised.record("browser_sandbox_off")
    assert said["why"] == ROOT_LINE
    client = await supervised.greeted()
    seat = {"org": "acme", "project": "proj", "label": "lead"}
    opened = await ask(
        client, {"kind": "browser_open", "seat": seat, "url": "about:blank", "reply_to": "o"}
    )
    assert opened["body"]["ok"] is True, opened
    started = await supervised.record("browser_chromium_started")
    assert started["sandbox"] is False
    tabs = await ask(client, {"kind": "browser_tabs", "seat": seat, "reply_to": "t"})
    assert tabs["body"]["tabs"]["sandbox_off"] == ROOT_LINE
    assert tabs["body"]["tabs"]["up"] is True
    assert len(supervised.records("browser_sandbox_off")) == 1
