"""Terminals on the socket: `service` (the verbs, one terminal host worker per terminal, composed
of `hosts`, each terminal's life, and `relay`, its output to the viewers), `room` (viewers,
controller, size: pure) and `flow` (how output is paced to each viewer: pure).
"""
