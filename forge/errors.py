"""The root of forge's exceptions, named by who is at fault.

ForgeError
 ├─ UserError        the person's input is wrong (a flag, a file, a config key): fix the input
 │   ├─ ConfigError, SettingError, UnknownProject, TerminalHeld, ShellUnavailable,
 │   │  BrowserMissing, SupervisorUnreachable, NoRealGhError, SupervisorRunning
 │   ├─ SettingsRefusal      a settings save the person made that cannot be applied
 │   ├─ LabRefusal           a cohort, Formula, plan, flag or evidence the Lab refuses (exit 1):
 │   │                       DamagedRecord (an attempt.json learn cannot read), LearnFailed
 │   ├─ Skipped              a pull request replay was asked for makes no task (caught per PR)
 │   └─ WorkerConfigError    a worker's configuration cannot work; it is not restarted
 ├─ PeerError        the other side broke a contract (a client frame, a worker message)
 │   ├─ ClientRefusal, ProtocolViolation, MalformedFrame, ServerRefused, ConnectionLost,
 │   │  CdpCommandFailed, GestureInvalid, FileAnswerRefused
 │   ├─ RequestFailed        a worker refused what it was asked (its code: bad_url, bad_request):
 │   │                       the asker's fault, answered to the client as its refusal
 │   ├─ ReadRefused, DocumentRefused  a client's document or file read that cannot be served
 │   ├─ GhError, BadDestination   GitHub's answer; a destination a recipe's step asked for
 │   └─ ControlOverflow      a client that does not read its control frames (it is closed)
 └─ InternalError    forge itself is wrong or a resource it owns failed
     ├─ WorkerError (WorkerCrashed, RequestTimeout, WorkerUnavailable), BrowserGone, RunAborted
     └─ GitError             a git command failed (`forge/git.py`, its hardened profile: `why`
                             is git's first line of complaint; the Lab refuses bad input before
                             it runs git, and the seat's reads answer `why` to a client)
Each area subclasses these; messages name what was wrong so a person can act on them. The CLI
exits with a UserError's `exit_code` and its message.
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
