"""`python -m forge.workers.trees`: the tree worker, started by the worker manager."""

from forge.ipc.worker import run_worker
from forge.workers.trees.worker import TreeHost

if __name__ == "__main__":
    run_worker(TreeHost)
