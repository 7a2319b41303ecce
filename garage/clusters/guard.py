"""The guard: facts that disagree on numbers, dates or negation are never grouped.

Embeddings place "42 employees" beside "45 employees", and "on Tuesday" beside "not on
Tuesday", so closeness alone would merge claims that contradict each other. Each text is read
into a ``Claim``: the numbers it states, the date words it names and whether it is negated.
Two facts may share a group only when their claims are equal. Equality is deliberately strict
("opens on 3 March" and "opens on 3 March 2025" stay apart): a missed grouping costs a
duplicate, a wrong one states something no document said. Being an equality, it is also
transitive, so a candidate checked against one member of a group is checked against all.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_NUMBER_WORDS = {
    "zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6",
    "seven": "7", "eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12",
    "thirteen": "13", "fourteen": "14", "fifteen": "15", "sixteen": "16", "seventeen": "17",
    "eighteen": "18", "nineteen": "19", "twenty": "20", "thirty": "30", "forty": "40",
    "fifty": "50", "sixty": "60", "seventy": "70", "eighty": "80", "ninety": "90",
    "hundred": "100", "thousand": "1000", "million": "1000000", "billion": "1000000000",
    "dozen": "12", "first": "1", "second": "2", "third": "3", "fourth": "4", "fifth": "5",
    "half": "0.5", "twice": "2", "once": "1", "double": "2", "triple": "3",
}  # fmt: skip
_MONTHS = {
    "january": "jan", "jan": "jan", "february": "feb", "feb": "feb", "march": "mar",
    "mar": "mar", "april": "apr", "apr": "apr", "june": "jun", "jun": "jun",
    "july": "jul", "jul": "jul", "august": "aug", "aug": "aug", "september": "sep",
    "sep": "sep", "sept": "sep", "october": "oct", "oct": "oct", "november": "nov",
    "nov": "nov", "december": "dec", "dec": "dec",
}  # fmt: skip
_DAYS = {
    "monday": "mon", "tuesday": "tue", "wednesday": "wed", "thursday": "thu", "friday": "fri",
    "saturday": "sat", "sunday": "sun", "today": "today", "tomorrow": "tomorrow",
    "yesterday": "yesterday", "tonight": "tonight", "weekend": "weekend",
}  # fmt: skip
_NEGATIONS = {
    "not", "no", "never", "none", "nobody", "nothing", "nowhere", "neither", "nor", "cannot",
    "without", "nope", "non",
}  # fmt: skip

# Digit runs with their decimal and thousands separators, optionally an ordinal suffix.
_DIGITS = re.compile(r"\d+(?:[.,]\d+)*(?:st|nd|rd|th)?", re.IGNORECASE)
_WORDS = re.compile(r"[a-z]+(?:'[a-z]+)?")
# "may" is a month only next to a day number: as a verb it says nothing about dates.
_MAY = re.compile(r"\b\d{1,2}(?:st|nd|rd|th)?\s+may\b|\bmay\s+\d", re.IGNORECASE)


@dataclass(frozen=True)
class Claim:
    numbers: frozenset[str]
    dates: frozenset[str]
    negated: bool


def _number(token: str) -> str:
    token = re.sub(r"(st|nd|rd|th)$", "", token.lower())
    # 1,000 and 1000 are the same number; a decimal comma ("3,5") is rare enough in claims
    # that reading it as a separator errs only towards keeping facts apart.
    token = token.replace(",", "")
    if "." in token:
        token = token.rstrip("0").rstrip(".") or "0"
    return token.lstrip("0") or "0"


def read_claim(text: str) -> Claim:
    numbers = {_number(m.group()) for m in _DIGITS.finditer(text)}
    dates: set[str] = {"may"} if _MAY.search(text) else set()
    negated = False
    for word in _WORDS.findall(text.lower()):
        if word.endswith("n't"):
            negated = True
            continue
        if word in _NEGATIONS:
            negated = True
        elif word in _NUMBER_WORDS:
            numbers.add(_NUMBER_WORDS[word])
        elif word in _MONTHS:
            dates.add(_MONTHS[word])
        elif word in _DAYS:
            dates.add(_DAYS[word])
    return Claim(frozenset(numbers), frozenset(dates), negated)


def compatible(a: Claim, b: Claim) -> bool:
    """Whether two facts may be grouped: they agree on numbers, dates and negation."""
    return a == b


def disagreement(a: Claim, b: Claim) -> str | None:
    """What two claims disagree on, for reports and tests; None when they agree."""
    if a.numbers != b.numbers:
        return "numbers"
    if a.dates != b.dates:
        return "dates"
    if a.negated != b.negated:
        return "negation"
    return None
