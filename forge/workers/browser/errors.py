"""What can go wrong in the browser host, named by whose fault it is."""

from __future__ import annotations

from pathlib import Path

from forge.errors import InternalError, PeerError, UserError


class BrowserMissing(UserError):
    """The configured Chromium is not there: the person installs it or points forge at it."""

    def __init__(self, executable: Path) -> None:
        super().__init__(
            f"no Chromium at {executable}: install Debian's chromium package "
            "(apt-get install chromium) or set [browser] chromium_path in forge.toml"
        )
        self.executable = executable


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
