"""The client protocol, pure: message shapes, the binary codec, the origin rule, the seq window.

Nothing here touches a socket or a clock, so every rule is tested without processes and the
supervisor's socket code stays a thin adapter (the websockets library's own split).

- `registry`: every socket message, registered once by its `kind` and direction.
- `schema`: the web page's TypeScript generated from the registry (`web/src/gen/protocol.ts`).
- `seats`: `Seat` and the subjects a client subscribes to, in their externally tagged shapes.
- `client`: the core protocol's client messages, decoded into typed messages (`decode_client`).
- `server`: the envelopes the server sends (`ServerMessage`), and `JsonFrame` (encoded once,
  gzipped on demand).
- `browser`: every `browser_*` message and reply body the server sends, as tagged structs.
- `files`: the bounds on files crossing the socket (a chooser's answer in, a download out).
- `binary`: the tagged binary frames (kinds 0-5), their layouts and who may send which.
- `origin`: which browser origins may open the socket.
- `window`: a seat's numbered frames (`seq`, `span`) and the `seat_range` answers.
- `commands`: the `command` verb's variants and its `reply_to` rule.
- `unserved`: the answers to verbs this server knows but does not serve yet.
"""
