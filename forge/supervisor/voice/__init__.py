"""Voice on the socket: `service` (the dictate worker, composing the parts), `takes` (a take and
its audio), `speech` (listeners and the clips spoken to them), `modelspage` (the models page,
home's fields, the bench), `rules` (who may start a take, who listens: pure) and `models` (the
`dictate_models` snapshot: pure).
"""
