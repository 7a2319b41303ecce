"""Whether the sentence a reply quotes is really in the excerpts it names.

With ``ask.quote`` the model must copy, before it answers, the words of an excerpt that state
the answer. A quote found in an excerpt it named is evidence the model can be checked on — the
same rule that keeps a potential fact only where its span is in the document. A reply whose
quote is in no excerpt it named answers from somewhere else, and is declined.

A small model copies loosely: it drops a leading "The", changes a capital, closes with a full
stop the excerpt does not have, or stops halfway. So the comparison is on words (lowercased,
punctuation aside), and the quote counts as found when one run of its words, in order, makes
up at least ``MIN_SHARE`` of it, and is ``MIN_WORDS`` words long or the whole quote.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from difflib import SequenceMatcher

_WORD = re.compile(r"\w+", re.UNICODE)
MIN_SHARE = 0.8
MIN_WORDS = 4


def words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def quoted_share(quote: str, excerpt: str) -> float:
    """The longest run of the quote's words that the excerpt holds in order, as a share of
    the quote's words; 0 when the run is shorter than ``MIN_WORDS``."""
    said, held = words(quote), words(excerpt)
    if not said or not held:
        return 0.0
    matcher = SequenceMatcher(None, said, held, autojunk=False)
    run = matcher.find_longest_match(0, len(said), 0, len(held)).size
    if run < min(MIN_WORDS, len(said)):
        return 0.0
    return run / len(said)


def quote_found(quote: str, excerpts: Iterable[str]) -> bool:
    """The quote is in one of ``excerpts`` (see the module's rule)."""
    return any(quoted_share(quote, excerpt) >= MIN_SHARE for excerpt in excerpts)
