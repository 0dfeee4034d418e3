"""The lines between the supervisor and its tree process: asks in, replies and watch events out.

Each line is one JSON object. An ask carries the supervisor's `id`; its reply names it back with a
`result` (whose type the ask decides) or the sentence it `failed` with. A watch is an ask too: its
`id` then names its events (`ready` once the watch is up, `changed` per burst, `failed` when it
cannot be kept) until `unwatch` names it.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec


class Ask(msgspec.Struct, tag_field="op", frozen=True, kw_only=True):
    id: int


class ReadWork(Ask, tag="work", frozen=True, kw_only=True):
    """-> `Work`."""

    directory: str


class ReadScan(Ask, tag="scan", frozen=True, kw_only=True):
    """-> `Seen`."""

    directory: str


class ReadRecord(Ask, tag="record", frozen=True, kw_only=True):
    """-> `[Seen, Diff | None]`."""

    directory: str


class ResolveCommit(Ask, tag="commit", frozen=True, kw_only=True):
    """-> the commit id, or null when the revision names none."""

    directory: str
    revision: str


class ReadBlob(Ask, tag="blob", frozen=True, kw_only=True):
    """-> `[size, bytes]`: the file's size and its first `limit` bytes."""

    directory: str
    commit: str
    path: str
    limit: int


class Watch(Ask, tag="watch", frozen=True, kw_only=True):
    """Events for `tree` (its git folders are watched too)."""

    tree: str


class Unwatch(Ask, tag="unwatch", frozen=True, kw_only=True):
    pass


AnyAsk = ReadWork | ReadScan | ReadRecord | ResolveCommit | ReadBlob | Watch | Unwatch


class Reply(msgspec.Struct, tag_field="kind", tag="reply", frozen=True, kw_only=True):
    id: int
    result: Any = None
    failed: str | None = None


class Event(msgspec.Struct, tag_field="kind", tag="event", frozen=True, kw_only=True):
    id: int
    word: Literal["ready", "changed", "failed"]
    why: str | None = None


class RawReply(msgspec.Struct, tag_field="kind", tag="reply", frozen=True, kw_only=True):
    """A reply as the supervisor reads it: the result left encoded until its ask's type is known."""

    id: int
    result: msgspec.Raw = msgspec.Raw(b"null")
    failed: str | None = None
