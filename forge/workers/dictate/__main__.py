"""`python -m forge.workers.dictate`: the dictation and speech worker, started by the manager."""

from forge.ipc.worker import run_worker
from forge.workers.dictate.worker import DictateWorker

if __name__ == "__main__":
    run_worker(DictateWorker)
