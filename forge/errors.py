"""The root of forge's exceptions, named by who is at fault.

ForgeError
 ├─ UserError        the person's input is wrong (a flag, a file, a config key): fix the input
 ├─ PeerError        the other side broke a contract (a client frame, a worker message)
 └─ InternalError    forge itself is wrong or a resource it owns failed
Each area subclasses these; messages name what was wrong so a person can act on them.
"""

from __future__ import annotations


class ForgeError(Exception):
    """Anything forge raises on purpose."""


class UserError(ForgeError):
    """The person's input is wrong; the message says which input and how."""

    exit_code = 2


class PeerError(ForgeError):
    """A peer (client or worker) sent something that breaks the protocol."""


class InternalError(ForgeError):
    """forge or a resource it owns failed; not the user's fault."""
