"""The errors a caller of a worker can see, each with the `code` that crosses the wire.

ForgeError
 ├─ InternalError
 │   └─ WorkerError          a worker could not answer; `code` names why
 │       ├─ WorkerCrashed      `worker_crashed`: the process died with the request in flight
 │       ├─ RequestTimeout     `timeout`: the request's own deadline passed first
 │       └─ WorkerUnavailable  `worker_unavailable`: the worker is failed, stopped or stopping
 ├─ PeerError
 │   ├─ ProtocolViolation    a message that breaks the envelope or the handshake
 │   └─ RequestFailed        the worker's handler refused what was asked, with its own code
 └─ UserError
     └─ WorkerConfigError    the worker's configuration cannot work (restarting will not help)
"""

from __future__ import annotations

from forge.errors import InternalError, PeerError, UserError


class WorkerError(InternalError):
    """A request got no answer from its worker; `code` is the machine-readable reason."""

    code = "worker_error"

    def __init__(self, worker: str, message: str) -> None:
        super().__init__(f"worker {worker}: {message}")
        self.worker = worker


class WorkerCrashed(WorkerError):
    """The worker process died while the request was in flight."""

    code = "worker_crashed"


class RequestTimeout(WorkerError):
    """The request's deadline passed before the worker answered."""

    code = "timeout"


class WorkerUnavailable(WorkerError):
    """The worker is not running and will not be restarted (failed, stopped, stopping)."""

    code = "worker_unavailable"


class ProtocolViolation(PeerError):
    """A peer sent a message that is not a valid envelope, or broke the handshake."""


class RequestFailed(PeerError):
    """A handler refused a request: raised by the worker, re-raised with the same code upstream.

    The request is at fault (a url that is not http(s), a tab that is gone, a field that does not
    decode), so it is the asker's: a supervisor service answers it to its client as that
    client's refusal (`WorkerService.ask`), never as a person's input error of the CLI.

    A worker handler raises `RequestFailed("bad_url", "url must be http(s)")`; the caller of
    `WorkerHandle.request` catches a `RequestFailed` with the same `code` and `message`.
    """

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class WorkerConfigError(UserError):
    """Raised by a worker's `setup` when its configuration cannot work: restarting would not help.

    The configuration comes from forge.toml (a browser that is not installed, a bad home_url),
    so the person fixes it.

    The worker exits with `CONFIG_ERROR_EXIT`, and the manager marks it `failed` at once.
    """
