"""The terminal host: one worker process per terminal (PTY, screen model, state words).

Other packages import only `protocol` (what crosses ZeroMQ); `worker` is the process's
`TerminalHost`, `session` the PTY, `flow` its pure flow decisions, the rest pure cores.
"""
