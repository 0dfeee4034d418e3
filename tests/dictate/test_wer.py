"""Word error rate as a table and its laws."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from forge.workers.dictate.wer import Score, score

WORD = st.sampled_from(["a", "b", "c", "d"])


@pytest.mark.parametrize(
    ("said", "heard", "errors", "count"),
    [
        ("Run the tests.", "run the tests", 0, 3),
        ("the cat sat on", "a cat sat", 2, 4),
        ("a b", "a x b c", 2, 2),
        ("", "you", 1, 0),
        ("", "", 0, 0),
        ("it's done", "it is done", 2, 2),
    ],
)
def test_scores(said: str, heard: str, errors: int, count: int) -> None:
    assert score(said, heard) == Score(errors, count)


def test_rates_add_up_over_clips() -> None:
    total = score("a b c d", "a b c d") + score("a b", "a c")
    assert (total.errors, total.words, total.rate) == (1, 6, 1 / 6)


@given(st.lists(WORD, max_size=8), st.lists(WORD, max_size=8))
def test_errors_are_bounded_by_the_longer_side(said: list[str], heard: list[str]) -> None:
    result = score(" ".join(said), " ".join(heard))
    assert abs(len(said) - len(heard)) <= result.errors <= max(len(said), len(heard))
    assert (result.errors == 0) == (said == heard)
