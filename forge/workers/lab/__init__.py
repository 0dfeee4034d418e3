"""The Lab's attempt-runner worker (`python -m forge.workers.lab`)."""
