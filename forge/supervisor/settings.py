"""`settings_edit`: a client's save of forge.toml, answered `settings_saved` or `settings_refused`.

One save at a time (a lock), each run off the event loop: read the file, refuse it as `stale` when
its fingerprint is not the page's, apply the edits with tomlkit, load the candidate with the boot
loader (`invalid` carries the loader's own message), check the guards (`refused`), then replace the
file (`forge.config.writer`, which checks the fingerprint again before its rename). The guards are
identity diffs against the started seats: a save that leaves a seat's project absent, whether it
removed or renamed it, is refused naming the seat. A written save is answered first, then the
config watcher is asked to reload, which pushes the new settings document to every connection.
Values are never logged; the records name the keys and the reason.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from forge.config import AREAS, ConfigError, LoadedConfig, parse_config
from forge.config.edits import EditRefused, apply_edits
from forge.config.loader import fingerprint_of
from forge.config.writer import WriteRefused, read_current, replace_file
from forge.errors import UserError
from forge.logs import get_logger
from forge.supervisor.socket.connection import Connection
from forge.supervisor.socket.core import Supervisor
from forge.wire.client import SettingsEdit
from forge.wire.seats import Seat
from forge.wire.settings import Edit, SettingsRefused, SettingsSaved, decode_edit

log = get_logger(__name__)

Answer = SettingsSaved | SettingsRefused


def install(supervisor: Supervisor, reload: Callable[[], object]) -> None:
    """Serve `settings_edit`; `reload` is the config watcher's check, run after each save."""
    editor = _Editor(supervisor, reload)
    supervisor.register_verb(SettingsEdit, editor.edit)


class SettingsRefusal(UserError):
    """A save the person made that cannot be applied: `reason` for the wire, `message` in words."""

    def __init__(self, reason: str, message: str, key_path: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.key_path = key_path


@dataclass(frozen=True)
class _Save:
    """One save's inputs, taken on the loop and handed to the worker thread."""

    loaded: LoadedConfig
    fingerprint: str
    edits: Sequence[Edit]
    live: Sequence[Seat]


class _Editor:
    def __init__(self, supervisor: Supervisor, reload: Callable[[], object]) -> None:
        self._supervisor = supervisor
        self._reload = reload
        self._lock = asyncio.Lock()

    async def edit(self, connection: Connection, message: SettingsEdit) -> None:
        answer = await self._answer(message)
        connection.send(answer)
        if isinstance(answer, SettingsSaved):
            self._reload()

    async def _answer(self, message: SettingsEdit) -> Answer:
        try:
            edits = [_edit(number, raw) for number, raw in enumerate(message.edits, 1)]
            if message.fingerprint is None:
                raise SettingsRefusal("stale", "the save names no fingerprint; reload the settings")
            async with self._lock:
                save = _Save(
                    self._supervisor.loaded,
                    message.fingerprint,
                    edits,
                    [state.seat for state in self._supervisor.seats],
                )
                restart, overridden = await asyncio.to_thread(_write, save)
        except SettingsRefusal as refusal:
            log.info("settings_refused", reason=refusal.reason, key_path=refusal.key_path)
            return SettingsRefused(
                reason=refusal.reason,  # type: ignore[arg-type]
                id=message.id,
                message=refusal.message,
                key_path=refusal.key_path,
            )
        log.info("settings_saved", keys=[edit.key_path for edit in edits], restart=restart)
        return SettingsSaved(id=message.id, restart=restart, message=_note(restart, overridden))


def _edit(number: int, raw: Any) -> Edit:
    try:
        return decode_edit(raw)
    except ValueError as error:
        key_path = raw.get("key_path") if isinstance(raw, dict) else None
        raise SettingsRefusal(
            "invalid", f"edit {number}: {error}", key_path if isinstance(key_path, str) else None
        ) from None


def _write(save: _Save) -> tuple[list[str], list[str]]:
    """Apply and write one save (in a worker thread): the restart-class keys it changed, and the
    keys a command-line flag overrides. Raises `SettingsRefusal`."""
    source = save.loaded.source
    try:
        raw = read_current(source)
        if fingerprint_of(raw) != save.fingerprint:
            raise SettingsRefusal(
                "stale",
                f"{source} changed since the settings were loaded "
                f"(now {fingerprint_of(raw)}); reload them",
            )
        candidate = _candidate(save, raw)
        _guard(candidate, save.live)
        replace_file(source, candidate.raw, save.fingerprint)
    except WriteRefused as refused:
        raise SettingsRefusal(refused.reason, refused.message) from None
    before = _rows(_load(raw, save.loaded) or save.loaded)
    changed = [path for path, row in _rows(candidate).items() if before.get(path) != row]
    restart = [path for path in changed if _rows(candidate)[path]["class"] == "restart"]
    overridden = [path for path in changed if path in save.loaded.overrides]
    return restart, overridden


def _candidate(save: _Save, raw: bytes) -> LoadedConfig:
    """The file with the edits applied, loaded by the boot loader."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise SettingsRefusal(
            "invalid", f"{save.loaded.source} is not UTF-8 text ({error})"
        ) from None
    try:
        edited = apply_edits(text, save.edits)
    except EditRefused as refused:
        raise SettingsRefusal(refused.reason, refused.message, refused.key_path) from None
    loaded = _load(edited.encode("utf-8"), save.loaded, refuse=True, edits=save.edits)
    assert loaded is not None
    return loaded


def _load(
    raw: bytes, current: LoadedConfig, *, refuse: bool = False, edits: Sequence[Edit] = ()
) -> LoadedConfig | None:
    try:
        return parse_config(raw, current.source, overrides=current.overrides)
    except ConfigError as error:
        if not refuse:
            return None
        # Its reason alone: a line of the edited text, which was not written, is in no file.
        raise SettingsRefusal("invalid", error.reason, _key_path(error.key, edits)) from None


def _guard(candidate: LoadedConfig, live: Sequence[Seat]) -> None:
    """Refuse a save that leaves a started seat's project absent (removed or renamed)."""
    orphaned = [seat for seat in live if candidate.config.project(seat.org, seat.project) is None]
    if orphaned:
        first = orphaned[0]
        seats = ", ".join(str(seat) for seat in orphaned)
        raise SettingsRefusal(
            "refused",
            f"project {first.org}/{first.project} has a live seat ({seats}); "
            "a save may not remove or rename it",
            f"projects.{first.org}.{first.project}",
        )


def _rows(loaded: LoadedConfig) -> dict[str, dict[str, Any]]:
    return {row["path"]: row for area in loaded.document["areas"] for row in area["keys"]}


_AREA = re.compile(r"[A-Za-z0-9_-]+")


def _key_path(key: str | None, edits: Sequence[Edit]) -> str | None:
    """The edit a loader refusal is about, by the key's path, its pattern (the loader says
    `projects[1].path`, the page `projects.acme.web.path`) or the entry it adds; else the loader's
    own key."""
    if key is None:
        return None
    area = match.group() if (match := _AREA.match(key)) else key
    leaf = key.rsplit(".", 1)[-1]
    pattern = f"{area}.{leaf}" if area in _TABLES else f"{area}[].{leaf}"

    def rank(edit: Edit) -> int:
        if edit.key_path == key:
            return 0
        if edit.pattern == pattern:
            return 1
        return 2 if edit.op == "add" and edit.area == area else 3

    best = min(edits, key=rank, default=None)
    return best.key_path if best is not None and rank(best) < 3 else key


_TABLES = {area.id for area in AREAS if area.form == "table"}


def _note(restart: list[str], overridden: list[str]) -> str | None:
    notes = []
    if restart:
        verb = "applies" if len(restart) == 1 else "apply"
        notes.append(f"{', '.join(restart)} {verb} when forge supervise next starts")
    if overridden:
        notes.append(f"{', '.join(overridden)} stays overridden by a command-line flag")
    return "; ".join(notes) or None
