"""Who listens to a seat, and speech to them: `voice_mode`, `speak`, `voice_preview`, `voice_say`.

`voice_mode` turns one connection's switch for one seat (the rules are `rules.VoiceRoom`),
answered as `voice_mode_state` to every subscriber of the seat; an agent seat's agent hears of it
through the service's `AgentDoor` (the count, and the `[Voice]` note as a prompt).
`speak(seat, text)` is the call other areas use: rendered by the worker, sent as `voice_audio`
numbered per seat in render order to the seat's subscribers and listeners; nothing is rendered
for a seat nobody listens to. `voice_preview` and `voice_say` (`forge say`) use it.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from typing import TYPE_CHECKING

from forge.logs import get_logger
from forge.supervisor.socket.connection import Connection
from forge.supervisor.socket.seats import UnknownProject
from forge.supervisor.voice.rules import NOTE_TEXT, Note, VoiceChange, VoiceRoom
from forge.wire import server
from forge.wire.client import VOICE_SAY_MAX_CHARS, VoiceMode, VoicePreview, VoiceSay
from forge.wire.dictate import Said, VoiceAudio, VoiceModeState, body
from forge.wire.errors import ClientRefusal
from forge.wire.seats import Seat, session
from forge.wire.server import JsonFrame
from forge.workers.dictate import protocol as worker

if TYPE_CHECKING:
    from forge.supervisor.voice.service import VoiceService

log = get_logger(__name__)

SAY_S = 30.0
PREVIEW_LINE = "This is how this seat will sound when it speaks to you."


class Speech:
    """Each seat's listeners and its numbered voice clips (what an agent seat reaches as its
    `Speech`)."""

    def __init__(self, service: VoiceService) -> None:
        self._service = service
        self.room: VoiceRoom[Connection] = VoiceRoom()
        self._seq: defaultdict[Seat, int] = defaultdict(int)
        self._locks: defaultdict[Seat, asyncio.Lock] = defaultdict(asyncio.Lock)

    async def voice_mode(self, connection: Connection, message: VoiceMode) -> None:
        """Only for a started seat: a state for one that is not there would say it exists (S04)."""
        self._service.supervisor.require_seat("voice_mode", message.key)
        change = self.room.turn(message.key, connection, message.on, message.explicit)
        self._changed(change, also=connection)

    def left(self, connection: Connection) -> None:
        """A closed connection listens no more to any seat."""
        for change in self.room.leave(connection):
            self._changed(change)

    def _changed(self, change: VoiceChange, also: Connection | None = None) -> None:
        supervisor = self._service.supervisor
        seat = change.seat
        state = supervisor.seats.get(seat)
        if state is not None:
            state.voice_listeners = change.listeners
        frame = JsonFrame.encode(VoiceModeState(key=seat, listeners=change.listeners))
        for connection in supervisor.subscribers(session(seat)) | ({also} if also else set()):
            connection.send_frame(frame)
        note = None if change.note is None else NOTE_TEXT[change.note]
        agents = self._service.agents
        delivered = agents is not None and agents.has_agent(seat)
        if agents is not None:
            agents.voice_changed(seat, note)
        if change.note is not None:
            log.info(
                "voice_note", seat=str(seat), note=change.note.value, text=note, delivered=delivered
            )

    def listening_note(self, seat: Seat) -> str | None:
        """The note for an agent that starts on `seat` while someone listens (`AgentDoor`'s
        other side)."""
        return NOTE_TEXT[Note.LISTENING] if self.room.listeners(seat) else None

    async def speak(self, seat: Seat, text: str, voice: str | None = None) -> Said:
        """Render `text` on `seat`'s voice stream; the supervisor call other areas use.

        Nothing is rendered for a seat of no configured project, when `[tts]` is off, or when
        nobody has voice on for the seat."""
        service = self._service
        supervisor = service.supervisor
        if supervisor.loaded.config.project(seat.org, seat.project) is None:
            return Said(ok=False, why=str(UnknownProject(seat)))
        if not supervisor.loaded.config.tts.enabled:
            return Said(ok=False, why="speech is off on this server ([tts] enabled = false)")
        if self.room.listeners(seat) == 0:
            return Said(ok=False, why=f"no client has voice on for seat {seat}")
        async with self._locks[seat]:
            try:
                spoken, raw = await service.ask_raw(
                    service.worker(),
                    worker.Say(text=text, voice=voice),
                    what="voice_say",
                    seat=seat,
                    doing="the speech could not be rendered",
                    within=SAY_S,
                )
            except ClientRefusal as refusal:
                return Said(ok=False, why=refusal.why)
            samples = bytes(raw.payloads[0]) if raw.payloads else b""
            self._seq[seat] += 1
            seq = self._seq[seat]
            frame = JsonFrame.encode(VoiceAudio.of(seat, seq, spoken.sample_rate, samples))
            for connection in supervisor.subscribers(session(seat)) | self.room.members(seat):
                connection.send_frame(frame)
        seconds = round(len(samples) / 2 / spoken.sample_rate, 2)
        log.info("voice_spoken", seat=str(seat), seq=seq, seconds=seconds, chars=len(text))
        return Said(ok=True, seq=seq, seconds=seconds)

    async def voice_preview(self, connection: Connection, message: VoicePreview) -> None:
        seat = message.key
        if self.room.listeners(seat) == 0:
            why = f"no client has voice on for seat {seat}: turn the speaker on to hear a preview"
            raise ClientRefusal("voice_preview", why, seat)
        said = await self.speak(seat, PREVIEW_LINE, message.voice)
        await self._service.page.previewed(said)
        if not said.ok:
            raise ClientRefusal("voice_preview", str(said.why), seat)

    async def voice_say(self, connection: Connection, message: VoiceSay) -> None:
        if len(message.text) > VOICE_SAY_MAX_CHARS:
            why = f"the text is {len(message.text)} characters; a line is at most 4000"
            said = Said(ok=False, why=why)
        else:
            said = await self.speak(message.key, message.text, message.voice)
        if message.reply_to is not None:
            connection.send(server.Reply(reply_to=message.reply_to, body=body(said)))
        elif not said.ok:
            raise ClientRefusal("voice_say", str(said.why), message.key)
