"""What goes wrong for a client of the socket, named by who is at fault (forge.errors' tree).

ForgeError
 ├─ UserError
 │   ├─ SupervisorUnreachable   nothing answers at the URL: start `forge supervise` (exit 3)
 │   └─ TokenRefused            the supervisor refused this client's token (401, or 429)
 └─ PeerError
     ├─ ServerRefused           the server answered a request with `error` or `{"ok": false}`
     └─ ConnectionLost          the socket closed, or the link died (no byte after a probe)
"""

from __future__ import annotations

from pathlib import Path

from forge.errors import PeerError, UserError

NO_SUPERVISOR_EXIT = 3
"""The exit code of every client verb when no supervisor answers at the URL."""


class SupervisorUnreachable(UserError):
    """No forge supervisor answers at the URL; the message says why and how to start one."""

    exit_code = NO_SUPERVISOR_EXIT

    def __init__(self, url: str, why: str) -> None:
        super().__init__(f"no forge supervisor at {url}: {why} — start it with `forge supervise`")
        self.url = url
        self.why = why


class TokenRefused(UserError):
    """The supervisor refused the upgrade (401, or 429 when more refusals from this address are
    waiting than it holds): the token offered is missing or not its own."""

    exit_code = NO_SUPERVISOR_EXIT

    def __init__(self, url: str, path: Path | None, status: int) -> None:
        source = "the token given" if path is None else f"the token in {path}"
        super().__init__(
            f"the forge supervisor at {url} refused {source} (HTTP {status}): a supervisor run by "
            "another user or with another XDG_STATE_HOME has its own (`forge token show` there)"
        )
        self.url = url


class ServerRefused(PeerError):
    """The server refused a request: `what` is the verb it named, `why` its own sentence."""

    def __init__(self, what: str, why: str) -> None:
        super().__init__(f"{what} refused: {why}")
        self.what = what
        self.why = why


class ConnectionLost(PeerError):
    """The connection ended; `reason` says how (closed by the server, probe unanswered...)."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"connection lost: {reason}")
        self.reason = reason
