"""Bounds on chosen files and downloads (BR17, BR22, O-BR9, O-BR11)."""

from __future__ import annotations

import base64

import pytest

from forge.wire.files import (
    MAX_CHOSEN_BYTES,
    ChosenFile,
    FileAnswerRefused,
    decode_file_answer,
    download_refusal,
)


def entry(name: str, data: bytes) -> dict[str, str]:
    return {"name": name, "data": base64.b64encode(data).decode()}


def test_two_files_decode_in_order() -> None:
    files = decode_file_answer([entry("a.txt", b"one"), entry("b.bin", b"\0")])
    assert files == [ChosenFile("a.txt", b"one"), ChosenFile("b.bin", b"\0")]


def test_empty_and_oversized_answers_are_a_dismiss() -> None:
    assert decode_file_answer([]) is None
    assert decode_file_answer([entry(f"{i}.txt", b"x") for i in range(17)]) is None
    half = b"x" * (MAX_CHOSEN_BYTES // 2 + 1)
    assert decode_file_answer([entry("a", half), entry("b", half)]) is None
    assert decode_file_answer([entry("a", b"x" * MAX_CHOSEN_BYTES)]) is not None


@pytest.mark.parametrize(
    ("files", "words"),
    [
        ("nope", "must be a list"),
        ([{"name": "a"}], "data in base64"),
        ([entry("../etc/passwd", b"x")], "not a plain file name"),
        ([entry("a\\b", b"x")], "not a plain file name"),
        ([entry("..", b"x")], "not a plain file name"),
        ([entry("x" * 256, b"x")], "over 255 bytes"),
        ([entry("", b"x")], "non-empty name"),
        ([{"name": "a", "data": "%%%"}], "not valid base64"),
    ],
)
def test_malformed_answers_are_refused_before_anything_is_written(
    files: object, words: str
) -> None:
    with pytest.raises(FileAnswerRefused, match=words):
        decode_file_answer(files)


def test_downloads_past_32_mib_are_refused_in_words() -> None:
    assert download_refusal(32 * 1024 * 1024) is None
    assert download_refusal(int(40.2 * 1024 * 1024)) == (
        "download is 40.2 MiB, over the 32 MiB limit"
    )
