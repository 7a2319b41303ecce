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
