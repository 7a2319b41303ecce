"""rag_ask's answer as a constrained JSON object: the excerpts first, then the answer.

Asked in prose to end sentences with [n], a 1.5B model cites about half the time and often
refuses when the answer is there. Constrained by a JSON schema (llama-server and Ollama turn it
into a grammar, LM Studio takes it as ``json_schema``), the model must first say whether an
excerpt states the answer, then name the excerpts that do, then write the answer — or name
none and write the one refusal sentence. Choosing the excerpt before writing is also what
makes the citation point at the excerpt the answer comes from, not at whichever number comes
to mind afterwards.

The object streams token by token; :class:`AnswerStream` pulls the answer's text out of the
JSON as it arrives, so a client still sees the answer being written.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

from garage.ask.prompts import NOT_IN_EXCERPTS

# More than three excerpts for a four-sentence answer is a model listing everything it saw.
MAX_CITED = 3
# A quote is a sentence or two, not the excerpt copied whole.
QUOTE_CHARS = 300


def answer_schema(
    excerpts: int, *, stated_only: bool = False, quote: bool = False
) -> dict[str, Any]:
    """The reply's shape when ``excerpts`` numbered excerpts were shown: "stated": "yes", one
    to three excerpt numbers and an answer; or "stated": "no", no excerpt and the refusal.
    ``stated_only``: the "yes" branch alone, for an answer already judged answerable.
    ``quote``: the "yes" branch copies the excerpt's words that state the answer before it
    answers (garage.ask.quote checks them).

    The yes/no comes first because a model asked only for excerpt numbers always names one:
    search returns something for every question, and a number is what the grammar offers
    next. Asked first whether an excerpt states the answer, it says no when none does."""
    numbers = list(range(1, excerpts + 1))
    stated: dict[str, Any] = {
        "type": "object",
        "properties": {
            "stated": {"type": "string", "enum": ["yes"]},
            "excerpts": {
                "type": "array",
                "items": {"type": "integer", "enum": numbers},
                "minItems": 1,
                "maxItems": min(MAX_CITED, excerpts),
            },
            "answer": {"type": "string", "minLength": 1},
        },
        "required": ["stated", "excerpts", "answer"],
        "additionalProperties": False,
    }
    if quote:
        # The quote between the excerpts and the answer: the model writes the answer from the
        # words it has just copied.
        properties: dict[str, Any] = stated["properties"]
        answer = properties.pop("answer")
        properties["quote"] = {"type": "string", "minLength": 1, "maxLength": QUOTE_CHARS}
        properties["answer"] = answer
        stated["required"] = ["stated", "excerpts", "quote", "answer"]
    refused = {
        "type": "object",
        "properties": {
            "stated": {"type": "string", "enum": ["no"]},
            "excerpts": {"type": "array", "maxItems": 0},
            "answer": {"type": "string", "enum": [NOT_IN_EXCERPTS]},
        },
        "required": ["stated", "excerpts", "answer"],
        "additionalProperties": False,
    }
    if stated_only:
        return stated
    return {"anyOf": [stated, refused]}


# The verdict's value in the reply: where it begins, and the whole of it.
_STATED_OPEN = re.compile(r'"stated"\s*:\s*"')
_STATED = re.compile(r'"stated"\s*:\s*"(yes|no)"')


def verdict_starts(raw: str, before: int) -> bool:
    """The verdict's first character is in ``raw[before:]``: the piece just added."""
    match = _STATED_OPEN.search(raw)
    return match is not None and before <= match.end() < len(raw)


def verdict(raw: str) -> str | None:
    """ "yes" or "no" once the reply has written its verdict whole."""
    match = _STATED.search(raw)
    return match.group(1) if match else None


def yes_probability(alternatives: dict[str, float]) -> float | None:
    """P(yes) / (P(yes) + P(no)) among the likeliest tokens at the verdict's position; None
    when neither is among them. Tokens are compared without quotes, spaces and case, and a
    token that only begins the word ("y", "ye") counts for it."""
    yes = no = 0.0
    for token, logprob in alternatives.items():
        word = token.strip().strip('"').strip().lower()
        if word and "yes".startswith(word):
            yes += math.exp(logprob)
        elif word and "no".startswith(word):
            no += math.exp(logprob)
    return yes / (yes + no) if yes + no > 0 else None


@dataclass(frozen=True)
class StructuredAnswer:
    excerpts: list[int]  # as the model named them, before any check against what was shown
    answer: str
    complete: bool  # False when the reply was cut off (token or time limit) mid-object
    quote: str | None = None  # the excerpt's words it copied, when asked to (ask.quote)


_ANSWER_KEY = re.compile(r'"answer"\s*:\s*"')
_EXCERPTS = re.compile(r'"excerpts"\s*:\s*\[([^\]]*)')
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


class AnswerStream:
    """Feeds on the reply's pieces; returns the answer text each piece adds."""

    def __init__(self) -> None:
        self.raw = ""
        # A server that ignores the schema replies in prose: passed through as it is.
        self.prose: bool | None = None
        self._start: int | None = None  # index in raw where the answer string's text begins
        self._pos = 0  # next raw index to decode
        self._closed = False
        self.text = ""

    def feed(self, piece: str) -> str:
        self.raw += piece
        if self.prose is None and self.raw.strip():
            self.prose = not self.raw.lstrip().startswith("{")
            if self.prose:
                self.text = self.raw
                return self.raw
        if self.prose:
            self.text += piece
            return piece
        if self._closed:
            return ""
        if self._start is None:
            match = _ANSWER_KEY.search(self.raw)
            if match is None:
                return ""
            self._start = self._pos = match.end()
        out: list[str] = []
        raw, i = self.raw, self._pos
        while i < len(raw):
            char = raw[i]
            if char == '"':
                self._closed = True
                i += 1
                break
            if char != "\\":
                out.append(char)
                i += 1
                continue
            if i + 1 >= len(raw):
                break  # the escape's second half has not arrived yet
            kind = raw[i + 1]
            if kind == "u":
                if i + 6 > len(raw):
                    break
                code = int(raw[i + 2 : i + 6], 16)
                if 0xD800 <= code < 0xDC00:  # a surrogate pair needs its second half
                    if i + 12 > len(raw):
                        break
                    low = int(raw[i + 8 : i + 12], 16)
                    out.append(chr(0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)))
                    i += 12
                    continue
                out.append(chr(code))
                i += 6
                continue
            out.append(_ESCAPES.get(kind, kind))
            i += 2
        self._pos = i
        added = "".join(out)
        self.text += added
        return added

    def result(self) -> StructuredAnswer:
        """What the reply says, whole or as far as it got."""
        if self.prose:
            return StructuredAnswer([], self.raw, True)
        try:
            value = json.loads(self.raw)
        except ValueError:
            value = None
        if isinstance(value, dict) and isinstance(value.get("answer"), str):
            numbers = value.get("excerpts")
            listed = numbers if isinstance(numbers, list) else []
            excerpts = [n for n in listed if isinstance(n, int)]
            quote = value.get("quote")
            return StructuredAnswer(
                excerpts, value["answer"], True, quote if isinstance(quote, str) else None
            )
        match = _EXCERPTS.search(self.raw)
        excerpts = [int(n) for n in re.findall(r"\d+", match.group(1))] if match else []
        return StructuredAnswer(excerpts, self.text, False)
