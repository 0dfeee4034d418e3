"""Word error rate: the edits (substitutions, deletions, insertions) from what was said to what was
heard, over the words said. Pure. Both sides are compared as lower-case words with punctuation
dropped, so "Tests." and "tests" agree and only words count."""

from __future__ import annotations

import re
from dataclasses import dataclass

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


@dataclass(frozen=True, slots=True)
class Score:
    errors: int
    words: int
    """Words in the reference (what was said)."""

    @property
    def rate(self) -> float:
        """Errors per reference word; a reference of no words scores 1.0 for anything heard."""
        if self.words == 0:
            return 0.0 if self.errors == 0 else 1.0
        return self.errors / self.words

    def __add__(self, other: Score) -> Score:
        return Score(self.errors + other.errors, self.words + other.words)


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def score(reference: str, hypothesis: str) -> Score:
    said, heard = words(reference), words(hypothesis)
    row = list(range(len(heard) + 1))
    for i, word in enumerate(said, 1):
        previous, row[0] = row[0], i
        for j, other in enumerate(heard, 1):
            previous, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, previous + (word != other))
    return Score(row[-1], len(said))
