"""`python -m forge.workers.audio`: the process that owns forge's PulseAudio daemon."""

from __future__ import annotations

from forge.ipc.worker import run_worker
from forge.workers.audio.worker import AudioWorker

if __name__ == "__main__":
    run_worker(AudioWorker)
