"""An attempt handed to a runner in another process (an attempt-runner worker, a Dask task).

Only names and paths travel: the runner reloads the cohort from the run's frozen `<out>/inputs/`,
so it works from the same verified bytes the scheduler approved, and settings are re-derived from
the caller's environment the same way the CLI derives them.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import msgspec

from forge.attempt.cohort import load_cohort
from forge.attempt.coordinates import Coordinate
from forge.attempt.layout import ATTEMPTS_DIR, COHORT_INPUT, INPUTS_DIR
from forge.attempt.limits import Limits
from forge.attempt.settings import settings_from_env
from forge.attempt.spec import AttemptSpec


class Handoff(
    msgspec.Struct, frozen=True, kw_only=True, rename="camel", forbid_unknown_fields=True
):
    """What identifies one attempt of an approved run, as plain data."""

    out: str
    coordinate: Coordinate
    attempt_id: str
    source: str
    origin: str | None
    caller_env: dict[str, str]
    keep_workspaces: bool
    parallel: int
    hidden: tuple[str, ...] = ()
    """Paths the recipe's sandbox never mounts (`AttemptSpec.hidden`)."""
    limits: Limits = msgspec.field(default_factory=Limits)
    """The run's `[lab]` bounds, read where the run was approved."""
    agent_cli: str | None = None
    """The Claude Code CLI found where the run was approved (`LabSettings.agent_cli`)."""

    @classmethod
    def of(cls, spec: AttemptSpec, out: Path) -> Handoff:
        return cls(
            out=str(out),
            coordinate=spec.coordinate,
            attempt_id=spec.attempt_id,
            source=str(spec.source),
            origin=spec.origin,
            caller_env=spec.caller_env,
            keep_workspaces=spec.keep_workspaces,
            parallel=spec.parallel,
            hidden=spec.hidden,
            limits=spec.settings.limits,
            agent_cli=spec.settings.agent_cli,
        )

    def spec(self) -> AttemptSpec:
        """The attempt's spec, rebuilt from the run's frozen inputs (`LabRefusal` if they moved)."""
        out = Path(self.out)
        inputs = out / INPUTS_DIR
        cohort = load_cohort(inputs / COHORT_INPUT)
        coordinate = self.coordinate
        return AttemptSpec(
            coordinate=coordinate,
            attempt_id=self.attempt_id,
            attempt_dir=out / ATTEMPTS_DIR / coordinate.rel_dir,
            inputs_dir=inputs,
            pins=cohort.pins(),
            task=next(t for t in cohort.tasks if t.spec.name == coordinate.task),
            variant=next(v for v in cohort.variants if v.spec.name == coordinate.variant),
            source=Path(self.source),
            origin=self.origin,
            caller_env=self.caller_env,
            settings=replace(
                settings_from_env(self.caller_env), limits=self.limits, agent_cli=self.agent_cli
            ),
            keep_workspaces=self.keep_workspaces,
            parallel=self.parallel,
            hidden=self.hidden,
        )
