"""The Lab: `forge evaluate --cohort`, a cohort's attempts scheduled, recorded and reported.

`evaluate` is the verb (preview, approval via `activation`, the run); `scheduler` starts
coordinates in order and writes each `attempt.json`; `report` renders report.json and report.md;
`progress` shows the run. An attempt itself runs elsewhere, through an executor: `runners` (a pool
of attempt-runner workers, `forge.workers.lab`, known here only by its protocol) or `cluster`
(Dask). The attempt's own code is `forge.attempt`, a floor below. `live` keeps a run as the
socket's `lab` subject shows it: the supervisor runs cohorts with this package
(`forge.supervisor.lab`) and `forge evaluate` follows them (`forge.client.evaluate`), so it sits
below both.
"""
