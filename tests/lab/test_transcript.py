"""The transcript's stream log on its own: the bound and its marked cut, and redaction of a
secret however the stream's chunks fall."""

from __future__ import annotations

import io

from forge.attempt.redact import Redactor
from forge.attempt.transcript import (
    TRANSCRIPT_HEAD_BYTES,
    TRANSCRIPT_TAIL_BYTES,
    StreamLog,
    cut_marker,
)

KEY = (
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA1234567890abcdef\n"
    "-----END RSA PRIVATE KEY-----"
)


class _Kept(io.BytesIO):
    def close(self) -> None:
        self.kept = self.getvalue()
        super().close()


def logged(chunks: list[bytes], env: dict[str, str] | None = None) -> tuple[bytes, int]:
    file = _Kept()
    log = StreamLog(file, Redactor(env or {}))
    for chunk in chunks:
        log.write(chunk)
    log.close()
    return file.kept, log.not_kept


def test_a_stream_past_the_bound_keeps_its_head_and_tail_and_marks_the_cut() -> None:
    line = b"0123456789abcde\n"
    total = (TRANSCRIPT_HEAD_BYTES + TRANSCRIPT_TAIL_BYTES) * 2
    chunks = [line * 4096] * (total // (len(line) * 4096))
    chunks.append(b"the very last line\n")
    kept, not_kept = logged(chunks)
    streamed = sum(len(c) for c in chunks)
    assert not_kept == streamed - TRANSCRIPT_HEAD_BYTES - TRANSCRIPT_TAIL_BYTES
    marker = cut_marker(not_kept)
    assert marker in kept
    head, tail = kept.split(marker)
    assert len(head) == TRANSCRIPT_HEAD_BYTES
    assert len(tail) == TRANSCRIPT_TAIL_BYTES
    assert tail.endswith(b"the very last line\n")


def test_a_stream_within_the_bound_is_kept_whole_without_a_marker() -> None:
    kept, not_kept = logged([b"one\n", b"two, no newline"])
    assert (kept, not_kept) == (b"one\ntwo, no newline", 0)


def test_a_secret_split_across_chunks_is_redacted() -> None:
    secret = "s3cr3t-value-1234"
    text = f"using {secret} now\n".encode()
    kept, _ = logged([text[:10], text[10:14], text[14:]], {"API_TOKEN": secret})
    assert kept == b"using [REDACTED:API_TOKEN] now\n"


def test_a_private_key_split_over_lines_and_chunks_is_redacted() -> None:
    data = f"before\n{KEY}\nafter\n".encode()
    chunks = [data[i : i + 7] for i in range(0, len(data), 7)]
    kept, _ = logged(chunks)
    assert kept == b"before\n[REDACTED]\nafter\n"


def test_a_token_shape_is_redacted() -> None:
    kept, _ = logged([b"token ghp_abcdefghijklmnopqrstuvwxyz0123\n"])
    assert kept == b"token [REDACTED]\n"
