"""What the default prompt's "fact" must at least look like to be kept.

A small model asked for "every standalone claim" also quotes headings ("The Crazy Ones"), list
items ("One"), mail header lines ("From: a@b.c", which the metadata facts already hold) and
markup directives (".. function:: getuser()"). They are grounded but state nothing, and as
potential facts they crowd search and distillation. A claim here is a span of at least three
words that is not one of those shapes. Only the class ``fact`` is held to it: an entities
prompt's "Jane Doe" is a good person.
"""

from __future__ import annotations

import re

CLAIM_CLASS = "fact"
MIN_WORDS = 3

_WORD = re.compile(r"\w+(?:['’.-]\w+)*")  # words and numbers: "rose 12%" counts the 12
# An RFC 822 header line, alone on its line (a quoted header inside a sentence is not one).
_HEADER_LINE = re.compile(
    r"^(?:from|to|cc|bcc|subject|date|reply-to|sender|message-id|in-reply-to|references"
    r"|content-[a-z-]+|mime-version|x-[a-z0-9-]+|received|return-path)\s*:",
    re.IGNORECASE,
)
# reStructuredText / Sphinx directives, comments and link targets (".. note::", ".. _label:").
_MARKUP_LINE = re.compile(r"^\s*\.\.\s")


def is_claim(text: str) -> bool:
    stripped = text.strip()
    if len(_WORD.findall(stripped)) < MIN_WORDS:
        return False
    lines = [line for line in stripped.splitlines() if line.strip()]
    if all(_HEADER_LINE.match(line.strip()) for line in lines):
        return False
    return not all(_MARKUP_LINE.match(line) for line in lines)


# -- entity classes ----------------------------------------------------------------------------
# An entities prompt's person, organization or place is a name, yet a small model also quotes
# "He" as a person and a whole sentence as an organization. Such spans are grounded (the text
# is there) but name nothing, and a graph vertex titled "He" would gather every pronoun of the
# corpus. The classes below (by name, any case) are held to the shape of a name; event and
# project classes to the looser shape of a mention, since an event is often a verb phrase
# ("presented the Q2 roadmap"). Any other class — a prompt's own "relation" or "decision" — is
# kept as it is.
NAME_CLASSES = frozenset(
    {
        "person", "people", "persons", "organization", "organisation", "org", "company",
        "institution", "place", "location", "city", "country", "venue", "team", "group",
    }
)  # fmt: skip
MENTION_CLASSES = frozenset({"event", "events", "meeting", "project", "projects", "product"})
MAX_MENTION_WORDS = 10  # more is a sentence, in any of these classes
MAX_PLAIN_WORDS_IN_A_NAME = 2
# A name's words are capitalised, bar joining words like these: "University of the Arts",
# "Ministère de l'Économie", "Ludwig van Beethoven".
_PARTICLES = frozenset(
    "a an and at by da de del della der des di do dos du el en et for in la le les of on or "
    "the to und van von y zu".split()
)
_PRONOUNS = frozenset(
    "i me my mine myself you your yours yourself yourselves he him his himself she her hers "
    "herself it its itself we us our ours ourselves they them their theirs themselves this "
    "that these those who whom someone somebody everyone everybody anyone anybody nobody".split()
)
_SENTENCE_END = re.compile(r"[.!?…]['\"’”)\]]*$")
_LETTERS = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*")


def is_entity_class(fact_class: str) -> bool:
    name = fact_class.strip().lower()
    return name in NAME_CLASSES or name in MENTION_CLASSES


def is_entity_mention(fact_class: str, text: str) -> bool:
    """``text`` can be an entity of ``fact_class`` (always true for a class that is not an
    entity class). Not a pronoun ("He", "them"), and not a sentence: at most ten words, and
    not ending as a sentence does (".", "!", "?") with a plain word in it — a word in lower
    case that is not a joining word like "of" or "the"; a name has none, a sentence has its
    verbs ("The office opens on Monday."). A name class (person, organization, place, …) also
    has at most two plain words: "the new head of marketing" describes someone, it does not
    name them."""
    name = fact_class.strip().lower()
    if name not in NAME_CLASSES and name not in MENTION_CLASSES:
        return True
    stripped = " ".join(text.split())
    words = _LETTERS.findall(stripped)
    if len(words) == 1 and words[0].lower() in _PRONOUNS:
        return False
    if len(stripped.split()) > MAX_MENTION_WORDS:
        return False
    plain = sum(1 for w in words if w.islower() and w not in _PARTICLES and len(w) > 1)
    if plain and _SENTENCE_END.search(stripped):
        return False
    return not (name in NAME_CLASSES and plain > MAX_PLAIN_WORDS_IN_A_NAME)
