"""Reaching forge safely from another device: the token, TLS, and pairing a phone.

- `token`: the socket token's file in forge's state directory (0600), created on first use,
  rotated by `forge token rotate`; only its fingerprint is ever logged.
- `throttle`: the pure rule for answering a refused token (a held 401, or a 429); the right
  token never waits.
- `tls`: the server's TLS context, re-read when the certificate files change on disk, and the
  self-signed certificate `forge supervise --tls self-signed` makes for this machine.
- `pairing`: the URL a phone opens (`#token=` in the fragment) and its QR code.
- `cli`: `forge token show | rotate` and `forge pair`.
"""
