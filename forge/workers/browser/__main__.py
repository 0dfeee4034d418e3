"""`python -m forge.workers.browser`: the process the worker manager spawns for one profile."""

from __future__ import annotations

from forge.ipc.worker import run_worker
from forge.workers.browser.worker import BrowserWorker

if __name__ == "__main__":
    run_worker(BrowserWorker)
