"""The socket core: connections, seats, subjects and verb dispatch, knowing no feature.

`server` (websockets at /socket, refusals before the handshake), `auth` (the token check),
`static` (the page's files), `connection` (one client: reader, dispatcher, writer, monitor, one
teardown), `outbound` (the backlog's drop policies, pure), `liveness` (the write-bound and watchdog
rule, pure), `core` (`Supervisor`: seats, subscriptions, numbering, the extension points),
`dispatch` (a client frame to its handler), `holders` (who holds which subject, unseen marks),
`seats`, `subjects`, `roles` (viewers, controller and size, shared by terminals and tabs),
`loopwatch`, `statelock` (one supervisor per state directory), `client_perf` and `drills` (test
and bench verbs, off in production).
"""
