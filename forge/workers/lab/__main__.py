"""`python -m forge.workers.lab`: one attempt-runner worker process."""

from __future__ import annotations

from forge.ipc.worker import run_worker
from forge.workers.lab.worker import AttemptRunner

if __name__ == "__main__":
    run_worker(AttemptRunner)
