"""Whether an answer says something its excerpts say.

A small model shown excerpts near a question but not about it still answers, from memory or by
restating the question ("Yes, the Withings watch is waterproof enough to swim with"). Its
probability of "yes" is no lower than for a question the excerpts do answer, so the verdict
cannot tell them apart. What can: an answer from the excerpts brings words of theirs — a
command, a name, a number — and one from nowhere brings words found in no excerpt, or nothing
but the question's own. ``support`` is the share of the answer's own content words (those not
in the question) that some excerpt shown holds; an answer with none has no support.

Words are compared on the crude stems of garage.ask.coverage, without its stop words; a word
with a digit ("1.7.0", "M16") is kept whole, since a number is exactly what an answer from
memory gets wrong.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from garage.ask.citations import read_citations
from garage.ask.coverage import STOPWORDS, stem

_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-']*[A-Za-z0-9]|[A-Za-z0-9]")
MIN_WORD = 3


def content_words(text: str) -> set[str]:
    """The stems of ``text``'s content words, and its words with a digit as they are."""
    words: set[str] = set()
    for word in _WORD.findall(text):
        lowered = word.lower()
        if any(c.isdigit() for c in word):
            words.add(lowered)
        elif len(word) >= MIN_WORD and lowered not in STOPWORDS:
            words.add(stem(lowered))
    return words


def support(question: str, answer: str, excerpts: Iterable[str]) -> float:
    """The share of the answer's content words beyond the question's that an excerpt holds;
    0 for an answer that adds none."""
    text = read_citations(answer, 0).text  # its [n] markers are not words of the answer
    own = content_words(text) - content_words(question)
    if not own:
        return 0.0
    shown: set[str] = set()
    for excerpt in excerpts:
        shown |= content_words(excerpt)
    return len(own & shown) / len(own)
