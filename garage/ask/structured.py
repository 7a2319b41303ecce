"""rag_ask's answer as a constrained JSON object: the evidence first, then the answer.

Asked in prose to end sentences with [n], a 1.5B model cites about half the time. Constrained
by a JSON schema (llama-server and Ollama turn it into a grammar, LM Studio takes it as
``json_schema``), the model must first name the excerpt that answers the question and copy the
sentence of it that does, then write the answer — or name excerpt 0 and write the one refusal
sentence. The quote is evidence Garage can check (``garage.ask.quotes``): one found nowhere in
its excerpt declines the answer before any of it is written. Asked instead for a yes/no verdict
first, the model made "no" its safe reply and refused half of what it could answer. Choosing
the excerpt before writing is also what makes the citation point at the excerpt the answer
comes from, not at whichever number comes to mind afterwards.

The object streams token by token; :class:`AnswerStream` pulls the answer's text out of the
JSON as it arrives, so a client still sees the answer being written.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from garage.ask.prompts import NOT_IN_EXCERPTS

# A quote is a sentence or two; the grammar bounds it so a rambling model still gets to answer.
MAX_QUOTE_CHARS = 400


def answer_schema(excerpts: int) -> dict[str, Any]:
    """The reply's shape when ``excerpts`` numbered excerpts were shown: the excerpt that
    answers (1..n), the sentence of it that does, word for word, and the answer; or excerpt
    0, no quote and the refusal."""
    numbers = list(range(1, excerpts + 1))
    answered = {
        "type": "object",
        "properties": {
            "excerpt": {"type": "integer", "enum": numbers},
            "quote": {"type": "string", "minLength": 1, "maxLength": MAX_QUOTE_CHARS},
            "answer": {"type": "string", "minLength": 1},
        },
        "required": ["excerpt", "quote", "answer"],
        "additionalProperties": False,
    }
    refused = {
        "type": "object",
        "properties": {
            "excerpt": {"type": "integer", "enum": [0]},
            "quote": {"type": "string", "enum": [""]},
            "answer": {"type": "string", "enum": [NOT_IN_EXCERPTS]},
        },
        "required": ["excerpt", "quote", "answer"],
        "additionalProperties": False,
    }
    return {"anyOf": [answered, refused]}


@dataclass(frozen=True)
class StructuredAnswer:
    excerpts: list[int]  # as the model named them, before any check against what was shown
    answer: str
    complete: bool  # False when the reply was cut off (token or time limit) mid-object
    quote: str = ""  # the words it copied from its excerpt, as evidence


_ANSWER_KEY = re.compile(r'"answer"\s*:\s*"')
_EXCERPT = re.compile(r'"excerpt"\s*:\s*(\d+)')
_QUOTE = re.compile(r'"quote"\s*:\s*"((?:[^"\\]|\\.)*)"')
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

    def evidence(self) -> tuple[int, str] | None:
        """The excerpt named and the quote copied from it, once the quote is whole; None
        before that (and for prose)."""
        if self.prose:
            return None
        number, quote = _EXCERPT.search(self.raw), _QUOTE.search(self.raw)
        if number is None or quote is None:
            return None
        try:
            text = json.loads(f'"{quote.group(1)}"')
        except ValueError:
            return None
        return int(number.group(1)), str(text)

    def result(self) -> StructuredAnswer:
        """What the reply says, whole or as far as it got."""
        if self.prose:
            return StructuredAnswer([], self.raw, True)
        try:
            value = json.loads(self.raw)
        except ValueError:
            value = None
        if isinstance(value, dict) and isinstance(value.get("answer"), str):
            number = value.get("excerpt")
            excerpts = [number] if isinstance(number, int) and number > 0 else []
            quote = value.get("quote")
            return StructuredAnswer(
                excerpts, value["answer"], True, quote if isinstance(quote, str) else ""
            )
        evidence = self.evidence()
        if evidence is None:
            match = _EXCERPT.search(self.raw)
            excerpts = [int(match.group(1))] if match and int(match.group(1)) > 0 else []
            return StructuredAnswer(excerpts, self.text, False)
        number, quote = evidence
        return StructuredAnswer([number] if number > 0 else [], self.text, False, quote)
