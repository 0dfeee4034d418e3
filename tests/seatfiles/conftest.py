"""The seat-files tests share one rig: a real supervisor and socket in this process."""

from __future__ import annotations

from .rig import tree_rig

__all__ = ["tree_rig"]
