"""Reading rag_ask's [n] citations back against the excerpts shown, and recognising an answer
that says the excerpts do not hold it (no model here: the answers are written by hand)."""

from __future__ import annotations

import pytest

from garage.ask import prompts
from garage.ask.citations import read_citations, says_not_in_excerpts


@pytest.mark.parametrize(
    ("answer", "cited"),
    [
        ("Use try [1]. Then except [2][3].", [1, 2, 3]),
        ("Both say so [3, 1].", [3, 1]),
        ("See [1-3].", [1, 2, 3]),
        ("As [Excerpt 2] explains.", [2]),
        ("Twice [2] and again [2].", [2]),
        ("No citation at all.", []),
    ],
)
def test_citations_in_every_shape_are_read_in_first_cited_order(
    answer: str, cited: list[int]
) -> None:
    read = read_citations(answer, excerpts=4)
    assert read.cited == cited and read.unresolved == [] and read.text == answer


def test_numbers_that_name_no_excerpt_are_dropped_and_reported() -> None:
    read = read_citations("It is raised [2] and caught [7]. Also [0, 3].", excerpts=3)
    assert read.cited == [2, 3] and read.unresolved == [7, 0]
    assert read.text == "It is raised [2] and caught. Also [3]."


def test_code_subscripts_are_not_citations() -> None:
    read = read_citations("Take items[0] or f(x)[1] or 'a'[0] [1].", excerpts=2)
    assert read.cited == [1] and read.unresolved == []


@pytest.mark.parametrize(
    "answer",
    [
        prompts.NOT_IN_EXCERPTS,
        "The answer is not in the provided excerpts.",
        "The excerpts do not mention PostgreSQL's port.",
        "The excerpts don't say.",
        "There is no information about Django in the excerpts.",
    ],
)
def test_not_in_the_excerpts_is_recognised(answer: str) -> None:
    assert says_not_in_excerpts(answer)


@pytest.mark.parametrize(
    "answer", ["Use a try statement [1].", "The excerpts show a loop [2].", "Not in Python 2 [1]."]
)
def test_an_answer_is_not_taken_for_not_in_the_excerpts(answer: str) -> None:
    assert not says_not_in_excerpts(answer)
