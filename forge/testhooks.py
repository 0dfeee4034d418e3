"""Every test hook in production code: the environment variables a test sets to reach inside.

A test hook lets a test or benchmark drive a real `forge` process where no ordinary input
reaches: extra verbs, a pinned clock, a held phase. Production never sets one, and each is read
only by the readers named below, through its `Hook` here, so this module is the one list of the
doors a test has into production code:

    variable                  what it does                                   read by
    FORGE_SUPERVISOR_DRILLS   "1": `forge supervise` registers the drill     forge.supervisor.cli
                              verbs (forge/supervisor/socket/drills.py)
    FORGE_LAB_TEST_HOOKS      JSON: hold a coordinate at a phase until a     forge.attempt.settings
                              file appears, lower the acceptance timeout,
                              force a capture/cleanup/report-save failure
    FORGE_NOW_MS              pins forge health's wall clock (ms since the   forge.health.settings,
                              epoch) in the processes a test starts          the gh shim (gh.sh)
    FORGE_LEARN_HOLD          `<phase>=<path>`: `forge suggestion --approve` forge.lab.learnhold
                              or `forge learn --pending` parks at the phase
                              until the path exists (a test kills it there)

A test names a hook by its constant (`{SUPERVISOR_DRILLS.env: "1"}`), never by a literal. Knobs
that scale a real duration (`FORGE_LAB_TRANSIENT_WAITS_MS`, the socket's `*_s` keys) are
settings, not hooks: they live with the area that reads them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Hook:
    """One test hook: its variable, what setting it does, and who reads it."""

    env: str
    does: str
    readers: tuple[str, ...]

    def value(self, environ: Mapping[str, str] | None = None) -> str | None:
        """The hook's value, None when unset or empty (production)."""
        value = (os.environ if environ is None else environ).get(self.env)
        return value or None

    def enabled(self, environ: Mapping[str, str] | None = None) -> bool:
        """For an on/off hook: set to "1"."""
        return self.value(environ) == "1"

    def set(self, environ: Mapping[str, str], value: str = "1") -> dict[str, str]:
        """A copy of `environ` with the hook set: the environment of a process a test starts."""
        return {**environ, self.env: value}


SUPERVISOR_DRILLS = Hook(
    "FORGE_SUPERVISOR_DRILLS",
    '"1": forge supervise registers the drill verbs (forge.supervisor.socket.drills)',
    ("forge.supervisor.cli",),
)
LAB_TEST_HOOKS = Hook(
    "FORGE_LAB_TEST_HOOKS",
    "JSON: holds at a phase, a lower acceptance timeout, forced failures (forge.attempt.settings)",
    ("forge.attempt.settings",),
)
NOW_MS = Hook(
    "FORGE_NOW_MS",
    "milliseconds since the epoch: forge health's pinned wall clock",
    ("forge.health.settings", "forge/health/shim/gh.sh"),
)

LEARN_HOLD = Hook(
    "FORGE_LEARN_HOLD",
    "<phase>=<path>: park an approval or a pending learn run at a phase until the path exists",
    ("forge.lab.learnhold",),
)

HOOKS = (SUPERVISOR_DRILLS, LAB_TEST_HOOKS, NOW_MS, LEARN_HOLD)
