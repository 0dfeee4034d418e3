"""Ending Chromium's audio service after the sound server restarted: the sound is said back only
once Chromium has reaped the ended process, so the page's next sound cannot go to the dead one.

A stand-in for Chromium (a Python process) starts an "audio service" child carrying Chromium's
flag, reports the child's death without reaping it (`waitid` with `WNOWAIT`), and reaps it only
when told on its stdin: the test decides when Chromium has seen the death."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator

import psutil
import pytest

from forge.workers.browser.audio import AUDIO_SERVICE_FLAG, restart_audio_service

from .harness import WAIT_S

CHROMIUM = f"""
import os, subprocess, sys
service = subprocess.Popen(
    [sys.executable, "-c", "import time; time.sleep(600)", {AUDIO_SERVICE_FLAG!r}]
)
while {AUDIO_SERVICE_FLAG!r}.encode() not in open(f"/proc/{{service.pid}}/cmdline", "rb").read():
    os.sched_yield()  # Popen returns before exec has laid out the child's command line
print(service.pid, flush=True)
os.waitid(os.P_PID, service.pid, os.WEXITED | os.WNOWAIT)
print("died", flush=True)
sys.stdin.readline()
service.wait()
print("reaped", flush=True)
sys.stdin.readline()
"""


@pytest.fixture
def chromium() -> Iterator[subprocess.Popen[str]]:
    with subprocess.Popen(
        [sys.executable, "-c", CHROMIUM], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as process:
        yield process
        process.kill()


def service_of(chromium: subprocess.Popen[str]) -> psutil.Process:
    assert chromium.stdout is not None
    return psutil.Process(int(chromium.stdout.readline()))


def tell(chromium: subprocess.Popen[str]) -> None:
    assert chromium.stdin is not None
    chromium.stdin.write("\n")
    chromium.stdin.flush()


async def test_the_restart_returns_once_chromium_reaped_the_ended_service(
    chromium: subprocess.Popen[str],
) -> None:
    service = service_of(chromium)
    restart = asyncio.ensure_future(asyncio.to_thread(restart_audio_service, chromium.pid, WAIT_S))
    assert chromium.stdout is not None
    assert await asyncio.to_thread(chromium.stdout.readline) == "died\n"
    assert service.status() == psutil.STATUS_ZOMBIE  # dead, and Chromium has not seen it yet
    assert not restart.done()
    tell(chromium)  # Chromium reaps it
    assert await asyncio.wait_for(restart, WAIT_S) == (True, False)
    assert await asyncio.to_thread(chromium.stdout.readline) == "reaped\n"


def test_a_service_chromium_never_reaps_is_said_after_the_bound(
    chromium: subprocess.Popen[str],
) -> None:
    service_of(chromium)
    assert restart_audio_service(chromium.pid, 0.2) == (True, True)


def test_no_chromium_or_no_audio_service_ends_nothing(chromium: subprocess.Popen[str]) -> None:
    assert restart_audio_service(None, WAIT_S) == (False, False)
    service_of(chromium).kill()
    assert chromium.stdout is not None
    assert chromium.stdout.readline() == "died\n"
    tell(chromium)
    assert chromium.stdout.readline() == "reaped\n"
    assert restart_audio_service(chromium.pid, WAIT_S) == (False, False)
