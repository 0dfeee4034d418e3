"""Supervised workers over ZeroMQ: the IPC layer and the one lifecycle every worker kind uses.

Modules (policy above mechanism, pure cores tested without sockets):
  envelope   the message shape: msgpack header `[version, type, request_id, stream_id, seq, body]`
             plus raw payload frames (zero-copy from 16 KiB); pure encode/decode
  channel    socket options and the two ways of sending: `send` (waits, control) and `offer`
             (never waits; False = the caller's drop policy, bulk)
  protocol   a kind's declaration: `WorkerProtocol`, typed `WorkerRequest`/`WorkerEvent`, `call`
  worker     `Worker` base class, `@handles`, `BulkStream`, `run_worker` (the worker process)
  launcher   mechanism: spawn in a new session, pidfd death detection, signal the process group
  policy     pure decisions: `LifecycleTimings`, `RestartPolicy` (backoff, crash loop, config error)
  pending    in-flight requests with deadlines on the injected clock
  streams    who listens to which bulk stream; stream ends
  manager    policy: `WorkerManager`, `WorkerHandle`, `WorkerSpec`, `WorkerRow`, `WorkerState`
  errors     `WorkerCrashed` (worker_crashed), `RequestTimeout` (timeout), `WorkerUnavailable`,
             `RequestFailed` (a handler's own refusal, same code both sides), `WorkerConfigError`
  orphans    PR_SET_PDEATHSIG; `die_with_parent` is also the `preexec_fn` for a worker's children

Declaring a worker kind: `forge/workers/<kind>/protocol.py` (see `protocol`), the one module
of the kind anything outside it imports::

    from forge.ipc.protocol import WorkerEvent, WorkerProtocol, WorkerRequest

    class Resized(msgspec.Struct, frozen=True):
        cols: int

    class Resize(WorkerRequest[Resized], tag="resize", frozen=True):  # tag = the method
        cols: int

    class Exited(WorkerEvent, tag="exited", frozen=True):              # tag = the event
        code: int

    ECHO = WorkerProtocol(kind="echo", module="forge.workers.echo",
                          requests=(Resize,), events=(Exited,), streams=("pty",))

Writing its worker (`forge/workers/<kind>/worker.py`, run by its `__main__.py`)::

    from forge.ipc.worker import Worker, handles, run_worker

    class EchoWorker(Worker):
        kind = ECHO.kind                   # checked against the spec in the handshake

        async def setup(self) -> None:     # before hello; the worker is `starting` meanwhile
            if "argv" not in self.config:  # self.config is WorkerSpec.config (JSON)
                raise WorkerConfigError("no argv")  # exit 78: failed, never restarted
            self.output = self.stream("pty")        # a BulkStream
            self.spawn(self.pump())                 # background work, cancelled on stop

        async def pump(self) -> None:
            ...
            self.output.offer(frame_bytes)          # final client-wire bytes; dropped if full
            await self.output.send(frame_bytes)     # or: wait (backpressure), never dropped
            await self.emit(Exited(code=0))         # one-way typed event on the control channel
            await self.output.end("exited")         # subscribers' on_end(stream_id, "exited")

        @handles(Resize)                            # args decoded into Resize first: a bad
        async def resize(self, request: Resize) -> Resized:  # field is `bad_request`, named
            if request.cols < 1:
                raise RequestFailed("bad_size", "cols must be at least 1")
            return Resized(request.cols)            # or Reply(result, payloads=(raw, ...))

        async def teardown(self) -> None: ...       # graceful stop (stop message or SIGTERM)

    if __name__ == "__main__":
        run_worker(EchoWorker)

Heartbeats, the handshake, request dispatch (each request in its own task), SIGTERM and the
parent check are the base class's; a worker never blocks its event loop (a blocked loop stops
heartbeats and is killed as hung). Start children from the loop's thread with
`preexec_fn=forge.ipc.orphans.die_with_parent` so they die with the worker even on SIGKILL;
children left in the worker's process group are SIGKILLed when it exits.

Supervising (in `forge supervise` or `forge evaluate`)::

    from forge.ipc.manager import WorkerManager, WorkerState
    from forge.ipc.protocol import call, call_raw

    async with WorkerManager() as manager:             # leaving it stops every worker
        manager.on_change(lambda row: push_home(row.to_json()))  # every state change
        manager.rows()                                  # list[WorkerRow] for home's `workers`
        term = manager.start(ECHO.spec("echo-1", config={"argv": ["bash"]}))
        resized = await call(term, Resize(cols=80), within=2.0)  # a Resized; waits for ready
        answer, raw = await call_raw(term, Resize(cols=80))      # raw.payloads: memoryviews
        sub = term.subscribe("pty", on_frame, on_end)   # on_frame(StreamFrame): .payload is a
                                                        # memoryview of the received frame
        unsubscribe = term.on_event(lambda e: ECHO.decode_event(e.event, e.data))
        term.send_bulk("paste", data)                   # False: the worker is full, dropped
        await term.wait_for(lambda row: row.state is WorkerState.READY)
        await term.stop()                               # row stays, state `stopped`
        await manager.remove("term-1")                  # stop, free sockets, drop the row

`request` raises `RequestFailed` (the handler's refusal, its `code`), `RequestTimeout` at its own
deadline, `WorkerCrashed` when the worker dies with it in flight (at once, from the pidfd), and
`WorkerUnavailable` when the worker is failed or stopped. When a worker dies, every stream it
served calls `on_end(stream_id, "worker_crashed")` (or "worker_stopped"): that is where the
caller sends its client-facing end. A subscription to one stream id ends with that stream (after
a restart, subscribe again); a catch-all subscription (`None`) and event listeners last across
restarts. Stream callbacks run synchronously in the receive loop and must only enqueue. Every
timing is a `LifecycleTimings` field (tests pass `.scaled(0.05)`), read through
`forge.clock.Clock`; `spec(timings=...)` overrides the manager's for one worker.
"""
