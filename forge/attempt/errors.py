"""The Lab's errors: a refused input (exit 1, per the acceptance table's O-1) and an aborted run."""

from __future__ import annotations

from forge.errors import InternalError, UserError


class LabRefusal(UserError):
    """A cohort, Formula, plan, flag or `--out` the Lab will not run; the message names the field.

    Exit code 1, not 2: the Lab keeps 2 for "the run finished and some attempt was not correct".
    """

    exit_code = 1


MANY_PROBLEMS = "every problem found (fix them all, then preview again):"


def refusal(problems: list[str]) -> LabRefusal:
    """One refusal listing every problem (one per line), so a person fixes them in one round."""
    if len(problems) == 1:
        return LabRefusal(problems[0])
    return LabRefusal("\n  ".join([MANY_PROBLEMS, *problems]))


def problems_of(error: LabRefusal) -> list[str]:
    """The problems a `refusal` lists."""
    lines = str(error).split("\n  ")
    return lines[1:] if lines[0] == MANY_PROBLEMS else lines


class RunAborted(InternalError):
    """The run stopped on an abort error (a changed input, a report that could not be saved)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
