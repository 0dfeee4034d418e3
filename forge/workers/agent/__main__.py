"""`python -m forge.workers.agent`: one agent seat's worker, started by the worker manager."""

from __future__ import annotations

from forge.ipc.worker import run_worker
from forge.workers.agent.worker import AgentHost

if __name__ == "__main__":
    run_worker(AgentHost)
