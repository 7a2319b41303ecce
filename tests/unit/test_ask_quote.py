"""The quote check of ask.quote: the words a reply copied must be in an excerpt it named."""

from garage.ask.quote import quote_found, quoted_share
from garage.ask.structured import AnswerStream, answer_schema

EXCERPT = (
    "git-stash - Stash the changes in a dirty working directory away. Use git stash when you "
    "want to record the current state of the working directory and the index, but want to go "
    "back to a clean working directory."
)


def test_a_quote_copied_loosely_is_found() -> None:
    # a dropped first word, another capital, a full stop of its own
    quote = "use Git stash when you want to record the current state of the working directory."
    assert quote_found(quote, [EXCERPT])


def test_a_quote_from_nowhere_is_not_found() -> None:
    quote = "Use git worktree to keep a second checkout of the repository."
    assert not quote_found(quote, [EXCERPT])
    assert quoted_share(quote, EXCERPT) == 0.0


def test_a_quote_stitched_from_two_places_is_not_found() -> None:
    # each half is in the excerpt, but not as one run of words
    quote = "Stash the changes in a dirty working directory and go back to a clean index"
    assert quoted_share(quote, EXCERPT) < 0.8
    assert not quote_found(quote, [EXCERPT])


def test_an_empty_or_one_word_quote_proves_nothing() -> None:
    assert not quote_found("", [EXCERPT])
    assert not quote_found("the", ["nothing here"])
    assert not quote_found("git stash", [])


def test_the_quote_comes_between_the_excerpts_and_the_answer() -> None:
    stated = answer_schema(3, quote=True)["anyOf"][0]
    assert list(stated["properties"]) == ["stated", "excerpts", "quote", "answer"]
    assert stated["required"] == ["stated", "excerpts", "quote", "answer"]
    refused = answer_schema(3, quote=True)["anyOf"][1]
    assert "quote" not in refused["properties"]
    assert "quote" not in answer_schema(3)["anyOf"][0]["properties"]


def test_the_stream_reads_the_quote() -> None:
    stream = AnswerStream()
    raw = '{"stated": "yes", "excerpts": [2], "quote": "Use git stash", "answer": "Run it [2]."}'
    text = "".join(stream.feed(raw[i : i + 7]) for i in range(0, len(raw), 7))
    assert text == "Run it [2]."
    assert stream.result().quote == "Use git stash"
