"""The detach key machine: `Ctrl-\\ d` detaches, `Ctrl-\\` before anything else passes through."""

from __future__ import annotations

import pytest

from forge.client.detach import DetachKeys, Keys

FS = b"\x1c"


def feed_all(*reads: bytes) -> list[Keys]:
    keys = DetachKeys()
    return [keys.feed(read) for read in reads]


def test_plain_typing_passes_through_untouched() -> None:
    assert feed_all(b"echo hi\r") == [Keys(b"echo hi\r", False)]


def test_prefix_then_d_detaches_and_drops_what_follows() -> None:
    assert feed_all(b"ls" + FS + b"d" + b"rm -rf\r") == [Keys(b"ls", True)]


def test_prefix_then_anything_else_sends_both_bytes() -> None:
    assert feed_all(FS + b"x") == [Keys(FS + b"x", False)]


@pytest.mark.parametrize("other", [b"D", b"\x03", b"\r", FS])
def test_prefix_then_any_other_byte_is_not_a_detach(other: bytes) -> None:
    assert feed_all(FS + other + b"z") == [Keys(FS + other + b"z", False)]


def test_a_prefix_ending_one_read_waits_for_the_next() -> None:
    first, second = feed_all(b"ab" + FS, b"d")
    assert first == Keys(b"ab", False)
    assert second == Keys(b"", True)


def test_a_held_prefix_followed_by_other_bytes_is_released_in_order() -> None:
    assert feed_all(FS, b"q1") == [Keys(b"", False), Keys(FS + b"q1", False)]


def test_two_prefixes_across_reads_pass_both_and_do_not_arm() -> None:
    assert feed_all(FS, FS + b"d") == [Keys(b"", False), Keys(FS + FS + b"d", False)]


def test_the_machine_rearms_after_passing_a_pair_through() -> None:
    assert feed_all(FS + b"x" + FS + b"d") == [Keys(FS + b"x", True)]


def test_an_empty_read_keeps_a_held_prefix() -> None:
    keys = DetachKeys()
    keys.feed(FS)
    assert keys.feed(b"") == Keys(b"", False)
    assert keys.armed
    assert keys.feed(b"d") == Keys(b"", True)


def test_prefix_then_c_takes_control_and_typing_goes_on() -> None:
    """Issue 13 item 16: `Ctrl-\\ c` asks for control back (a viewer whose control was taken had
    no way back short of re-attaching); the keys around it are still typed."""
    assert feed_all(b"ls" + FS + b"c" + b"pwd\r") == [Keys(b"lspwd\r", False, take=True)]


def test_the_take_key_may_be_split_across_reads() -> None:
    """Issue 13 item 16: as the detach key may."""
    assert feed_all(b"a" + FS, b"cb") == [Keys(b"a", False), Keys(b"b", False, take=True)]


def test_a_take_then_a_detach_in_one_read_does_both() -> None:
    assert feed_all(FS + b"c" + FS + b"d" + b"x") == [Keys(b"", True, take=True)]
