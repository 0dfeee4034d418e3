"""The bounds on files crossing the socket: a chooser's answer in, a finished download out.

Pure checks, shared by the supervisor (which refuses before a byte is written) and the host
(which writes the chosen files beside the profile). BR17, BR22, O-BR9, O-BR11.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass

from forge.errors import PeerError

MAX_CHOSEN_FILES = 16
"""BR17: past this many files the whole answer is a dismiss."""
MAX_CHOSEN_BYTES = 8 * 1024 * 1024
"""BR17: past this many decoded bytes the whole answer is a dismiss."""
MAX_DOWNLOAD_BYTES = 32 * 1024 * 1024
"""BR22: a finished download past this is refused in words rather than handed over."""
MAX_NAME_BYTES = 255


class FileAnswerRefused(PeerError):
    """A chooser answer that names a file badly or carries bytes that are not base64."""


@dataclass(frozen=True)
class ChosenFile:
    name: str
    data: bytes


def check_file_name(name: object) -> str:
    """O-BR11: keep a plain basename; refuse separators, NUL, `.`, `..` and names over 255 B."""
    if not isinstance(name, str) or not name:
        raise FileAnswerRefused("each file needs a non-empty name")
    if any(bad in name for bad in ("/", "\\", "\0")) or name in {".", ".."}:
        raise FileAnswerRefused(f"file name {name!r} is not a plain file name")
    if len(name.encode()) > MAX_NAME_BYTES:
        raise FileAnswerRefused(f"file name is over {MAX_NAME_BYTES} bytes")
    return name


def decode_file_answer(files: object) -> list[ChosenFile] | None:
    """The files of one `browser_file_answer`, or None for a dismiss (empty, or over a bound).

    Raises `FileAnswerRefused` for a malformed list, name or base64, before anything is written.
    """
    if not isinstance(files, list):
        raise FileAnswerRefused("files must be a list of {name, data}")
    if not files or len(files) > MAX_CHOSEN_FILES:
        return None
    chosen: list[ChosenFile] = []
    total = 0
    for entry in files:
        if not isinstance(entry, dict) or not isinstance(entry.get("data"), str):
            raise FileAnswerRefused("each file is {name, data} with data in base64")
        name = check_file_name(entry.get("name"))
        try:
            data = base64.b64decode(entry["data"], validate=True)
        except binascii.Error as error:
            raise FileAnswerRefused(f"file {name!r} is not valid base64: {error}") from None
        total += len(data)
        if total > MAX_CHOSEN_BYTES:
            return None
        chosen.append(ChosenFile(name, data))
    return chosen


def download_refusal(size: int) -> str | None:
    """The words for a download too large to hand over, or None when it may cross."""
    if size <= MAX_DOWNLOAD_BYTES:
        return None
    return (
        f"download is {size / 1024 / 1024:.1f} MiB, "
        f"over the {MAX_DOWNLOAD_BYTES // 1024 // 1024} MiB limit"
    )
