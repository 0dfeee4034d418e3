"""The `[dictate]` axes: how a take's words are shaped before they land. Pure and total.

Three axes, each a name (forge.toml's `[dictate]` gives the defaults; a take carries its own):

- styling: `verbatim` (the engine's words as they are), `casual` (fillers dropped, no closing
  full stop), `semi_formal` (fillers dropped, every sentence capitalised and closed), `formal`
  (semi_formal, and contractions spelled out). Every styling but `verbatim` drops the "..."
  Whisper writes where speech trails off or pauses: nobody dictates an ellipsis.
- structure: `prose` (one paragraph), `lines` (one sentence per line), `list` (one `- ` item per
  sentence, no closing full stops).
- context: `general` (nothing more), `terminal` (spoken symbols become symbols - "dash dash" is
  `--`, "slash" is `/`, "dot" is `.` - and no closing full stop: words for a shell).

A name this table does not know leaves its axis as the engine wrote it: `[dictate] styling` and
`structure` take any text, so an unknown name must not lose words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

STYLINGS = ("verbatim", "casual", "semi_formal", "formal")
STRUCTURES = ("prose", "lines", "list")
CONTEXTS = ("general", "terminal")

TRAILING_OFF = re.compile(r"\s*(?:\.\.\.|\u2026)\s*")
FILLERS = re.compile(r"\b(?:um+|uh+|erm|er|hmm+|mm+)\b[,.]?\s*", re.IGNORECASE)
SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
CONTRACTIONS = {
    "can't": "cannot",
    "won't": "will not",
    "don't": "do not",
    "doesn't": "does not",
    "didn't": "did not",
    "isn't": "is not",
    "aren't": "are not",
    "wasn't": "was not",
    "weren't": "were not",
    "haven't": "have not",
    "hasn't": "has not",
    "couldn't": "could not",
    "shouldn't": "should not",
    "wouldn't": "would not",
    "i'm": "I am",
    "it's": "it is",
    "that's": "that is",
    "there's": "there is",
    "let's": "let us",
    "we're": "we are",
    "they're": "they are",
    "you're": "you are",
    "i've": "I have",
    "we've": "we have",
    "i'll": "I will",
    "we'll": "we will",
}
_CONTRACTION = re.compile(r"\b(" + "|".join(re.escape(c) for c in CONTRACTIONS) + r")\b", re.I)
SPOKEN_SYMBOLS = (
    (re.compile(r"\bdash dash\s*", re.I), "--"),
    (re.compile(r"\bslash\b\s*", re.I), "/"),
    (re.compile(r"\s*\bdot\b\s*", re.I), "."),
    (re.compile(r"\s*\bunderscore\b\s*", re.I), "_"),
    (re.compile(r"\bdash\s*", re.I), "-"),
    (re.compile(r"\bpipe\b", re.I), "|"),
    (re.compile(r"\btilde\s*", re.I), "~"),
)


@dataclass(frozen=True, slots=True)
class Axes:
    styling: str = "semi_formal"
    structure: str = "prose"
    context: str = "general"


def shape(text: str, axes: Axes) -> str:
    """`text` (the engine's words, segments joined) shaped by the three axes."""
    if axes.styling in STYLINGS[1:]:
        text = TRAILING_OFF.sub(" ", text)
    sentences = [s for s in (part.strip() for part in SENTENCE_END.split(_squash(text))) if s]
    shell = axes.context == "terminal"
    sentences = [s for s in (_style(s, axes.styling, shell) for s in sentences) if s]
    if shell:
        sentences = [_terminal(s) for s in sentences]
    return _structure(sentences, axes.structure)


def _squash(text: str) -> str:
    return " ".join(text.split())


def _style(sentence: str, styling: str, shell: bool) -> str:
    """One sentence styled; for a shell nothing is capitalised or closed (`ls`, not `Ls.`)."""
    if styling not in STYLINGS[1:]:
        return sentence
    sentence = _squash(FILLERS.sub("", sentence)).strip(" ,")
    if not sentence or not any(c.isalnum() for c in sentence):
        return ""
    if styling == "formal":
        sentence = _CONTRACTION.sub(_expand, sentence)
    if styling == "casual" or shell:
        return sentence.rstrip(".")
    sentence = sentence[0].upper() + sentence[1:]
    return sentence if sentence[-1] in ".!?" else sentence + "."


def _expand(match: re.Match[str]) -> str:
    word = match.group(1)
    expanded = CONTRACTIONS[word.lower()]
    return expanded[0].upper() + expanded[1:] if word[0].isupper() else expanded


def _terminal(sentence: str) -> str:
    for pattern, symbol in SPOKEN_SYMBOLS:
        sentence = pattern.sub(symbol, sentence)
    return sentence.rstrip(".")


def _structure(sentences: list[str], structure: str) -> str:
    if structure == "lines":
        return "\n".join(sentences)
    if structure == "list":
        return "\n".join(f"- {s.rstrip('.')}" for s in sentences)
    return " ".join(sentences)
