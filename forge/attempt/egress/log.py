"""What a sandbox tried to reach, for the attempt's record: every decision, counted, bounded.

One entry per distinct (destination, decision, reason), in the order first seen, with how many
connections it covers; a recipe that tries a million destinations fills `MAX_ENTRIES` and the
rest are only counted (`truncated`), so the record stays small.
"""

from __future__ import annotations

from typing import Literal

import msgspec

Outcome = Literal["admitted", "refused", "failed"]
"""`refused` by the policy; `failed` when admitted (or a name) but not reached: no address, or
no connection."""
MAX_ENTRIES = 200


class EgressEntry(msgspec.Struct, rename="camel", kw_only=True):
    """One destination as the proxy decided it."""

    destination: str
    """`host:port` as the client named it (a name lowercased, an address in canonical form)."""
    decision: Outcome
    reason: str
    count: int


class EgressRecord(msgspec.Struct, rename="camel", kw_only=True):
    """An attempt's `egress` in `attempt.json`: the policy and every decision it made."""

    policy: str
    """`public` (network: true) or `allow-list`."""
    decisions: list[EgressEntry]
    truncated: int = 0
    """Connections decided after `MAX_ENTRIES` distinct entries were listed (counted only)."""


class EgressLog:
    """The decisions of one attempt's proxy, as they happen."""

    def __init__(self, policy: str) -> None:
        self.policy = policy
        self._entries: dict[tuple[str, str, str], EgressEntry] = {}
        self._truncated = 0

    def note(self, destination: str, decision: Outcome, reason: str) -> bool:
        """Count one decision; True when it is the first of its entry (worth a log line)."""
        key = (destination, decision, reason)
        entry = self._entries.get(key)
        if entry is not None:
            entry.count += 1
            return False
        if len(self._entries) < MAX_ENTRIES:
            self._entries[key] = EgressEntry(
                destination=destination, decision=decision, reason=reason, count=1
            )
            return True
        self._truncated += 1
        return False

    def record(self) -> EgressRecord:
        """A copy for the attempt record (later decisions do not change it)."""
        return EgressRecord(
            policy=self.policy,
            decisions=[msgspec.structs.replace(e) for e in self._entries.values()],
            truncated=self._truncated,
        )
