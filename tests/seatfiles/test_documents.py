"""`document_read` and `file_content` over a real socket, against real files and a real git."""

from __future__ import annotations

import base64
import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest

from forge.supervisor.seatfiles import confined, doclist

from .rig import WIRE_SEAT, Rig, Start, next_kind, run, send


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every descriptor the confined reader reads bytes from."""
    seen: list[int] = []
    real = confined._read_all

    def spy(fd: int, limit: int) -> bytes:
        seen.append(fd)
        return real(fd, limit)

    monkeypatch.setattr(confined, "_read_all", spy)
    return seen


async def document(rig: Rig, path: str, reviewable: bool = False) -> dict[str, Any]:
    client, _ = await rig.client()
    ask = {"kind": "document_read", "session": WIRE_SEAT, "path": path, "reviewable": reviewable}
    await send(client, ask)
    frame: dict[str, Any] = json.loads(await client.recv())
    return frame


@pytest.fixture
async def documents_rig(tree_rig: Start, tmp_path: Path) -> Rig:
    roots = tmp_path / "roots"
    roots.mkdir()
    (roots / "spec.md").write_text("# the spec\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("secret\n")
    rig = await tree_rig(
        f'document_roots = ["{roots}"]\n[documents]\nmax_size_mib = 10\n', repo=False
    )
    tree = rig.tree
    (tree / "plan.md").write_text("# plan\n\nstep one\n")
    (tree / "notes.txt").write_text("plain\n")
    (tree / "paper.pdf").write_bytes(b"%PDF-1.4\n")
    (tree / "data.csv").write_text("a,b\n")
    (tree / "docs").mkdir()
    (tree / "%2e%2e").mkdir()
    (tree / "%2e%2e" / "literal.md").write_text("literal\n")
    (tree / "out.md").symlink_to(outside / "secret.md")
    (tree / "out-dir").symlink_to(outside)
    (tree / "into-root.md").symlink_to(roots / "spec.md")
    (tree / "docs" / "up.md").symlink_to("../plan.md")
    os.mkfifo(tree / "pipe.md")
    (tree / "big.md").write_bytes(b"x" * (10 * 1024 * 1024 + 1))
    (tree / "latin1.md").write_bytes("caf\xe9\n".encode("latin-1"))
    return rig


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("../outside/secret.md", "`..` is not allowed in a document path"),
        ("docs/../plan.md", "`..` is not allowed in a document path"),
        ("%2e%2e/secret.md", "%2e%2e/secret.md: no such file"),
        ("/etc/passwd", "/etc/passwd is outside the seat's tree and its document roots"),
        ("out.md", "out.md: a symlink leads outside the seat's tree and its document roots"),
        ("out-dir/secret.md", "a symlink leads outside the seat's tree and its document roots"),
        ("pipe.md", "pipe.md is not a regular file (a FIFO, socket or device)"),
        ("docs", "docs is a folder, not a file"),
        ("missing.md", "missing.md: no such file"),
        ("big.md", "big.md is 10485761 bytes, over the 10 MiB ceiling ([documents] max_size_mib)"),
        ("paper.pdf", "paper.pdf is a PDF, which cannot be handed off reviewable"),
        ("plan.md/x", "plan.md/x: plan.md is not a folder"),
    ],
)
async def test_a_refused_read_names_document_read_and_reads_nothing(
    documents_rig: Rig, reads: list[int], path: str, why: str
) -> None:
    frame = await document(documents_rig, path, reviewable=True)
    assert frame["kind"] == "error"
    assert frame["what"] == "document_read"
    assert frame["seat"] == WIRE_SEAT
    assert why in frame["why"]
    assert reads == []


async def test_markdown_that_is_not_utf8_is_refused(documents_rig: Rig) -> None:
    frame = await document(documents_rig, "latin1.md")
    assert (frame["what"], frame["why"]) == (
        "document_read",
        "latin1.md is not UTF-8 text (byte 3)",
    )


@pytest.mark.parametrize(
    ("path", "kind", "reviewable", "resolved"),
    [
        ("plan.md", "markdown", True, "tree/plan.md"),
        ("notes.txt", "text", True, "tree/notes.txt"),
        ("paper.pdf", "pdf", False, "tree/paper.pdf"),
        ("data.csv", {"other": "csv"}, False, "tree/data.csv"),
        ("%2e%2e/literal.md", "markdown", True, "tree/%2e%2e/literal.md"),
        ("into-root.md", "markdown", True, "roots/spec.md"),
        ("docs/up.md", "markdown", True, "tree/plan.md"),
        ("ROOTS/spec.md", "markdown", True, "roots/spec.md"),
        ("TREE/plan.md", "markdown", True, "tree/plan.md"),
    ],
)
async def test_a_document_reads_from_the_tree_or_a_document_root(
    documents_rig: Rig,
    reads: list[int],
    tmp_path: Path,
    path: str,
    kind: Any,
    reviewable: bool,
    resolved: str,
) -> None:
    asked = path.replace("ROOTS", str(tmp_path / "roots")).replace("TREE", str(tmp_path / "tree"))
    frame = await document(documents_rig, asked)
    assert frame["kind"] == "document_read", frame
    data = (tmp_path / resolved).read_bytes()
    assert frame["path"] == str(tmp_path / resolved)
    assert frame["document_kind"] == kind
    assert frame["reviewable"] is reviewable
    assert base64.b64decode(frame["bytes"]) == data
    assert frame["content_hash"] == str(int.from_bytes(hashlib.sha256(data).digest()[:8], "big"))
    assert (frame["session"], frame["threads"], frame["reviews"]) == (WIRE_SEAT, [], [])
    assert len(reads) == 1


async def listing(rig: Rig, root: str | None = None) -> dict[str, Any]:
    client, _ = await rig.client()
    await send(client, {"kind": "document_list", "session": WIRE_SEAT, "root": root})
    frame: dict[str, Any] = json.loads(await client.recv())
    return frame


async def test_the_tree_lists_its_documents_and_no_link_out(
    documents_rig: Rig, tmp_path: Path
) -> None:
    """Issue 36 item 6: the Docs pane offers every document of the tree, not only the changed
    ones; a link (to a file or a folder, inside or out) is never listed or walked into, and a
    FIFO named `.md` is not a document."""
    tree = tmp_path / "tree"
    (tree / "docs" / "deep").mkdir()
    (tree / "docs" / "deep" / "guide.MD").write_text("# guide\n")
    (tree / ".git").mkdir()
    (tree / ".git" / "hidden.md").write_text("no\n")
    (tree / "node_modules").mkdir()
    (tree / "node_modules" / "readme.md").write_text("no\n")
    frame = await listing(documents_rig)
    assert frame["kind"] == "document_list", frame
    assert (frame["asked"], frame["root"]) == (None, str(tree))
    assert frame["truncated"] is False
    assert [(d["path"], d["document_kind"]) for d in frame["documents"]] == [
        ("%2e%2e/literal.md", "markdown"),
        ("big.md", "markdown"),
        ("docs/deep/guide.MD", "markdown"),
        ("latin1.md", "markdown"),
        ("notes.txt", "text"),
        ("paper.pdf", "pdf"),
        ("plan.md", "markdown"),
    ]
    assert frame["documents"][-1]["size"] == len("# plan\n\nstep one\n")


async def test_a_document_root_lists_by_its_configured_name_and_nothing_else_does(
    documents_rig: Rig, tmp_path: Path
) -> None:
    roots = tmp_path / "roots"
    frame = await listing(documents_rig, str(roots))
    assert (frame["kind"], frame["asked"], frame["root"]) == (
        "document_list",
        str(roots),
        str(roots),
    )
    assert [d["path"] for d in frame["documents"]] == ["spec.md"]
    for asked in (str(tmp_path / "outside"), "/", str(roots) + "/", "../outside"):
        refused = await listing(documents_rig, asked)
        assert (refused["kind"], refused["what"]) == ("error", "document_list"), refused
        assert refused["why"] == f"{asked} is not one of the project's document roots"


async def test_a_listing_stops_at_its_bound_and_says_so(
    documents_rig: Rig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(doclist, "MAX_LISTED", 3)
    frame = await listing(documents_rig)
    assert frame["truncated"] is True
    assert len(frame["documents"]) == 3


async def content(rig: Rig, path: Any, sha: Any = None, session: Any = None) -> dict[str, Any]:
    client, _ = await rig.client()
    ask = {"kind": "file_content", "session": session or WIRE_SEAT, "path": path, "sha": sha}
    await send(client, ask)
    frame = await next_kind(client, "file_content")
    assert (frame["session"], frame["path"], frame["sha"]) == (ask["session"], path, sha)
    result: dict[str, Any] = frame["content"]
    return result


@pytest.fixture
async def repo_rig(tree_rig: Start) -> Rig:
    rig = await tree_rig("[documents]\nmax_size_mib = 1\n")
    tree = rig.tree
    (tree / "a.txt").write_text("one\ntwo\n")
    (tree / "blob.bin").write_bytes(b"\x00\x01binary")
    (tree / "large.txt").write_bytes(b"".join(b"line %06d\n" % n for n in range(150_000)))
    run(tree, "add", ".")
    run(tree, "commit", "-qm", "first")
    (tree / "a.txt").write_text("changed\n")
    run(tree, "commit", "-qam", "second")
    return rig


async def test_file_content_reads_a_revision_or_the_branch_tip(repo_rig: Rig) -> None:
    assert await content(repo_rig, "a.txt") == {
        "state": "read",
        "lines": ["changed"],
        "truncated": False,
    }
    first = run(repo_rig.tree, "rev-parse", "HEAD~1").strip()
    assert (await content(repo_rig, "a.txt", first[:10]))["lines"] == ["one", "two"]
    assert (await content(repo_rig, str(repo_rig.tree / "a.txt"), "HEAD~1"))["lines"] == [
        "one",
        "two",
    ]


async def test_an_option_shaped_sha_is_refused_as_a_revision(repo_rig: Rig) -> None:
    for sha in ("--output=pwned.txt", "HEAD --output=pwned.txt", "nope"):
        answer = await content(repo_rig, "a.txt", sha)
        assert answer["state"] == "failed"
        assert "is not a revision" in answer["why"]
    assert not (repo_rig.tree / "pwned.txt").exists()


async def test_a_large_file_is_truncated_at_whole_lines(repo_rig: Rig) -> None:
    answer = await content(repo_rig, "large.txt")
    assert answer["state"] == "read"
    assert answer["truncated"] is True
    assert len(answer["lines"]) == (1 << 20) // 12
    assert answer["lines"][-1] == f"line {len(answer['lines']) - 1:06d}"


@pytest.mark.parametrize(
    ("path", "sha", "session", "why"),
    [
        ("blob.bin", None, None, "blob.bin is a binary file at "),
        ("gone.txt", None, None, "gone.txt does not exist at "),
        ("../a.txt", None, None, "`..` is not allowed in a file path"),
        ("/etc/passwd", None, None, "/etc/passwd is outside the seat's tree"),
        (7, None, None, "path must name a file of the tree"),
        ("a.txt", 7, None, "7 is not a revision"),
        ("a.txt", None, {"org": "acme"}, "session is not a seat"),
        ("a.txt", None, {"org": "x", "project": "y", "label": "z"}, "no project x/y"),
        ("a.txt", None, {**WIRE_SEAT, "label": "other"}, "has not been started"),
    ],
)
async def test_a_read_that_cannot_run_is_a_failed_state_not_an_error(
    repo_rig: Rig, path: Any, sha: Any, session: Any, why: str
) -> None:
    answer = await content(repo_rig, path, sha, session)
    assert answer["state"] == "failed"
    assert why in answer["why"]
