"""forge: attach phones and desktops to a workstation's terminals and browser tabs."""

from __future__ import annotations

__version__ = "0.1.0"
