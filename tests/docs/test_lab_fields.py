"""docs/lab.md lists every field the Lab's loaders accept, and no field they refuse: the cohort
file, the Formula, the plan and the issue. The loaders are run on documents holding every field
they know, and each object they read is noted with the fields it accepts; the page's tables
(`| \\`field\\` | type | meaning |`, with `{a, b}` in the type for an object's fields) must name
the same set."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from forge.attempt import fields
from forge.attempt.cohort import decode_cohort
from forge.attempt.errors import LabRefusal
from forge.attempt.formula import decode_formula
from forge.attempt.plan import decode_issue, decode_plan
from tests.docs.pages import ROOT

LAB_MD = ROOT / "docs" / "lab.md"
SHA = "a" * 64
CHECK = {"id": "c", "argv": ["true"], "category": "test", "timeoutMs": 1000}
DOCUMENTS: dict[str, tuple[str, Callable[..., Any], dict[str, Any]]] = {
    "cohort": (
        "### The cohort file",
        decode_cohort,
        {
            "schemaVersion": 1,
            "hypothesis": "h",
            "primaryOutcome": "hiddenAcceptancePassRate",
            "variants": [
                {"name": "a", "formula": "a.yaml", "formulaSha256": SHA},
                {"name": "b", "formula": "b.yaml", "formulaSha256": "b" * 64},
            ],
            "tasks": [{"name": "t", "plan": "t/plan.json", "planSha256": SHA}],
            "repetitions": 1,
            "stop": {"maxAttempts": 1, "maxCostUSD": 1.0},
        },
    ),
    "formula": (
        "### The Formula",
        decode_formula,
        {
            "schemaVersion": 1,
            "name": "n",
            "atoms": [
                {
                    "id": "code",
                    "role": "coding",
                    "command": ["x"],
                    "timeoutMs": 1000,
                    "model": "m",
                    "network": False,
                    "egress": ["api.anthropic.com:443"],
                    "passEnv": ["ANTHROPIC_API_KEY"],
                    "mounts": ["/opt/x"],
                },
                {"id": "learn", "role": "learn", "command": ["y"], "timeoutMs": 1000},
            ],
            "checks": [CHECK],
            "learning": {"recurrenceThreshold": 3},
        },
    ),
    "plan": (
        "### The plan",
        decode_plan,
        {
            "schemaVersion": 1,
            "task": "issue.json",
            "acceptance": "acceptance.sh",
            "baseCommit": "c" * 40,
            "allowedFiles": ["x.py"],
            "setup": [{"id": "s", "argv": ["true"], "dir": ".", "timeoutMs": 1000}],
            "checks": [CHECK],
            "candidateTestFiles": ["tests/test_x.py"],
            "originalCheckFiles": ["tests/test_y.py"],
            "requireInitialFailure": True,
        },
    ),
    "issue": ("### The issue", decode_issue, {"title": "t", "body": "b", "state": "OPEN"}),
}
FORMULA_CHECKS = "form as a plan's `checks`"
"""The Formula's table gives its checks' form by naming the plan's."""


def _general(path: str) -> str:
    return re.sub(r"\[\d+\]|\[i\]", "[]", path)


def _with_parents(names: set[str]) -> set[str]:
    found = set(names)
    for name in names:
        parts = name.split(".")
        found |= {".".join(parts[:i]) for i in range(1, len(parts))}
    return found


def documented(heading: str) -> set[str]:
    """The fields a section's table names, objects' fields from `{a, b: value}` included."""
    section = LAB_MD.read_text(encoding="utf-8").split(heading, 1)[1].split("\n#", 1)[0]
    names: set[str] = set()
    for line in section.splitlines():
        row = re.match(r"\| `([^`]+)` \| ([^|]*) \|", line)
        if row is None:
            continue
        name = _general(row.group(1))
        names.add(name)
        for inner in re.findall(r"`\{([^}]*)\}", row.group(2)):
            names |= {f"{name}.{item.split(':')[0].strip()}" for item in inner.split(",")}
    return _with_parents(names)


@contextmanager
def accepted_fields() -> Iterator[set[str]]:
    """Every field the loaders' readers accept while the block runs."""
    seen: set[str] = set()
    original = fields.Reader.obj

    def spy(
        self: fields.Reader,
        value: object,
        path: str,
        *,
        required: Collection[str],
        optional: Collection[str] = (),
    ) -> dict[str, Any]:
        seen.update(_general(f"{path}.{key}" if path else key) for key in (*required, *optional))
        return original(self, value, path, required=required, optional=optional)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(fields.Reader, "obj", spy)
        yield seen


@pytest.mark.parametrize("kind", sorted(DOCUMENTS))
def test_lab_md_lists_exactly_the_fields_the_loader_accepts(kind: str) -> None:
    heading, decode, document = DOCUMENTS[kind]
    raw = json.dumps(document).encode()
    # the values need not pass: the fields were read
    with accepted_fields() as seen, contextlib.suppress(LabRefusal):
        decode(raw, file=kind)
    listed = documented(heading)
    if kind == "formula" and FORMULA_CHECKS in LAB_MD.read_text(encoding="utf-8"):
        listed |= {f for f in documented("### The plan") if f.startswith("checks[].")}
    assert _with_parents(seen) == _with_parents(listed)
