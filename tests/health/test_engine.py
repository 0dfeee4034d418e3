"""`forge health`: exit codes, --json, --no-probe, --ttl, --window, the probe, the verdict cache."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import ForgeEnv

NOW = 1_800_000_000_000


def record(env: ForgeEnv, *signals: str, now_ms: int = NOW) -> None:
    for signal in signals:
        result = env.forge(
            "health", "record", "--rc", "1", "--signal", signal, env={"FORGE_NOW_MS": str(now_ms)}
        )
        assert result.returncode == 0, result.stderr


@pytest.mark.parametrize(
    ("signals", "rc", "state"),
    [
        (("ok", "ok"), 0, "operational"),
        (("ok", "server"), 3, "degraded"),
        (("net", "net"), 4, "unreachable"),
        ((), 5, "unknown"),
    ],
)
def test_h02_h09_exit_codes_and_json(
    forge_env: ForgeEnv, signals: tuple[str, ...], rc: int, state: str
) -> None:
    record(forge_env, *signals)
    result = forge_env.forge("health", "--json", "--no-probe", env={"FORGE_NOW_MS": str(NOW)})
    assert result.returncode == rc, result.stderr
    verdict = json.loads(result.stdout)
    assert verdict["state"] == state
    assert {
        "state",
        "reason",
        "sample",
        "window_s",
        "n",
        "computed_at",
        "probed",
        "cache",
        "queue",
    } <= set(verdict)
    console = subprocess.run(
        [str(Path(sys.executable).parent / "forge-health"), "status", "--no-probe"],
        env={**forge_env.env, "FORGE_NOW_MS": str(NOW)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert console.returncode == rc
    assert state in console.stdout


def test_h11_h13_no_probe_never_calls_and_is_unknown(forge_env: ForgeEnv) -> None:
    from forge.health.engine import is_trustworthy

    assert forge_env.forge("health", "--no-probe").returncode == 5
    assert forge_env.fake.calls() == []
    import os

    saved = dict(os.environ)
    os.environ.update(forge_env.env)
    try:
        assert is_trustworthy(probe=False) is False
    finally:
        os.environ.clear()
        os.environ.update(saved)


def test_h12_h12a_h14_one_probe_recorded_once_then_cached(forge_env: ForgeEnv) -> None:
    for _ in range(3):
        assert forge_env.forge("health").returncode == 0
    assert forge_env.fake.argvs() == [["api", "rate_limit"]]
    rows = forge_env.observations()
    assert [row[3:] for row in rows] == [["ok", "api rate_limit"]]
    verdict = json.loads(forge_env.forge("health", "--json").stdout)
    assert verdict["probed"] is True


def test_h14_concurrent_status_calls_make_one_probe(forge_env: ForgeEnv) -> None:
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "forge.cli", "health"],
            env=forge_env.env,
            stdout=subprocess.DEVNULL,
        )
        for _ in range(6)
    ]
    assert [p.wait(timeout=60) for p in procs] == [0] * 6
    assert forge_env.fake.argvs() == [["api", "rate_limit"]]


def test_h12b_the_probe_is_bounded_and_a_timeout_is_net(forge_env: ForgeEnv) -> None:
    from forge.clock import SYSTEM_CLOCK
    from forge.health import engine, realgh

    forge_env.fake.fail("api rate_limit", "503", delay=30)
    result = realgh.run(
        forge_env.realbin / "gh",
        ["api", "rate_limit"],
        state_dir=forge_env.state_dir,
        clock=SYSTEM_CLOCK,
        timeout_s=0.5,
        env=forge_env.env,
    )
    assert (result.signal, result.rc) == ("net", 124)
    assert engine.PROBE_TIMEOUT_S == 10.0


def test_h15_a_new_observation_invalidates_the_cached_verdict(forge_env: ForgeEnv) -> None:
    forge_env.fake.seed("one")
    assert forge_env.gh("issue", "view", "1").returncode == 0
    assert forge_env.forge("health", "--ttl", "600").returncode == 0
    forge_env.fake.fail("issue view*", "503")
    forge_env.gh("issue", "view", "1")
    assert forge_env.forge("health", "--ttl", "600").returncode == 3


def test_h07c_h16_window_and_ttl_flags_and_env(forge_env: ForgeEnv) -> None:
    record(forge_env, "server", now_ms=NOW - 301_000)
    at_now = {"FORGE_NOW_MS": str(NOW)}
    assert forge_env.forge("health", "--no-probe", env=at_now).returncode == 5
    assert forge_env.forge("health", "--no-probe", "--window", "400", env=at_now).returncode == 3
    assert (
        forge_env.forge("health", "--no-probe", env={**at_now, "FORGE_WINDOW": "400"}).returncode
        == 3
    )
    for bad in (["--ttl", "-1"], ["--window", "abc"]):
        result = forge_env.forge("health", *bad)
        assert result.returncode == 2
        assert "must" in result.stderr
    assert forge_env.forge("health", env={"FORGE_TTL": "x"}).returncode == 2


def test_h17_h18a_the_ring_keeps_the_newest_500(forge_env: ForgeEnv) -> None:
    from forge.health import obslog
    from forge.health.verdict import Observation

    for i in range(600):
        obslog.append(forge_env.state_dir, Observation(NOW + i, 0, 1, "ok", "x"))
    rows = obslog.read(forge_env.state_dir)
    assert len(rows) <= 500
    assert rows[-1].ts_ms == NOW + 599
    assert all(len(line) == 5 for line in forge_env.observations())


def test_h19_h21_observations_text_and_json(forge_env: ForgeEnv) -> None:
    record(forge_env, "server")
    at_now = {"FORGE_NOW_MS": str(NOW)}
    text = forge_env.forge("health", "observations", env=at_now).stdout
    assert text == f"{NOW}\t1\t0\tserver\t?\n"
    rows = json.loads(forge_env.forge("health", "observations", "--json", env=at_now).stdout)
    assert rows == [{"ts_ms": NOW, "rc": 1, "ms": 0, "signal": "server", "sub": "?"}]
    later = {"FORGE_NOW_MS": str(NOW + 400_000)}
    assert forge_env.forge("health", "observations", env=later).stdout == ""


def test_h20_record_without_signal_and_with_a_bad_one(forge_env: ForgeEnv) -> None:
    for rc in ("0", "4", "1"):
        assert forge_env.forge("health", "record", "--rc", rc, "--sub", "api x").returncode == 0
    assert [row[3] for row in forge_env.observations()] == ["ok", "auth", "other"]
    assert forge_env.forge("health", "record", "--rc", "1", "--signal", "bogus").returncode == 2


def test_h22_reset_clears_observations_and_verdict(forge_env: ForgeEnv) -> None:
    record(forge_env, "ok")
    assert forge_env.forge("health", "--no-probe").returncode == 0
    assert forge_env.forge("health", "reset").returncode == 0
    assert forge_env.forge("health", "--no-probe").returncode == 5
    assert not (forge_env.state_dir / "health.json").exists()


def test_x01_consumers_never_compare_states_themselves() -> None:
    package = Path(__file__).parents[2] / "forge"
    offenders = [
        path
        for path in package.rglob("*.py")
        if "health" not in path.relative_to(package).parts
        and any(f'"{state}"' in path.read_text() for state in ("operational", "degraded"))
    ]
    assert offenders == []


def test_x03_text_status_speaks_of_cache_and_queue_only_when_there_is_something(
    forge_env: ForgeEnv,
) -> None:
    record(forge_env, "ok")
    quiet = forge_env.forge("health", "--no-probe", env={"FORGE_NOW_MS": str(NOW)}).stdout
    assert quiet.splitlines() == [
        "forge: operational — 1 of 1 recent calls answered (sample: ok 1)"
    ]


def test_h12_no_gh_to_probe_with_is_unknown_not_a_crash(forge_env: ForgeEnv) -> None:
    result = forge_env.forge("health", env={"PATH": f"{forge_env.shim.parent}:/nonexistent"})
    assert result.returncode == 5
    assert "no real gh found on PATH" in result.stdout
