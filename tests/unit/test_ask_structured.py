"""rag_ask's constrained reply: the schema's shape, and the answer pulled out of the JSON as
it streams, whatever the pieces' boundaries."""

from __future__ import annotations

import json
import math

import pytest

from garage.ask.prompts import NOT_IN_EXCERPTS
from garage.ask.structured import (
    AnswerStream,
    answer_schema,
    verdict,
    verdict_starts,
    yes_probability,
)

REPLY = json.dumps({"excerpts": [2, 1], "answer": 'Use "int()" \\ or float().\nSee é and 😀 [2].'})


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
    assert result.complete and result.excerpts == [2, 1] and result.answer == expected


def test_a_reply_cut_off_mid_answer_keeps_what_arrived() -> None:
    stream, out = _feed('{"excerpts": [3], "answer": "The loop ends when', 4)
    result = stream.result()
    assert not result.complete
    assert result.excerpts == [3] and result.answer == out == "The loop ends when"


def test_a_reply_cut_off_before_the_answer_has_no_text() -> None:
    stream, out = _feed('{"excerpts": [1, 2', 3)
    assert out == "" and stream.result().excerpts == [1, 2] and stream.result().answer == ""


def test_a_server_that_ignores_the_schema_is_read_as_prose() -> None:
    stream, out = _feed("  An answer [1].", 2)
    assert out == "  An answer [1]." and stream.result().answer == "  An answer [1]."
    assert stream.result().excerpts == []


def test_the_schema_allows_a_cited_answer_or_the_refusal_only() -> None:
    schema = answer_schema(4)
    stated, refused = schema["anyOf"]
    excerpts = stated["properties"]["excerpts"]
    assert excerpts["items"]["enum"] == [1, 2, 3, 4]
    assert excerpts["minItems"] == 1 and excerpts["maxItems"] == 3
    # The yes/no, then the excerpts, then the answer: the order the grammar makes it write.
    assert list(stated["properties"]) == ["stated", "excerpts", "answer"]
    assert stated["properties"]["stated"]["enum"] == ["yes"]
    assert refused["properties"]["stated"]["enum"] == ["no"]
    assert refused["properties"]["excerpts"]["maxItems"] == 0
    assert refused["properties"]["answer"]["enum"] == [NOT_IN_EXCERPTS]
    assert answer_schema(1)["anyOf"][0]["properties"]["excerpts"]["maxItems"] == 1


def test_the_stated_only_schema_is_the_yes_branch_alone() -> None:
    schema = answer_schema(4, stated_only=True)
    assert schema["properties"]["stated"]["enum"] == ["yes"]
    assert schema["properties"]["excerpts"]["minItems"] == 1
    assert schema["properties"]["excerpts"]["items"]["enum"] == [1, 2, 3, 4]
    assert "anyOf" not in schema


def test_the_verdict_is_found_where_its_value_begins_and_read_once_whole() -> None:
    raw = '{"stated": "'
    assert not verdict_starts(raw, 0) and verdict(raw) is None
    raw += "ye"
    assert verdict_starts(raw, len(raw) - 2) and verdict(raw) is None
    raw += 's", "excerpts": [1'
    assert not verdict_starts(raw, len(raw) - 18)
    assert verdict(raw) == "yes"
    assert verdict('{"stated" : "no", "excerpts": []') == "no"


def test_the_yes_probability_weighs_yes_against_no_among_the_alternatives() -> None:
    # ln 0.6, ln 0.2: yes 0.6 against no 0.2, other tokens left out.
    alternatives = {"yes": math.log(0.6), "no": math.log(0.2), "maybe": math.log(0.1)}
    assert yes_probability(alternatives) == pytest.approx(0.75)
    # Quotes, spaces, case and a token that only begins the word count for it.
    assert yes_probability({' "Y': math.log(0.3), '"No': math.log(0.3)}) == pytest.approx(0.5)
    assert yes_probability({"maybe": -0.1, '"': -2.0}) is None
