"""The worker kinds: processes the supervisor and the Lab start and supervise through `forge.ipc`.

One package per kind (`terminal`, `browser`, `walker`, `lab`), each run as
`python -m forge.workers.<kind>`: `protocol.py` declares what crosses ZeroMQ (the kind's
`WorkerProtocol` and its request, reply and event structs) and is all the rest of forge imports of
the kind; `worker.py` holds the `Worker` subclass. See docs/architecture/workers.md.
"""
