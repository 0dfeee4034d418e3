"""What can go wrong in the browser host, named by whose fault it is (`BrowserMissing`, which
the supervisor checks too, is in `protocol`)."""

from __future__ import annotations

from forge.errors import InternalError, PeerError


class CdpCommandFailed(PeerError):
    """Chromium refused a command (a gone node, a closed target): the reply's own words."""

    def __init__(self, method: str, code: int | None, message: str | None) -> None:
        super().__init__(f"{method} failed: {message} ({code})")
        self.method = method
        self.code = code
        self.message = message


class BrowserGone(InternalError):
    """The Chromium this host runs exited or closed its pipe; `reason` says how, for viewers."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
