"""Voice on the socket: `service` (takes, their audio, listeners, speech and the models page),
`rules` (who may start a take, who listens: pure) and `models` (the `dictate_models` snapshot).
"""
