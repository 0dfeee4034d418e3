"""Every source path and module a page names exists: code moves (the supervisor is grouped by
feature), and a page that still names the old place sends a reader to a file that is not there."""

from __future__ import annotations

import importlib
import re
from importlib.util import find_spec

from tests.docs.pages import ROOT, pages

PATH = re.compile(r"(?<![\w./-])((?:forge|tests|bench|web)/[\w./-]*)")
"""A repository path: a top-level source folder, then path characters (a trailing `/` or `.`
is stripped: the sentence's, not the path's)."""
EXAMPLES = {"tests/test_calc.py", "tests/test_x.py"}
"""Paths in a recipe's repository that the Lab pages use as examples, not forge's files."""
MODULE = re.compile(r"`(?:python -m )?(forge(?:\.\w+)+)")
"""A dotted module in code, `forge.x.y`, perhaps ending in attributes."""


def missing_paths(text: str) -> list[str]:
    """The repository paths named in `text` that do not exist (globs and placeholders skipped)."""
    return sorted(
        {
            path
            for path in (found.rstrip("./-") for found in PATH.findall(text))
            if path not in EXAMPLES
            and not any(mark in path for mark in ("*", "<", "..."))
            and not (ROOT / path).exists()
        }
    )


def module_exists(dotted: str) -> bool:
    """`dotted` names a module or an attribute of one (`forge.procs.ProcessWalker.session`).
    A name whose second part is no forge module (`forge.v1`, `forge.token`) is a file or a
    protocol name, not a module, and passes."""
    parts = dotted.split(".")
    if find_spec(".".join(parts[:2])) is None:
        return True
    for cut in range(len(parts), 1, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(found, attribute):
                return False
            found = getattr(found, attribute)
        return True
    return False


def test_every_source_path_a_page_names_exists() -> None:
    faults = [
        f"{page.relative_to(ROOT)}: {path}"
        for page in pages()
        for path in missing_paths(page.read_text(encoding="utf-8"))
    ]
    assert faults == []


def test_every_module_a_page_names_exists() -> None:
    faults = [
        f"{page.relative_to(ROOT)}: {dotted}"
        for page in pages()
        for dotted in sorted(set(MODULE.findall(page.read_text(encoding="utf-8"))))
        if not module_exists(dotted)
    ]
    assert faults == []


def test_a_moved_file_and_module_are_caught() -> None:
    assert missing_paths("see `forge/supervisor/browsers.py` and forge/git.py.") == [
        "forge/supervisor/browsers.py"
    ]
    assert not module_exists("forge.supervisor.browsers")
    assert module_exists("forge.wire")
