"""rag_ask's constrained reply: the schema's shape, and the answer pulled out of the JSON as
it streams, whatever the pieces' boundaries."""

from __future__ import annotations

import json

import pytest

from garage.ask.prompts import NOT_IN_EXCERPTS
from garage.ask.structured import AnswerStream, answer_schema

REPLY = json.dumps(
    {
        "excerpt": 2,
        "quote": 'Call "int()" on it.',
        "answer": 'Use "int()" \\ or float().\nSee é and 😀 [2].',
    }
)


def _feed(reply: str, size: int) -> tuple[AnswerStream, str]:
    stream = AnswerStream()
    out = "".join(stream.feed(reply[i : i + size]) for i in range(0, len(reply), size))
    return stream, out


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 1000])
def test_the_answer_streams_out_of_the_json_whatever_the_piece_size(size: int) -> None:
    reply = REPLY.replace("é", "\\u00e9").replace("😀", "\\ud83d\\ude00")
    stream, out = _feed(reply, size)
    expected = 'Use "int()" \\ or float().\nSee é and 😀 [2].'
    assert out == expected
    result = stream.result()
    assert result.complete and result.excerpts == [2] and result.answer == expected
    assert result.quote == 'Call "int()" on it.'
    assert stream.evidence() == (2, 'Call "int()" on it.')


def test_a_reply_cut_off_mid_answer_keeps_what_arrived() -> None:
    stream, out = _feed('{"excerpt": 3, "quote": "It stops.", "answer": "The loop ends when', 4)
    result = stream.result()
    assert not result.complete
    assert result.excerpts == [3] and result.answer == out == "The loop ends when"
    assert result.quote == "It stops."


def test_a_reply_cut_off_before_the_answer_has_no_text() -> None:
    stream, out = _feed('{"excerpt": 2, "quote": "Half a sent', 3)
    assert out == "" and stream.result().excerpts == [2] and stream.result().answer == ""
    # The quote is not whole yet: nothing to check.
    assert stream.evidence() is None


def test_the_evidence_is_read_as_soon_as_the_quote_closes() -> None:
    stream = AnswerStream()
    assert stream.feed('{"excerpt": 1, "quote": "A \\"quoted\\" word') == ""
    assert stream.evidence() is None
    stream.feed('", "ans')
    assert stream.evidence() == (1, 'A "quoted" word')


def test_a_server_that_ignores_the_schema_is_read_as_prose() -> None:
    stream, out = _feed("  An answer [1].", 2)
    assert out == "  An answer [1]." and stream.result().answer == "  An answer [1]."
    assert stream.result().excerpts == []


def test_the_schema_allows_a_quoted_answer_or_the_refusal_only() -> None:
    schema = answer_schema(4)
    answered, refused = schema["anyOf"]
    # The excerpt, then the quote from it, then the answer: the order the grammar makes it
    # write, so the evidence is there to check before any of the answer.
    assert list(answered["properties"]) == ["excerpt", "quote", "answer"]
    assert answered["properties"]["excerpt"]["enum"] == [1, 2, 3, 4]
    assert answered["properties"]["quote"]["minLength"] == 1
    assert refused["properties"]["excerpt"]["enum"] == [0]
    assert refused["properties"]["quote"]["enum"] == [""]
    assert refused["properties"]["answer"]["enum"] == [NOT_IN_EXCERPTS]
    assert answer_schema(1)["anyOf"][0]["properties"]["excerpt"]["enum"] == [1]
