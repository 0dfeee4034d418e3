"""What `settings_edit` carries, and its answers `settings_saved` and `settings_refused`.

The edits of a `settings_edit` arrive loosely typed (`forge.wire.client.SettingsEdit.edits`) and are
converted here one by one, so a malformed edit is answered as a refusal that echoes the page's `id`
rather than as a `client_message` error the page could not tie to its save.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from forge.wire.server import ServerMessage

Op = Literal["set", "add", "remove"]
Reason = Literal["stale", "invalid", "refused", "io"]


class Edit(msgspec.Struct, frozen=True, kw_only=True):
    """One change: `set` a key (`value` null unsets it), `add` an entry (`pattern` empty,
    `key_path` names the entry, `value` its fields), `remove` a key (`pattern` set) or an entry
    (`pattern` empty)."""

    op: Op
    area: str
    key_path: str
    pattern: str = ""
    value: Any = None


class SettingsSaved(ServerMessage, frozen=True, kw_only=True, tag="settings_saved"):
    """The save was written; the reload push follows. `restart` lists the keys it changed whose
    class is `restart`: they are in the file and apply when `forge supervise` next starts."""

    id: int | str
    restart: list[str]
    message: str | None


class SettingsRefused(ServerMessage, frozen=True, kw_only=True, tag="settings_refused"):
    """Nothing was written: `stale` (the file moved), `invalid` (the loader's own message),
    `refused` (a guard, naming what it found) or `io` (the file could not be read or written)."""

    reason: Reason
    id: int | str
    message: str
    key_path: str | None


def decode_edit(raw: Any) -> Edit:
    """One edit of a save, or ValueError naming the field that was wrong."""
    try:
        return msgspec.convert(raw, Edit)
    except msgspec.ValidationError as error:
        raise ValueError(str(error)) from None
