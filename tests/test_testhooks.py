"""forge.testhooks is the one list of test hooks: production reads each only through it."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

import forge
from forge import testhooks
from forge.testhooks import HOOKS, SUPERVISOR_DRILLS, Hook

PACKAGE = Path(forge.__file__).parent


@functools.cache
def modules() -> dict[str, ast.Module]:
    return {
        ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts): ast.parse(
            path.read_text(encoding="utf-8")
        )
        for path in PACKAGE.rglob("*.py")
    }


@pytest.mark.parametrize("hook", HOOKS, ids=lambda hook: hook.env)
def test_a_hook_is_listed_and_its_readers_go_through_this_module(hook: Hook) -> None:
    assert hook.env in (testhooks.__doc__ or "")
    trees = modules()
    naming = [
        name
        for name, tree in trees.items()
        if name != "forge.testhooks"
        and any(isinstance(n, ast.Constant) and n.value == hook.env for n in ast.walk(tree))
    ]
    assert naming == [], f"{hook.env} spelled outside forge.testhooks"
    for reader in (r for r in hook.readers if not r.endswith(".sh")):
        imports = {
            node.module for node in ast.walk(trees[reader]) if isinstance(node, ast.ImportFrom)
        }
        assert "forge.testhooks" in imports, reader


def test_a_hook_is_on_only_when_set_to_one() -> None:
    assert SUPERVISOR_DRILLS.enabled({"FORGE_SUPERVISOR_DRILLS": "1"})
    assert not SUPERVISOR_DRILLS.enabled({"FORGE_SUPERVISOR_DRILLS": "0"})
    assert not SUPERVISOR_DRILLS.enabled({})
    assert SUPERVISOR_DRILLS.value({"FORGE_SUPERVISOR_DRILLS": ""}) is None
    assert SUPERVISOR_DRILLS.set({"A": "b"}) == {"A": "b", "FORGE_SUPERVISOR_DRILLS": "1"}
