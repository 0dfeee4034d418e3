"""The supervisor: the one process that owns the client socket and every client-facing fact.

The top level is the composition root (`app`: one running supervisor, every feature installed
on one core and one worker manager) and its CLI (`cli`: `forge supervise`); each feature is a
package or a module beside them: `socket` (the core every feature registers on: connections,
seats, subjects, verb dispatch), `terminal`, `browser`, `voice`, `seatfiles` (git state and
documents), `lab`, `processes` (seat process views) and `settings` (`settings_edit`).

The API the terminal, browser, dictate and worker areas build on
-----------------------------------------------------------------
Everything runs on the supervisor's event loop; none of these calls may block.

Serving a verb. Every client message is already a typed struct in `forge.wire.client`
(`TerminalView`, `BrowserInput`, ...). An area registers one handler per type::

    supervisor.register_verb(TerminalView, handler)   # async def handler(connection, message)

A handler refuses by raising `forge.wire.errors.ClientRefusal(what, why, seat)`; the core
answers it as `error{what, why, seat, dispatch_id: null}` and the connection stays up. A known
verb with no handler is refused as "<kind> is not served by this server yet". Commands:
`register_command(name, handler)` (the reply_to rule is checked before the handler runs; a
reply command's refusal or failure is answered as its `reply` body, `{ok: false, why}`).
Client binary frames: `register_binary(TerminalInput | Dictation, handler)`, or
`register_binary_now(frame_type, handler)` for a handler that never waits (a keystroke): it
runs on the read path while nothing of the connection waits for the dispatcher, and in the
dispatcher's order otherwise. Unhandled ones are dropped with a `socket_binary_dropped` debug
record.

Seats. `await supervisor.start_seat(seat)` starts a seat when something is started in it (a
terminal, a tab, a take); it raises `seats.UnknownProject` for a project forge.toml lacks, and
announces the seat to home as `seat_changed`. `supervisor.require_seat(what, seat)` returns a
started seat's `SeatState` or raises the refusal naming `what`. A host keeps the session pieces
on the `SeatState` (`terminal`, `processes`, `background_tasks`, `lifecycle`...) current and
announces each change with::

    seq = supervisor.publish_seat_update(seat, "terminal_changed", {"key": seat, "terminal": row})

which numbers it on the seat's counter, keeps it in the seat's window for `seat_range`, and sends
it once to each connection holding the seat's session (and home, with `home=True`, for
`seat_changed`/`work_changed`). `publish_keyless(variant, body)` reaches every home holder with
no seq; `set_fatal_error(message)` and `mark_unseen(seat)` are the O-H5 and O-H4 hooks.
`supervisor.workers` is the callable that lists home `workers` rows (the worker manager sets it).
`supervisor.is_held(seat)` says whether any connection subscribes the seat's session (the
process walker walks only held seats).

Subjects. `register_subject(unit, reader)` answers a unit subject's snapshot (`board`, `usage`,
...); `register_session_layer(layer)` lays `await layer(state)` over each session snapshot (the
seat files' `work`/`git`/`diff`, an agent seat's conversation); `register_work_reader(reader)`
reads the `work` row of home's projects and agents (the seat files' tree worker; without one the
row says git does not run there).

Sending to one connection (`forge.supervisor.socket.connection.Connection`). Every frame goes
through the connection's backlog and its one writer, whose writes are bounded by
`write_timeout_s`:

- `connection.send(message)` (a `forge.wire.server.ServerMessage`, never a dict) /
  `send_frame(JsonFrame)`: JSON control frames, never dropped; a connection whose backlog passes
  64 MiB is closed (`socket_backlog_overflow`).
- `connection.send_binary(data)`: a binary frame that must arrive.
- `connection.send_latest(("browser", profile, tab), frame)`: newest frame wins per stream.
- `connection.send_bounded(("terminal", id), chunk, limit=TERMINAL_LIMIT, on_overflow=cb)`: past
  ~1 MiB unsent the stream's waiting chunks are dropped and `cb()` runs once (send a fresh view).
- `await connection.writable(below=n)`: backpressure for a producer (a controller's terminal).

Lifecycle. `supervisor.on_disconnect(hook)` runs `hook(connection)` inside the one teardown every
close path runs (release roles, detach viewers). `supervisor.on_held(hook)` runs
`hook(subject, True)` when a subject gains its first holder and `hook(subject, False)` when it
loses its last (the process walker works only for held seats).
`supervisor.on_shutdown(async_hook)` is awaited when `forge supervise` stops on SIGINT/SIGTERM
(the worker manager's stop goes here).
Per-connection facts a host may read: `connection.id`, `.peer`, `.deflate`, `.formats` (the
`?formats=` the client declared, D3), `.showing`, `.subscriptions`, `.answering`, `.closed`.
"""
