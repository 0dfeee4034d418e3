"""forge's own client of its socket protocol, and the CLI verbs built on it.

- `connection`: `connect(url)` / `ForgeConnection`: greeting, subscribe, requests by `reply_to`,
  events, kind-5 input, the T21 probe on an injected clock.
- `session`: `ClientSession`: a connection that comes back (T21: reconnect, re-subscribe,
  re-attach the terminal, re-send showing).
- `frames`: the server's frames, typed (`decode_frame`).
- `probe`: the pure liveness probe; `detach`: the pure `Ctrl-\\ d` key machine.
- `status`: `forge status`; `attach`: `forge attach` around the pure `attach_view`; `cli`: their
  parsers.
- `errors`: `SupervisorUnreachable` (exit 3), `ServerRefused`, `ConnectionLost`.

Nothing is imported here, so `forge <verb>` pays for the client only when it runs one.
"""
