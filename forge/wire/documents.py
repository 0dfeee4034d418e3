"""What the server answers `document_read`, `document_list` and `file_content` with.

`document_read` answers this message or an `error` naming `document_read` (its only two arms);
`document_list` the same with its own name.
`file_content` has no error arm: a read that could not run is a `file_content` whose content is
`{"state": "failed", "why"}`, which a review page draws as the absence of its expand control.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from forge.wire.seats import Seat
from forge.wire.server import ServerMessage


class OtherKind(msgspec.Struct, frozen=True):
    """`{"other": "<extension>"}`: a kind this server does not know, the extension kept as is."""

    other: str


DocumentKind = Literal["markdown", "pdf", "text"] | OtherKind


class DocumentRead(ServerMessage, frozen=True, kw_only=True, tag="document_read"):
    session: Seat
    path: str
    """The resolved absolute path the viewer addresses the document by."""
    document_kind: DocumentKind
    bytes: str
    """The file's bytes, base64."""
    reviewable: bool
    """The document's own fact: markdown and text are, a PDF and any other kind are not."""
    content_hash: str
    """The first 8 bytes of its SHA-256 as an unsigned integer, in decimal digits."""
    threads: list[Any]
    reviews: list[Any]
    """Empty: this server keeps no reviews yet."""


class ListedDocument(msgspec.Struct, frozen=True, kw_only=True):
    path: str
    """Relative to the listed root, `/`-separated."""
    document_kind: DocumentKind
    size: int


class DocumentList(ServerMessage, frozen=True, kw_only=True, tag="document_list"):
    session: Seat
    asked: str | None
    """`root` as the ask sent it (null: the tree), so a client matches the answer to its ask."""
    root: str
    """The resolved absolute folder listed; a document reads as `<root>/<path>`."""
    documents: list[ListedDocument]
    """Markdown, text and PDF files under it, sorted by path."""
    truncated: bool
    """The walk stopped at its bound: more documents lie under the root than are listed."""


class ContentRead(msgspec.Struct, tag_field="state", tag="read", frozen=True, kw_only=True):
    lines: list[str]
    truncated: bool
    """The file is over the ceiling: `lines` are the whole lines inside it."""


class ContentFailed(msgspec.Struct, tag_field="state", tag="failed", frozen=True, kw_only=True):
    why: str


class FileContent(ServerMessage, frozen=True, kw_only=True, tag="file_content"):
    """The ask's three names echoed as sent, and the read."""

    session: Any
    path: Any
    sha: Any
    content: ContentRead | ContentFailed
