"""Supervised workers over ZeroMQ: the IPC layer and the one lifecycle every worker kind uses.

Modules (policy above mechanism, pure cores tested without sockets):
  envelope   the message shape: msgpack header `[version, type, request_id, stream_id, seq, body]`
             plus raw payload frames (zero-copy from 16 KiB); pure encode/decode
  channel    socket options and the two ways of sending: `send` (waits, control) and `offer`
             (never waits; False = the caller's drop policy, bulk)
  worker     `Worker` base class, `@handles`, `BulkStream`, `run_worker` (the worker process)
  launcher   mechanism: spawn in a new session, pidfd death detection, signal the process group
  policy     pure decisions: `LifecycleTimings`, `RestartPolicy` (backoff, crash loop, config error)
  pending    in-flight requests with deadlines on the injected clock
  streams    who listens to which bulk stream; stream ends
  manager    policy: `WorkerManager`, `WorkerHandle`, `WorkerSpec`, `WorkerRow`, `WorkerState`
  errors     `WorkerCrashed` (worker_crashed), `RequestTimeout` (timeout), `WorkerUnavailable`,
             `RequestFailed` (a handler's own refusal, same code both sides), `WorkerConfigError`
  orphans    PR_SET_PDEATHSIG; `die_with_parent` is also the `preexec_fn` for a worker's children

Writing a worker kind (e.g. `forge/workers/terminal/worker.py` plus a `__main__.py`)::

    from forge.ipc.errors import RequestFailed, WorkerConfigError
    from forge.ipc.messages import Reply, Request
    from forge.ipc.worker import Worker, handles, run_worker

    class TerminalHost(Worker):
        kind = "terminal"                  # must equal WorkerSpec.kind
        capabilities = ("resize",)         # announced in hello

        async def setup(self) -> None:     # before hello; the worker is `starting` meanwhile
            if "argv" not in self.config:  # self.config is WorkerSpec.config (JSON)
                raise WorkerConfigError("no argv")  # exit 78: failed, never restarted
            self.output = self.stream("pty")        # a BulkStream
            self.spawn(self.pump())                 # background work, cancelled on stop

        async def pump(self) -> None:
            ...
            self.output.offer(frame_bytes)          # final client-wire bytes; dropped if full
            await self.output.send(frame_bytes)     # or: wait (backpressure), never dropped
            await self.emit("exited", {"code": 0})  # one-way event on the control channel
            await self.output.end("exited")         # subscribers' on_end(stream_id, "exited")

        @handles("resize")
        async def resize(self, request: Request) -> dict[str, int]:
            if request.args["cols"] < 1:
                raise RequestFailed("bad_size", "cols must be at least 1")
            return {"cols": request.args["cols"]}   # or Reply(result, payloads=(raw, ...))

        async def teardown(self) -> None: ...       # graceful stop (stop message or SIGTERM)

    if __name__ == "__main__":                      # in forge/workers/terminal/__main__.py
        run_worker(TerminalHost)

Heartbeats, the handshake, request dispatch (each request in its own task), SIGTERM and the
parent check are the base class's; a worker never blocks its event loop (a blocked loop stops
heartbeats and is killed as hung). Start children from the loop's thread with
`preexec_fn=forge.ipc.orphans.die_with_parent` so they die with the worker even on SIGKILL;
children left in the worker's process group are SIGKILLed when it exits.

Supervising (in `forge supervise` or `forge evaluate`)::

    from forge.ipc.manager import WorkerManager, WorkerSpec, WorkerState

    async with WorkerManager() as manager:             # leaving it stops every worker
        manager.on_change(lambda row: push_home(row.to_json()))  # every state change
        manager.rows()                                  # list[WorkerRow] for home's `workers`
        term = manager.start(WorkerSpec("term-1", "terminal", "forge.workers.terminal",
                                        config={"argv": ["bash"]}))
        reply = await term.request("resize", {"cols": 80}, within=2.0)  # waits for ready too
        reply.result, reply.payloads                    # payloads: memoryviews, not copies
        sub = term.subscribe("pty", on_frame, on_end)   # on_frame(StreamFrame): .payload is a
                                                        # memoryview of the received frame
        unsubscribe = term.on_event(lambda e: ...)     # WorkerEvent(worker, event, data, payloads)
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
`forge.clock.Clock`; a `WorkerSpec(timings=...)` overrides the manager's for one worker.
"""
