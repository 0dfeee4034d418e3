"""The attempt-runner worker (`python -m forge.workers.lab`): one Lab attempt at a time.

`protocol` is all the Lab imports (`LAB_ATTEMPT`, `Run`, `Cancel`); `worker.AttemptRunner` runs
`forge.attempt`'s code in this process, so a runner that dies takes only its own attempt along.
"""
