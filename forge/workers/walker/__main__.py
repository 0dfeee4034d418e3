"""`python -m forge.workers.walker`: the process walker, started by the worker manager."""

from forge.ipc.worker import run_worker
from forge.workers.walker.worker import WalkerHost

if __name__ == "__main__":
    run_worker(WalkerHost)
