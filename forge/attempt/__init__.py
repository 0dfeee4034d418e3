"""One Lab attempt and what it reads: the cohort's strict decoders, and the code that runs it.

`run.run_attempt` prepares a throwaway source, runs the coding harness, captures and verifies the
change and returns the attempt record (`record`); `cohort`, `plan`, `formula`, `fields` and
`strictjson` decode the frozen inputs it reads. The same code runs in an attempt-runner worker
(`forge.workers.lab`) and in a Dask task (`forge.lab.cluster`), so it sits below the workers and
imports nothing of `forge.lab`, which schedules attempts and reports on them.
"""
