"""The signal table: one gh call's exit code and stderr shape mapped onto one of seven signals.

The sh shim carries the same table as `grep -Ei` patterns (forge/health/shim/gh.sh); a golden
corpus test runs both and demands identical answers, so keep every pattern POSIX-ERE compatible
and change the two together.
"""

from __future__ import annotations

import re
from typing import Final, Literal

Signal = Literal["ok", "net", "server", "ratelimit", "auth", "notfound", "other"]

SIGNALS: Final[tuple[Signal, ...]] = (
    "ok",
    "net",
    "server",
    "ratelimit",
    "auth",
    "notfound",
    "other",
)
AVAILABILITY_FAILURES: Final[frozenset[Signal]] = frozenset({"net", "server", "ratelimit", "auth"})
"""Only these move the verdict towards degraded/unreachable; the cache serves and the queue spools
on exactly these."""

SUCCESSES: Final[frozenset[Signal]] = frozenset({"ok", "notfound"})
"""The forge answered: a 404 (or a 410, deleted) is a correct answer, not an outage."""

GH_AUTH_EXIT_CODE: Final = 4
"""gh exits 4 when it needs authentication, whatever it printed."""

# Order matters: rate limits arrive as 403 or 429, so they are tested before auth (H04a); a 504
# says "Timeout" and is a server answer, so server is tested before net.
_PATTERNS: Final[tuple[tuple[Signal, re.Pattern[str]], ...]] = (
    ("ratelimit", re.compile(r"rate limit|HTTP 429|abuse detection", re.IGNORECASE)),
    ("auth", re.compile(r"HTTP 40[13]|bad credentials|gh auth login", re.IGNORECASE)),
    ("notfound", re.compile(r"HTTP 404|HTTP 410|could not resolve to", re.IGNORECASE)),
    (
        "server",
        re.compile(
            r"HTTP 5[0-9][0-9]|bad gateway|service unavailable|gateway timeout"
            r"|something went wrong while executing your query",
            re.IGNORECASE,
        ),
    ),
    (
        "net",
        re.compile(
            r"error connecting to|could not resolve host|no such host|connection refused"
            r"|connection reset|timeout|timed out|network is unreachable"
            r"|check your internet connection",
            re.IGNORECASE,
        ),
    ),
)


def classify_call(rc: int, stderr: str) -> Signal:
    """Map one call's outcome to its signal; rc 0 is `ok` whatever stderr says."""
    if rc == 0:
        return "ok"
    for signal, pattern in _PATTERNS[:1]:
        if pattern.search(stderr):
            return signal
    if rc == GH_AUTH_EXIT_CODE:
        return "auth"
    for signal, pattern in _PATTERNS[1:]:
        if pattern.search(stderr):
            return signal
    return "other"


def classify_rc_only(rc: int) -> Signal:
    """For calls whose stderr went to a terminal undiverted: the exit code is all there is."""
    if rc == 0:
        return "ok"
    return "auth" if rc == GH_AUTH_EXIT_CODE else "other"


def is_availability_failure(signal: str) -> bool:
    return signal in AVAILABILITY_FAILURES
