"""Reading an answer's [n] citations back against the excerpts the model was shown.

A small model writes citations in several shapes — ``[2]``, ``[1][3]``, ``[1, 3]``, ``[1-3]``,
``[Excerpt 2]`` — and sometimes a number no excerpt has. Every bracket is read; numbers that
resolve to an excerpt are kept (in the order the answer first cites them), the others are
dropped from the text and reported, so a client never follows a citation to nothing.

Whether the model said the excerpts do not hold the answer is read here too: the prompt asks for
one fixed sentence (prompts.NOT_IN_EXCERPTS), and the usual rewordings of it count as well.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# One bracket of citations: numbers separated by commas, semicolons, "and" or spaces, or a range.
# Not right after a name, a call or a quote: ``items[0]`` and ``f(x)[1]`` are code, not citations.
_BRACKET = re.compile(
    r"(?<![\w)'\"`])\[\s*(?:(?:excerpts?|sources?|refs?)\s*)?"
    r"(\d{1,3}(?:\s*(?:[,;]|and|&|-|–|\s)\s*\d{1,3})*)\s*\]",
    re.IGNORECASE,
)
_NUMBER_OR_RANGE = re.compile(r"(\d{1,3})(?:\s*[-–]\s*(\d{1,3}))?")
_MAX_RANGE = 20

_NOT_IN_EXCERPTS = re.compile(
    r"\bnot\s+(?:found\s+|mentioned\s+|covered\s+|answered\s+|given\s+|provided\s+)?"
    r"in\s+the\s+(?:provided\s+|given\s+)?excerpts?\b"
    r"|\bexcerpts?\s+(?:do|does|did)\s*(?:n['’]t|not)\s+"
    r"(?:contain|say|mention|answer|include|cover|provide|address|specify|describe|discuss|tell)"
    r"|\bno\s+(?:information|mention)\s+(?:about|on|of|regarding)\b.{0,80}\bexcerpts?\b",
    re.IGNORECASE | re.DOTALL,
)


@dataclass(frozen=True)
class ReadCitations:
    text: str  # the answer with citations to nothing removed
    cited: list[int]  # excerpt numbers the answer cites, in first-cited order
    unresolved: list[int]  # numbers the answer wrote that name no excerpt


def _numbers(group: str) -> list[int]:
    numbers: list[int] = []
    for match in _NUMBER_OR_RANGE.finditer(group):
        first = int(match.group(1))
        last = int(match.group(2)) if match.group(2) else first
        if first <= last <= first + _MAX_RANGE:
            numbers.extend(range(first, last + 1))
        else:
            numbers.extend((first, last))
    return numbers


def read_citations(answer: str, excerpts: int) -> ReadCitations:
    """The citations of ``answer``, which was written from excerpts numbered 1..``excerpts``."""
    cited: dict[int, None] = {}
    unresolved: dict[int, None] = {}

    def rewrite(match: re.Match[str]) -> str:
        numbers = _numbers(match.group(1))
        valid = [n for n in numbers if 1 <= n <= excerpts]
        for n in numbers:
            (cited if 1 <= n <= excerpts else unresolved).setdefault(n, None)
        if len(valid) == len(numbers):
            return match.group(0)
        return "".join(f"[{n}]" for n in dict.fromkeys(valid))

    text = _BRACKET.sub(rewrite, answer)
    text = re.sub(r"[ \t]+([.,;:])", r"\1", text) if unresolved else text
    return ReadCitations(text, list(cited), list(unresolved))


def says_not_in_excerpts(answer: str) -> bool:
    """Whether the answer says the excerpts do not hold what was asked."""
    return bool(_NOT_IN_EXCERPTS.search(answer))
