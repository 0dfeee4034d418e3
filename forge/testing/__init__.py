"""The test kit: what a contributor needs to write a new area's tests against real processes.

Production code never imports this package; it may use pytest, and only tests and benchmarks
import it. Each module's docstring shows how to use it.

- `clock.ManualClock`: time moves only when the test says so.
- `supervised`: a real `forge supervise` process (the `supervise` fixture in tests/conftest.py
  wraps `Supervisors`), its log read as events, and small asks over websockets clients.
- `raw_client.RawClient`: a WebSocket client that can stop answering pings, or stop reading.
- `terminal_client`: the terminal verbs served in the test's loop (`serve_terminals`), and a
  client that records JSON frames and terminal output and draws its screen.
- `misbehaving` (+ `misbehaving_protocol`): a worker (`python -m forge.testing.misbehaving`)
  scripted to crash, hang, flood, read slowly, ignore SIGTERM or exit with the config-error code.
- `manager_host`: a process running a `WorkerManager`, for "SIGKILL the supervisor" tests.
- `pages`: a test's page for a seat's tab, served from a local port.
- `person.SupervisorProcess`: `forge supervise` started as a person starts it, for browser tests.
- `model_server.ModelServer`: a scripted stand-in for Anthropic's Messages API that the real
  Claude Code CLI talks to (`ANTHROPIC_BASE_URL`); its script format is `model_script`, the
  request readers tests assert with are `model_conversation`, the wire shapes `model_replies`.

The hooks production code reads for tests (drill verbs, a pinned clock, lab holds) are listed
in `forge.testhooks`.
"""
