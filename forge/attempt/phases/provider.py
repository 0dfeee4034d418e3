"""Waiting out a transient provider error: is the provider's host back?

A coding run that ends in a transient provider error is resumed only once the provider's host
resolves again, checked a few times with waits from the settings; the resolver is injected so
tests need no network.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from urllib.parse import urlparse

from forge.attempt.spec import AttemptSpec
from forge.clock import Clock

MAX_PROVIDER_CHECKS = 4
DEFAULT_PROVIDER_HOST = "api.anthropic.com"

Resolver = Callable[[str], Awaitable[bool]]
"""Does this provider host resolve? Injected so tests need no network."""


async def resolve_host(host: str) -> bool:
    try:
        await asyncio.get_running_loop().getaddrinfo(host, 443)
    except (socket.gaierror, UnicodeError):
        return False
    return True


@dataclass(frozen=True)
class ProviderWait:
    """One wait for the provider: checks used in the stage so far, whether it resolved, and a
    note for each check that failed."""

    checks: int
    resolved: bool
    notes: tuple[str, ...]


async def await_provider(
    spec: AttemptSpec, clock: Clock, resolver: Resolver, checks_done: int
) -> ProviderWait:
    """Wait and check the provider host until it resolves or the stage's checks are used."""
    host = urlparse(spec.caller_env.get("ANTHROPIC_BASE_URL", "")).hostname
    host = host or DEFAULT_PROVIDER_HOST
    first, later = spec.settings.transient_waits_s
    checks = checks_done
    notes: list[str] = []
    while checks < MAX_PROVIDER_CHECKS:
        await clock.sleep(first if checks == 0 else later)
        checks += 1
        if await resolver(host):
            return ProviderWait(checks, True, tuple(notes))
        notes.append(
            f"provider host {host} did not resolve (check {checks} of {MAX_PROVIDER_CHECKS})"
        )
    return ProviderWait(checks, False, tuple(notes))
