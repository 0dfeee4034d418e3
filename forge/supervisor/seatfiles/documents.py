"""`document_read`, `document_list` and `file_content`: a seat's documents, for a viewer and a
review page.

`document_list` lists the markdown, text and PDF files under the seat's tree or one of its
project's `document_roots` (named as forge.toml spells it: nothing else is listed), through
`doclist`'s bounded walk that never follows a link.

`document_read` reads from the seat's working tree or its project's `document_roots`, confined
(`confined.read_confined`: resolved once, component by component, symlinks leaving the roots
refused, size checked on the opened file before a byte is read) under `[documents] max_size_mib`.
A refusal is an `error` naming `document_read` with the sentence a viewer draws. `file_content`
reads a file at a revision through git: the revision is resolved to a commit id first, the size
asked before the bytes, a file over the ceiling answers the whole lines inside it (`truncated`),
and a read that cannot run answers `{"state": "failed", "why"}` (it has no error arm).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
from pathlib import Path, PurePosixPath
from typing import Any

import msgspec

from forge.errors import PeerError
from forge.git import BINARY_PROBE, GitError
from forge.supervisor.seatfiles.confined import Found, ReadRefused, read_confined
from forge.supervisor.seatfiles.doclist import list_documents
from forge.supervisor.seatfiles.trees import TreeReads
from forge.supervisor.socket.connection import Connection
from forge.supervisor.socket.core import Supervisor
from forge.wire import client
from forge.wire.documents import (
    ContentFailed,
    ContentRead,
    DocumentKind,
    DocumentList,
    DocumentRead,
    FileContent,
    ListedDocument,
    OtherKind,
)
from forge.wire.errors import ClientRefusal
from forge.wire.seats import Seat

MIB = 1 << 20
KINDS: dict[str, DocumentKind] = {
    "md": "markdown",
    "markdown": "markdown",
    "mdown": "markdown",
    "mkd": "markdown",
    "pdf": "pdf",
    "txt": "text",
    "text": "text",
}
"""A document's kind by its extension (lowercased); any other is `{"other": extension}`."""
TEXT_KINDS = ("markdown", "text")
"""The kinds that must be UTF-8 and that a reviewer can comment on."""


def document_kind(path: Path) -> DocumentKind:
    extension = path.suffix[1:]
    return KINDS.get(extension.lower(), OtherKind(extension))


def content_hash(data: bytes) -> str:
    """The first 8 bytes of SHA-256 as an unsigned integer in decimal digits (a u64 a
    JavaScript client keeps exact only as a string)."""
    return str(int.from_bytes(hashlib.sha256(data).digest()[:8], "big"))


def install(supervisor: Supervisor, trees: TreeReads) -> None:
    """Serve the document verbs; `file_content` reads a file at a commit through `trees`."""
    documents = _Documents(supervisor, trees)
    supervisor.register_verb(client.DocumentRead, documents.document_read)
    supervisor.register_verb(client.DocumentList, documents.document_list)
    supervisor.register_verb(client.FileContent, documents.file_content)


class _Documents:
    def __init__(self, supervisor: Supervisor, trees: TreeReads) -> None:
        self._supervisor = supervisor
        self._trees = trees

    def _ceiling(self) -> int:
        return self._supervisor.loaded.config.documents.max_size_mib * MIB

    async def document_read(self, connection: Connection, message: client.DocumentRead) -> None:
        seat = message.session
        state = self._supervisor.require_seat("document_read", seat)
        project = self._supervisor.loaded.config.project(seat.org, seat.project)
        roots = [state.directory, *(project.document_roots if project else ())]

        def accept(found: Found) -> None:
            if message.reviewable and document_kind(found.path) == "pdf":
                raise ReadRefused(
                    f"{message.path} is a PDF, which cannot be handed off reviewable "
                    "(only markdown and text are)"
                )

        try:
            found, data = await asyncio.to_thread(
                read_confined, roots, message.path, max_bytes=self._ceiling(), accept=accept
            )
            kind = document_kind(found.path)
            if kind in TEXT_KINDS:
                _utf8(message.path, data)
        except ReadRefused as refused:
            raise ClientRefusal("document_read", refused.why, seat) from None
        connection.send(
            DocumentRead(
                session=seat,
                path=str(found.path),
                document_kind=kind,
                bytes=base64.b64encode(data).decode("ascii"),
                reviewable=kind in TEXT_KINDS,
                content_hash=content_hash(data),
                threads=[],
                reviews=[],
            )
        )

    async def document_list(self, connection: Connection, message: client.DocumentList) -> None:
        seat = message.session
        state = self._supervisor.require_seat("document_list", seat)
        project = self._supervisor.loaded.config.project(seat.org, seat.project)
        roots = {str(root): root for root in (project.document_roots if project else ())}
        if message.root is None:
            root = state.directory
        elif message.root in roots:
            root = roots[message.root]
        else:
            raise ClientRefusal(
                "document_list", f"{message.root} is not one of the project's document roots", seat
            )
        try:
            listing = await asyncio.to_thread(list_documents, root, KINDS)
        except OSError as error:
            raise ClientRefusal(
                "document_list", f"{root} cannot be listed ({error.strerror})", seat
            ) from None
        connection.send(
            DocumentList(
                session=seat,
                asked=message.root,
                root=str(listing.root),
                documents=[
                    ListedDocument(
                        path=document.path,
                        document_kind=document_kind(Path(document.path)),
                        size=document.size,
                    )
                    for document in listing.documents
                ],
                truncated=listing.truncated,
            )
        )

    async def file_content(self, connection: Connection, message: client.FileContent) -> None:
        try:
            content: ContentRead | ContentFailed = await self._content(message)
        except DocumentRefused as failed:
            content = ContentFailed(why=failed.why)
        connection.send(
            FileContent(
                session=message.session, path=message.path, sha=message.sha, content=content
            )
        )

    async def _content(self, message: client.FileContent) -> ContentRead:
        seat = _seat(message.session)
        config = self._supervisor.loaded.config
        if config.project(seat.org, seat.project) is None:
            raise DocumentRefused(f"no project {seat.org}/{seat.project} is configured")
        state = self._supervisor.seats.get(seat)
        if state is None:
            raise DocumentRefused(f"seat {seat} has not been started")
        path = _tree_path(message.path, state.directory)
        revision = _revision(message.sha)
        trees = self._trees
        commit = await trees.commit(state.directory, revision)
        if commit is None:
            raise DocumentRefused(f"{revision} is not a revision of {seat}'s tree")
        ceiling = self._ceiling()
        try:
            size, data = await trees.blob(state.directory, commit, path, ceiling)
        except GitError as failed:
            raise DocumentRefused(failed.why) from None
        if b"\0" in data[:BINARY_PROBE]:
            raise DocumentRefused(f"{path} is a binary file at {commit[:12]}")
        truncated = size > len(data)
        if truncated:
            data = data[: data.rfind(b"\n") + 1]
        lines = data.decode("utf-8", "replace").split("\n")
        if lines[-1] == "":
            lines.pop()
        return ContentRead(lines=lines, truncated=truncated)


class DocumentRefused(PeerError):
    """A review page's `file_content` that cannot be served: the client's ask, in words."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


def _utf8(asked: str, data: bytes) -> None:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ReadRefused(f"{asked} is not UTF-8 text (byte {error.start})") from None


def _seat(raw: Any) -> Seat:
    try:
        return msgspec.convert(raw, Seat)
    except msgspec.ValidationError:
        raise DocumentRefused("session is not a seat {org, project, label}") from None


def _tree_path(raw: Any, tree: Path) -> str:
    """`path` relative to the tree (an absolute one must be inside it), with no `..` in it."""
    if not isinstance(raw, str) or not raw or "\0" in raw or "\n" in raw:
        raise DocumentRefused("path must name a file of the tree")
    path = PurePosixPath(raw)
    if ".." in path.parts:
        raise DocumentRefused(f"{raw}: `..` is not allowed in a file path")
    if path.is_absolute():
        if not Path(path).is_relative_to(tree):
            raise DocumentRefused(f"{raw} is outside the seat's tree")
        path = PurePosixPath(Path(path).relative_to(tree))
    return str(path)


def _revision(raw: Any) -> str:
    """The revision asked for (null: the branch tip); one shaped like an option is refused."""
    if raw is None:
        return "HEAD"
    if not isinstance(raw, str) or not raw or raw.startswith("-") or not raw.isprintable():
        raise DocumentRefused(f"{raw!r} is not a revision")
    return raw
