"""An agent seat's voice: what the agent says through `voice__say`, who it says it to, and the
notes it is sent when people start and stop listening.

The voice area (`forge.supervisor.voice`) owns listeners, speech and takes; agent seats own the
agent. Neither imports the other: the composition root (`forge.supervisor.app`) hands the agent
service the voice area as a `Speech`, and the voice area the agent service as its agent door.
"""

from __future__ import annotations

from typing import Protocol

from forge.logs import get_logger
from forge.supervisor.socket.core import Supervisor
from forge.wire.dictate import Said
from forge.wire.seats import Seat
from forge.workers.agent import protocol as worker

log = get_logger(__name__)


class Speech(Protocol):
    """The voice area as an agent seat uses it (`voice.speech.Speech`)."""

    async def speak(self, seat: Seat, text: str, voice: str | None = None) -> Said: ...

    def listening_note(self, seat: Seat) -> str | None:
        """The `[Voice]` note for an agent that starts on `seat` while someone listens, else
        None (the note went out when the first listener came, before this agent was there)."""
        ...


def listeners(supervisor: Supervisor, key: Seat, speech: Speech | None) -> worker.Listeners:
    """Who hears seat `key` now, for its worker (what `voice__say` answers the model)."""
    state = supervisor.seats.get(key)
    return worker.Listeners(
        listeners=0 if state is None else state.voice_listeners,
        speech=speech is not None and supervisor.loaded.config.tts.enabled,
    )


async def say(speech: Speech | None, key: Seat, text: str) -> None:
    """Speak the agent's line on its seat; a line that could not be spoken is logged (the model
    was already answered: playback never holds its turn)."""
    if speech is None:
        log.warning("agent_say_unspoken", seat=str(key), why="no voice area runs")
        return
    said = await speech.speak(key, text)
    if said.ok:
        log.info("agent_said", seat=str(key), seq=said.seq, chars=len(text))
    else:
        log.warning("agent_say_unspoken", seat=str(key), why=said.why)
