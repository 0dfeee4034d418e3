"""The activation digest: one hash a person approves, over every byte a run depends on.

It covers the cohort bytes, both Formulas (and an agent atom's system prompt file), every plan
with its issue and acceptance script, the source checkout and the output directory; never
`--parallel`, `--keep-workspaces`, `--executor` or `--scheduler`, so changing how a run executes
never invalidates an approval or a resume.
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
from pathlib import Path

from forge.attempt.cohort import Cohort, Variant

DIGEST_TAG = "forge-cohort-activation-v1"


def activation_digest(cohort: Cohort, *, source: str, out: str) -> str:
    """sha256 of the canonical JSON list described in the acceptance table's O-3."""
    document = [
        DIGEST_TAG,
        cohort.sha256,
        [
            [v.spec.name, v.spec.formula, v.spec.formula_sha256, *_prompt_pin(cohort, v)]
            for v in cohort.variants
        ],
        [
            [t.spec.name, t.spec.plan, t.spec.plan_sha256, t.task_sha256, t.acceptance_sha256]
            for t in cohort.tasks
        ],
        source,
        out,
    ]
    encoded = json.dumps(document, separators=(",", ":"), ensure_ascii=True).encode("utf-8")
    return hashlib.sha256(encoded).hexdigest()


def _prompt_pin(cohort: Cohort, variant: Variant) -> list[str]:
    """A `claude-code` atom's system prompt file and its sha256 (nothing without one, so other
    cohorts' digests are what they were)."""
    agent = variant.formula.coding.agent
    if agent is None or agent.system_prompt_file is None:
        return []
    rel = posixpath.join(posixpath.dirname(variant.spec.formula), agent.system_prompt_file)
    return [rel, cohort.pins()[rel]]


def canonical_out(path: Path) -> str:
    """`realpath(parent)/basename`: stable across spellings even before `--out` exists."""
    absolute = Path(os.path.abspath(path))
    return str(Path(os.path.realpath(absolute.parent)) / absolute.name)
