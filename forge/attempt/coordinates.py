"""Coordinate order: task (cohort order) -> repetition 1..K -> variant A then B.

The order decides which attempt starts next and the order of every list in the report, whatever
order attempts finish in.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath

from forge.attempt.cohort import CohortSpec


@dataclass(frozen=True, order=True)
class Coordinate:
    index: int
    """Position in coordinate order, 0-based; sorting by it is sorting by coordinate."""
    task: str
    repetition: int
    variant: str

    @property
    def rel_dir(self) -> PurePosixPath:
        """`<task>/<variant>/rep-<n>`, the attempt's directory under `attempts/`."""
        return PurePosixPath(self.task, self.variant, f"rep-{self.repetition}")

    @property
    def label(self) -> str:
        return f"{self.task}/{self.variant}/rep-{self.repetition}"


def coordinates(spec: CohortSpec) -> list[Coordinate]:
    order: list[Coordinate] = []
    for task in spec.tasks:
        for repetition in range(1, spec.repetitions + 1):
            for variant in spec.variants:
                order.append(Coordinate(len(order), task.name, repetition, variant.name))
    return order
