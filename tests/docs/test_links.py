"""Every relative link in README.md and docs/ leads somewhere: the file exists, and an anchor
names a heading of the page it points at. Pages move (docs/architecture/ is split by area), and a
link that silently breaks sends a newcomer nowhere."""

from __future__ import annotations

from tests.docs.pages import DOCS, ROOT, Link, anchors, pages, relative_links

ARCHITECTURE = DOCS / "architecture"
PAGE_LINES = 400
"""An architecture page a newcomer reads in one sitting; past this, split it by topic."""


def broken(link: Link) -> str | None:
    """Why `link` leads nowhere, or None."""
    path_part, _, anchor = link.target.partition("#")
    target = (link.page.parent / path_part).resolve() if path_part else link.page
    if not target.is_relative_to(ROOT):
        return "points outside the repository"
    if not target.exists():
        return "no such file"
    if anchor and target.suffix == ".md" and anchor not in anchors(target):
        return f"no heading #{anchor} in {target.relative_to(ROOT)}"
    return None


def test_every_relative_link_resolves() -> None:
    faults = [
        f"{link.where()}: {why}"
        for page in pages()
        for link in relative_links(page)
        if (why := broken(link)) is not None
    ]
    assert faults == []


def test_a_broken_link_and_a_missing_anchor_are_caught() -> None:
    """The check itself: a missing file, a missing heading and a path out of the repository."""
    page = DOCS / "architecture" / "overview.md"
    assert broken(Link(page, 1, "nowhere.md")) == "no such file"
    assert broken(Link(page, 1, "workers.md#no-such-heading")) == (
        "no heading #no-such-heading in docs/architecture/workers.md"
    )
    assert broken(Link(page, 1, "../../../etc/passwd")) == "points outside the repository"
    assert broken(Link(page, 1, "workers.md#adding-a-worker-kind-the-checklist")) is None
    assert broken(Link(page, 1, "#the-picture")) is None


def test_docs_readme_names_every_page() -> None:
    """docs/README.md is the map: every page under docs/ is linked from it."""
    index = DOCS / "README.md"
    linked = {
        (index.parent / link.target.partition("#")[0]).resolve() for link in relative_links(index)
    }
    missing = [
        str(page.relative_to(ROOT))
        for page in sorted(DOCS.rglob("*.md"))
        if page != index and page.resolve() not in linked
    ]
    assert missing == []


def test_architecture_pages_stay_short() -> None:
    long = [
        f"{page.relative_to(ROOT)}: {count} lines"
        for page in sorted(ARCHITECTURE.glob("*.md"))
        if (count := len(page.read_text(encoding="utf-8").splitlines())) > PAGE_LINES
    ]
    assert long == []
