"""The supervisor's core: every connection, seat, subscription and verb handler of one run.

Connections come and go through `attach`/`detach`; each client frame is decoded by `accept` on
the connection's read path (which answers `ping` itself), and `dispatch` hands the typed message
or binary frame to the handler registered for its type (both `dispatch.Dispatcher`'s); who holds
which subject is `holders.Holders`'. Areas plug in with `register_verb`,
`register_command`, `register_binary`, `register_subject`, `register_session_layer`,
`register_work_reader`, `on_disconnect`, `on_held` and `on_shutdown`, start
seats with `start_seat` and publish with `publish_seat_update`/`publish_keyless`; see the
package docstring for the contract.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from forge.clock import SYSTEM_CLOCK, Clock, epoch_ms
from forge.config import LoadedConfig, build_stamp, greeting_settings
from forge.errors import InternalError
from forge.logs import get_logger
from forge.supervisor.socket import subjects
from forge.supervisor.socket.connection import Connection
from forge.supervisor.socket.dispatch import (
    B,
    BinaryHandler,
    BinaryNowHandler,
    CommandHandler,
    Dispatcher,
    M,
    VerbHandler,
)
from forge.supervisor.socket.holders import HeldHook, Holders
from forge.supervisor.socket.seats import SeatRegistry, SeatState
from forge.wire import server
from forge.wire.client import ClientMessage, Command, SeatRange, Showing, Subscribe, Unsubscribe
from forge.wire.errors import ClientRefusal
from forge.wire.origin import OriginPolicy
from forge.wire.seats import HOME, Seat, SessionSubject, Subject, UnitSubject, session
from forge.wire.server import JsonFrame
from forge.wire.unserved import UNSERVED, answer_unserved, seat_of

log = get_logger(__name__)

ShutdownHook = Callable[[], Awaitable[None]]
SubjectReader = Callable[[], Awaitable[dict[str, Any]]]
SessionLayer = Callable[[SeatState], Awaitable[dict[str, Any]]]


class Supervisor:
    """One run's client-facing state; the only owner of seats, subscriptions and numbering."""

    def __init__(self, loaded: LoadedConfig, *, clock: Clock = SYSTEM_CLOCK) -> None:
        self.clock = clock
        self.boot_id = uuid.uuid4().hex
        """Minted once per process (H06)."""
        self.seats = SeatRegistry(clock)
        self.connections: set[Connection] = set()
        self.service_status: Any = None
        self.fatal_error: dict[str, Any] | None = None
        self.workers: Callable[[], list[dict[str, Any]]] = list
        """The home `workers` rows (D4); the worker manager replaces this with its own reader."""
        self._read_work: subjects.WorkReader = subjects.no_work
        self._holders = Holders()
        self._dispatcher = Dispatcher()
        self._disconnect_hooks: list[Callable[[Connection], None]] = []
        self._shutdown_hooks: list[ShutdownHook] = []
        self._subject_readers: dict[str, SubjectReader] = {}
        self._session_layers: list[SessionLayer] = []
        self.home_fields: dict[str, Callable[[], Any]] = {}
        """Home fields an area owns (`dictate`, `voice`), read at each home snapshot."""
        self._background: set[asyncio.Task[None]] = set()
        server = loaded.config.server
        scheme = "http" if server.tls_cert is None else "https"
        self._listening = (server.bind, server.port, scheme)
        """bind, port and TLS are restart-class: the socket keeps the ones it started with."""
        self.apply_config(loaded, push=False)
        self._register_builtins()

    # Config.

    def apply_config(self, loaded: LoadedConfig, *, push: bool = True) -> None:
        """Take a new load: rebuild the greeting and settings frames, push settings (G13)."""
        self.loaded = loaded
        config = loaded.config
        stamp = build_stamp()
        self._greeting = JsonFrame.encode(
            server.Greeting(
                forge_version=stamp.full,
                forge_version_short=stamp.short,
                settings=greeting_settings(config),
            )
        )
        self._settings = JsonFrame.encode(server.Settings(document=loaded.document))
        bind, port, scheme = self._listening
        self.origins = OriginPolicy.build(
            bind=bind, port=port, allowed_origins=config.server.allowed_origins, scheme=scheme
        )
        if push:
            for connection in self.connections:
                connection.send_frame(self._settings)

    # Extension points for the areas that serve verbs.

    def register_verb(self, message_type: type[M], handler: VerbHandler[M]) -> None:
        """Serve `message_type` with `handler(connection, message)`; new types join the decoder."""
        self._dispatcher.register_verb(message_type, handler)

    def register_command(self, name: str, handler: CommandHandler) -> None:
        """Serve the `command` variant `name` (its reply_to rule is already checked)."""
        self._dispatcher.register_command(name, handler)

    def register_binary(self, frame_type: type[B], handler: BinaryHandler[B]) -> None:
        """Serve client binary frames of `frame_type` (`Dictation`, `TerminalInput`)."""
        self._dispatcher.register_binary(frame_type, handler)

    def register_binary_now(self, frame_type: type[B], handler: BinaryNowHandler[B]) -> None:
        """Serve client binary frames of `frame_type` with a handler that never waits, on the
        read path itself while nothing of the connection waits for the dispatcher (a
        keystroke skips the inbox's task switch); behind what waits otherwise, in order."""
        self._dispatcher.register_binary_now(frame_type, handler)

    def register_subject(self, subject: UnitSubject, reader: SubjectReader) -> None:
        """Answer a unit subject's snapshot with `await reader()` (the area that owns its facts)."""
        self._subject_readers[subject] = reader

    def register_session_layer(self, layer: SessionLayer) -> None:
        """Lay `await layer(state)` over each session snapshot: its keys replace the snapshot's,
        a dict value updating the snapshot's dict of that key (an agent seat's header)."""
        self._session_layers.append(layer)

    def register_work_reader(self, reader: subjects.WorkReader) -> None:
        """Read the `work` row of a project's or seat's tree with `await reader(directory)` (the
        seat files' git reads); until then every row says git does not run there."""
        self._read_work = reader

    def on_disconnect(self, hook: Callable[[Connection], None]) -> None:
        """Run `hook(connection)` in every connection's one teardown (T16)."""
        self._disconnect_hooks.append(hook)

    def on_held(self, hook: HeldHook) -> None:
        """Run `hook(subject, True)` when a subject gains its first holder and `hook(subject,
        False)` when it loses its last: work done only for held subjects starts and stops here."""
        self._holders.on_held(hook)

    def on_holders(self, hook: Callable[[Subject], None]) -> None:
        """Run `hook(subject)` whenever a connection starts or stops holding `subject` (an
        agent seat's asks are answerable only while an answering connection holds it)."""
        self._holders.on_holders(hook)

    def on_shutdown(self, hook: ShutdownHook) -> None:
        """Await `hook()` when the supervisor stops (the worker manager's stop goes here)."""
        self._shutdown_hooks.append(hook)

    async def shutdown(self) -> None:
        for hook in reversed(self._shutdown_hooks):
            await hook()
        for task in list(self._background):
            task.cancel()

    # Connections.

    def attach(self, connection: Connection) -> None:
        """A new connection: greeting as frame 1, settings as frame 2 (G01)."""
        self.connections.add(connection)
        connection.send_frame(self._greeting)
        connection.send_frame(self._settings)
        log.info("socket_opened", peer=connection.peer, connection=connection.id)

    def detach(self, connection: Connection) -> None:
        """The one teardown every close path runs: nothing of the connection stays (T16, T17)."""
        self.connections.discard(connection)
        self._holders.drop(connection)
        connection.showing = None
        for hook in self._disconnect_hooks:
            try:
                hook(connection)
            except Exception:
                log.exception("socket_teardown_hook_failed", peer=connection.peer)

    def accept(self, connection: Connection, data: str | bytes) -> object | None:
        """Decode one client frame on the read path (`dispatch.Dispatcher.accept`)."""
        return self._dispatcher.accept(connection, data)

    async def dispatch(self, connection: Connection, item: object) -> None:
        """Run the handler registered for a decoded message or binary frame."""
        await self._dispatcher.dispatch(connection, item)

    # Seats and publishing.

    def require_seat(self, what: str, seat: Seat) -> SeatState:
        """The started seat, or a refusal naming `what` and the seat (S04, D2)."""
        if self.loaded.config.project(seat.org, seat.project) is None:
            raise ClientRefusal(what, f"no project {seat.org}/{seat.project} is configured", seat)
        state = self.seats.get(seat)
        if state is None:
            raise ClientRefusal(what, f"seat {seat} has not been started", seat)
        return state

    async def start_seat(self, seat: Seat) -> SeatState:
        """Start `seat` (idempotent) when something is started in it; raises UnknownProject.

        A new seat is listed in home `agents` from now on, announced as `seat_changed`."""
        state, started = self.seats.start(seat, self.loaded.config)
        if started:
            log.info("seat_started", seat=str(seat), epoch=state.epoch)
            await self.publish_agents_row(state)
        return state

    async def publish_agents_row(self, state: SeatState) -> int:
        """Announce the seat's agents row (`seat_changed{key,row}`) to the seat and home."""
        row = subjects.agents_row(state, await self._read_work(state.directory))
        return self.publish_seat_update(
            state.seat, "seat_changed", {"key": state.seat, "row": row}, home=True
        )

    def publish_seat_update(
        self, seat: Seat, variant: str, body: dict[str, Any], *, home: bool = False, span: int = 1
    ) -> int:
        """Number one update on the seat's counter and send it once to each subscriber (S20,
        O-S13): holders of the seat's session, and of home when `home` (O-S12). Returns its seq.
        A frame that folds a run of `span` updates (token appends) takes `span` numbers."""
        state = self.seats.get(seat)
        if state is None:
            raise InternalError(f"update {variant} for seat {seat}, which has not been started")
        payload = server.encoded({variant: body})
        frame = JsonFrame.encode(
            server.Update(update=payload, seq=state.window.next_seq, span=span)
        )
        seq = state.window.append(payload, len(frame.text), span)
        subjects_: list[Subject] = [session(seat), HOME] if home else [session(seat)]
        for connection in self._holders.of(subjects_):
            connection.send_frame(frame)
        return seq

    def is_held(self, seat: Seat) -> bool:
        """A seat is held while a connection subscribes its session (O-H7: walk only held seats)."""
        return self._holders.is_held(seat)

    def publish_keyless(self, variant: str, body: dict[str, Any] | None) -> None:
        """An update that belongs to no seat: no `seq`, to every home holder (S22, H07)."""
        frame = JsonFrame.encode(server.Update.of(variant, body, seq=None))
        for connection in self._holders.of([HOME]):
            connection.send_frame(frame)

    def set_fatal_error(self, message: str) -> None:
        """A supervisor-level failure (O-H5): kept for home, pushed as keyless `fatal_error`."""
        self.fatal_error = {"message": message, "at_ms": epoch_ms(self.clock)}
        self.publish_keyless("fatal_error", {"error": self.fatal_error})

    def mark_unseen(self, seat: Seat) -> None:
        """A seat's turn finished while nobody showed it (H04, O-H4): mark it, unless the mark
        is spent at once by a connection showing and holding the seat."""
        self._holders.mark(seat)
        if not self._spend_marks():
            self._push_home()

    # Subjects.

    async def snapshot_of(self, subject: Subject) -> dict[str, Any]:
        """A seat's session, home, or a unit subject's reader (the area that owns its facts;
        one no area serves answers the document's "nothing" values, never an error: D1)."""
        if isinstance(subject, SessionSubject):
            state = self.require_seat("subscribe", subject.session)
            data = subjects.session(state)
            for layer in self._session_layers:
                for key, value in (await layer(state)).items():
                    if isinstance(value, dict) and isinstance(data.get(key), dict):
                        data[key].update(value)
                    else:
                        data[key] = value
            return data
        if subject == HOME:
            return await subjects.home(
                self.loaded.config,
                self.seats,
                unseen=self._holders.unseen,
                facts=self._home_facts(),
                read_work=self._read_work,
            )
        reader = self._subject_readers.get(subject, self._nothing_yet)
        return await reader()

    async def _board(self) -> dict[str, Any]:
        return subjects.board(self.loaded.config)

    async def _models_unserved(self) -> dict[str, Any]:
        return subjects.dictate_models(self.loaded.config)

    @staticmethod
    async def _usage() -> dict[str, Any]:
        return subjects.usage()

    @staticmethod
    async def _nothing_yet() -> dict[str, Any]:
        return subjects.extensions()

    def _home_facts(self) -> dict[str, Any]:
        stamp = build_stamp()
        return {
            "forge_version": stamp.full,
            "forge_version_short": stamp.short,
            "boot_id": self.boot_id,
            "service_status": self.service_status,
            "fatal_error": self.fatal_error,
            "workers": self.workers(),
            **{name: read() for name, read in self.home_fields.items()},
        }

    def subscribers(self, subject: Subject) -> set[Connection]:
        """The connections holding `subject` now (a copy)."""
        return self._holders.subscribers(subject)

    def _spend_marks(self) -> bool:
        """S11: spend the marks of seats shown and held; home hears when one was."""
        spent = self._holders.spend_marks()
        if spent:
            self._push_home()
        return spent

    def _push_home(self) -> None:
        """An unsolicited home snapshot to every home holder (S11, O-S15)."""
        if not self._holders.of([HOME]):
            return
        task = asyncio.get_running_loop().create_task(self._send_home())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _send_home(self) -> None:
        data = await self.snapshot_of(HOME)
        frame = JsonFrame.encode(server.Snapshot(subject=HOME, data=data))
        for connection in self._holders.of([HOME]):
            connection.send_frame(frame)

    # The verbs this module serves itself.

    def _register_builtins(self) -> None:
        # The document's "nothing" values until an area registers the subject's own reader.
        self.register_subject("board", self._board)
        self.register_subject("usage", self._usage)
        self.register_subject("dictate_models", self._models_unserved)
        self.register_subject("extensions", self._nothing_yet)
        self.register_verb(Subscribe, self._subscribe)
        self.register_verb(Unsubscribe, self._unsubscribe)
        self.register_verb(Showing, self._showing)
        self.register_verb(SeatRange, self._seat_range)
        self.register_verb(Command, self._dispatcher.command)
        for shape in UNSERVED:
            self.register_verb(shape, self._unserved)

    async def _subscribe(self, connection: Connection, message: Subscribe) -> None:
        data = await self.snapshot_of(message.what)
        if message.answering:
            connection.answering = True
        if message.review and isinstance(message.what, SessionSubject):
            connection.reviews.add(message.what.session)
        first = self._holders.hold(connection, message.what)
        connection.send(server.Snapshot(subject=message.what, data=data))
        self._spend_marks()
        if first:
            self._holders.tell_held(message.what, True)
        self._holders.tell_holders(message.what)

    async def _unsubscribe(self, connection: Connection, message: Unsubscribe) -> None:
        self._holders.release(connection, message.what)

    async def _showing(self, connection: Connection, message: Showing) -> None:
        if connection.showing != message.seat:
            connection.showing = message.seat
            self._spend_marks()

    async def _seat_range(self, connection: Connection, message: SeatRange) -> None:
        state = self.seats.get(message.slot)
        if state is None:
            raise ClientRefusal("seat_range", f"no seat {message.slot} is held", message.slot)
        frames = state.window.range(message.epoch, message.from_, message.to)
        seat_frames = [server.SeatFrame(seq=seq, update=update) for seq, update in frames]
        connection.send(server.SeatFrames(slot=message.slot, epoch=state.epoch, frames=seat_frames))

    async def _unserved(self, connection: Connection, message: ClientMessage) -> None:
        seat = seat_of(message)
        if seat is not None:
            self.require_seat(str(message.__struct_config__.tag), seat)
        answer = answer_unserved(message)
        if answer is not None:
            connection.send(answer)
