"""Test kit other areas' tests use: real misbehaving processes and a clock tests drive.

- `clock.ManualClock`: time moves only when the test says so.
- `misbehaving`: a worker (`python -m forge.testing.misbehaving`) scripted to crash, hang,
  flood, read slowly, ignore SIGTERM or exit with the config-error code.
- `manager_host`: a process running a `WorkerManager`, for "SIGKILL the supervisor" tests.
"""
