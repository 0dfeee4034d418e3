"""The repository's docs stand alone (issue 13 item 18): no page points at a file outside it."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT_OF_PAGES = re.compile(r"\.\./|\bshared/|\bARCHITECTURE\.md\b")
"""A path out of the checkout, or the planning documents that were never part of it."""
LINK_TARGET = re.compile(r"\]\(([^()\s:]+)\)")
"""A Markdown link's relative target (no scheme)."""
OUT_OF_CODE = re.compile(r"\bshared/(?:seeds|specs)\b")
ORIGIN_IN_CODE = re.compile(r"\bthe seeds?\b|\bseed's\b|\bSEED_", re.IGNORECASE)
"""A rule stated as where it came from ("the seed's 15 s") rather than as the rule itself."""
ORIGIN_IN_PAGES = re.compile(r"\bseed's\b", re.IGNORECASE)
"""The same in the pages, where "the seed" of a chaos run (its random seed) is meant literally."""


def lines_matching(paths: list[Path], pattern: re.Pattern[str]) -> list[str]:
    return [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in paths
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if pattern.search(without_links_inside(path, line))
    ]


def without_links_inside(page: Path, line: str) -> str:
    """`line` without the targets of its Markdown links that resolve inside the checkout: a page
    under docs/architecture/ reaches docs/ by `../`, which leaves nothing."""

    def target(match: re.Match[str]) -> str:
        path = (page.parent / match.group(1).partition("#")[0]).resolve()
        return "]()" if path.is_relative_to(ROOT) else match.group(0)

    return LINK_TARGET.sub(target, line)


def test_no_doc_or_docstring_points_outside_the_repository() -> None:
    """Issue 13 item 18: docs/protocol.md is the contract a client needs, cited by section; no
    doc, README or module points at `shared/...` or `../` files the repository does not hold."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    assert lines_matching(pages, OUT_OF_PAGES) == []
    assert lines_matching(sorted((ROOT / "forge").rglob("*.py")), OUT_OF_CODE) == []


def test_no_rule_is_stated_by_where_it_came_from() -> None:
    """A reader has only this repository: a docstring, comment or page states each rule and
    bound itself ("a probe after 15 s of quiet"), never as what some earlier text said."""
    code = [
        *sorted((ROOT / "forge").rglob("*.py")),
        *sorted((ROOT / "web" / "src").rglob("*.ts")),
        *sorted((ROOT / "web" / "src").rglob("*.tsx")),
    ]
    assert lines_matching(code, ORIGIN_IN_CODE) == []
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    assert lines_matching(pages, ORIGIN_IN_PAGES) == []
