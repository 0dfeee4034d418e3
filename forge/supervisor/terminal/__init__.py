"""Terminals on the socket: `service` (the verbs, one terminal host worker per terminal), `room`
(viewers, controller, size: pure) and `flow` (how output is paced to each viewer: pure).
"""
