"""The Lab's errors: a refused input (exit 1, per the acceptance table's O-1) and an aborted run."""

from __future__ import annotations

from forge.errors import InternalError, UserError


class LabRefusal(UserError):
    """A cohort, Formula, plan, flag or `--out` the Lab will not run; the message names the field.

    Exit code 1, not 2: the Lab keeps 2 for "the run finished and some attempt was not correct".
    """

    exit_code = 1


class RunAborted(InternalError):
    """The run stopped on an abort error (a changed input, a report that could not be saved)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
