"""`python -m forge.workers.terminal`: the terminal host, started by the worker manager."""

from forge.ipc.worker import run_worker
from forge.workers.terminal.worker import TerminalHost

if __name__ == "__main__":
    run_worker(TerminalHost)
