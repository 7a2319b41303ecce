"""Whether the words a model quotes from an excerpt are really there.

rag_ask decides answerability from evidence it can check: before it answers, the model names
the excerpt that answers the question and copies the sentence that does. A quote found in that
excerpt is evidence that the excerpt says something to the point; a quote found nowhere is a
model making something up, and the answer is declined before any of it is written. The check is
the one facts get (grounded or dropped), made tolerant of what copying by a small model
changes: case, spacing, quotation marks and dashes, an ellipsis, a word or two.
"""

from __future__ import annotations

import re
import unicodedata
from difflib import SequenceMatcher

# A quote shorter than this says nothing checkable ("yes", "the list").
MIN_QUOTE_CHARS = 12
# Share of the quote's characters that must be found, in order, in the excerpt.
MIN_MATCHED = 0.9

_SPACE = re.compile(r"\s+")
_MARKS = str.maketrans({"‘": "'", "’": "'", "“": '"', "”": '"', "–": "-", "—": "-", "`": "'"})


def normalise(text: str) -> str:
    """Case, spacing, typographic quotes and dashes, markup emphasis and ellipses set aside."""
    text = unicodedata.normalize("NFKC", text).translate(_MARKS).casefold()
    text = text.replace("…", " ").replace("...", " ").replace("*", "")
    return _SPACE.sub(" ", text).strip(" \"'.,;:")


def quoted_in(quote: str, excerpt: str) -> bool:
    """True when ``quote`` is, give or take copying noise, a passage of ``excerpt``."""
    wanted, source = normalise(quote), normalise(excerpt)
    if len(wanted) < MIN_QUOTE_CHARS:
        return False
    if wanted in source:
        return True
    # A word or two changed or dropped: most of the quote still appears, in order, and within
    # one stretch of the excerpt no longer than the quote could plausibly have come from.
    matcher = SequenceMatcher(None, source, wanted, autojunk=False)
    blocks = [b for b in matcher.get_matching_blocks() if b.size >= 4]
    matched = sum(b.size for b in blocks)
    if not blocks or matched < MIN_MATCHED * len(wanted):
        return False
    span = blocks[-1].a + blocks[-1].size - blocks[0].a
    return span <= 1.5 * len(wanted)
