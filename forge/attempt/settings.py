"""Run-time knobs that are not part of the activation: transient waits, limits and test hooks.

Each attempt's bounds (processes, memory, disk written, open files) come from forge.toml's `[lab]`
(`limits_from_config`), the defaults of `forge.attempt.limits.Limits` where none was read.

Production waits 30 s, then 120 s, after a transient provider error, and keeps the Dask client lease
refreshed every 5 s, stale after 30 s (docs/lab-dask.md). Tests scale them with
`FORGE_LAB_TRANSIENT_WAITS_MS` and `FORGE_LAB_LEASE_MS` (`<refresh>,<stale>`) and use
`FORGE_LAB_TEST_HOOKS` (JSON, read only when set) to hold a coordinate at a phase until a file
appears, lower the acceptance timeout, force a capture, cleanup or report-save failure (acceptance
table O-26), or mount a folder writable in the recipe's sandbox (`sandboxBinds`: the tests' probe
channel).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

from forge.attempt.errors import LabRefusal
from forge.attempt.limits import MIB, Limits
from forge.config import LabConfig
from forge.testhooks import LAB_TEST_HOOKS

TRANSIENT_WAITS_ENV = "FORGE_LAB_TRANSIENT_WAITS_MS"
TEST_HOOKS_ENV = LAB_TEST_HOOKS.env
LEASE_ENV = "FORGE_LAB_LEASE_MS"
DEFAULT_TRANSIENT_WAITS_S = (30.0, 120.0)
DEFAULT_LEASE_S = (5.0, 30.0)
DEFAULT_ACCEPTANCE_TIMEOUT_MS = 600_000
HOOK_PHASES = ("capture", "verify", "rerun", "record")
FORCED_FAILURES = ("capture", "cleanup", "report-save")


@dataclass(frozen=True)
class Hold:
    coordinate: str
    """`<task>/<variant>/rep-<n>`."""
    phase: str
    until: str
    """A path; the attempt writes `<until>.waiting` and waits until `until` exists."""


@dataclass(frozen=True)
class LabSettings:
    transient_waits_s: tuple[float, float] = DEFAULT_TRANSIENT_WAITS_S
    lease_s: tuple[float, float] = DEFAULT_LEASE_S
    """How often a Dask client refreshes its lease, and after how long unrefreshed it is stale."""
    acceptance_timeout_ms: int = DEFAULT_ACCEPTANCE_TIMEOUT_MS
    holds: tuple[Hold, ...] = ()
    forced_failures: frozenset[str] = field(default_factory=frozenset)
    sandbox_binds: tuple[str, ...] = ()
    """Test hook: folders mounted writable in the sandbox (a test's probe channel)."""
    limits: Limits = field(default_factory=Limits)
    """What each attempt may use (`[lab]`'s `limit_*` keys)."""
    agent_cli: str | None = None
    """The Claude Code CLI a `claude-code` atom runs (found at preview, `forge.attempt.agent_cli`);
    None when no variant has one."""


def limits_from_config(lab: LabConfig) -> Limits:
    """forge.toml's `[lab]` bounds, in the units `Limits` keeps."""
    return Limits(
        pids=lab.limit_pids,
        memory_bytes=lab.limit_memory_mib * MIB,
        disk_bytes=lab.limit_disk_mib * MIB,
        open_files=lab.limit_open_files,
    )


def _seconds_pair(
    env: Mapping[str, str], name: str, default: tuple[float, float]
) -> tuple[float, float]:
    """Two comma-separated millisecond integers, like `30000,120000`, as seconds."""
    if name not in env:
        return default
    try:
        first, second = (int(part) / 1000 for part in env[name].split(","))
    except ValueError:
        raise LabRefusal(
            f"{name} must be two integers, like {int(default[0] * 1000)},{int(default[1] * 1000)}"
        ) from None
    return (first, second)


def settings_from_env(env: Mapping[str, str]) -> LabSettings:
    waits = _seconds_pair(env, TRANSIENT_WAITS_ENV, DEFAULT_TRANSIENT_WAITS_S)
    lease = _seconds_pair(env, LEASE_ENV, DEFAULT_LEASE_S)
    if TEST_HOOKS_ENV not in env:
        return LabSettings(transient_waits_s=waits, lease_s=lease)
    try:
        hooks = json.loads(env[TEST_HOOKS_ENV])
        holds = tuple(
            Hold(coordinate=h["coordinate"], phase=h["phase"], until=h["until"])
            for h in hooks.get("holds", [])
        )
        forced = frozenset(hooks.get("fail", []))
        timeout = int(hooks.get("acceptanceTimeoutMs", DEFAULT_ACCEPTANCE_TIMEOUT_MS))
        binds = tuple(str(path) for path in hooks.get("sandboxBinds", []))
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise LabRefusal(f"{TEST_HOOKS_ENV} is not valid: {error}") from None
    if any(h.phase not in HOOK_PHASES for h in holds) or not forced <= set(FORCED_FAILURES):
        raise LabRefusal(f"{TEST_HOOKS_ENV}: phases are {HOOK_PHASES}, failures {FORCED_FAILURES}")
    return LabSettings(
        transient_waits_s=waits,
        lease_s=lease,
        acceptance_timeout_ms=timeout,
        holds=holds,
        forced_failures=forced,
        sandbox_binds=binds,
    )
