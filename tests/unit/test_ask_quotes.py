"""The quote check that decides answerability: the model's words found in its excerpt, give or
take what copying by a small model changes; words found nowhere decline the answer."""

from __future__ import annotations

import pytest

from garage.ask.quotes import quoted_in

EXCERPT = (
    "To make the file executable, run `chmod +x script.sh`; the shell then runs it directly.\n"
    "Permissions are shown by ls -l as a string such as “-rwxr-xr-x”."
)


@pytest.mark.parametrize(
    "quote",
    [
        "To make the file executable, run `chmod +x script.sh`",
        "to make the file   executable, run 'chmod +x script.sh'",  # case, spaces, quotes
        'Permissions are shown by ls -l as a string such as "-rwxr-xr-x".',
        "To make the file executable, run chmod +x script.sh; the shell runs it directly",
        "To make the file executable… run `chmod +x script.sh`",
    ],
)
def test_a_quote_copied_with_small_slips_is_found(quote: str) -> None:
    assert quoted_in(quote, EXCERPT)


@pytest.mark.parametrize(
    "quote",
    [
        "Use nginx -s reload to apply the configuration.",  # made up
        "To make the file executable, use the properties dialog of the file manager.",
        "chmod",  # too short to say anything
        "",
        # Words of the excerpt, but taken from all over it: not a passage.
        "file shell permissions string executable directly",
    ],
)
def test_words_that_are_not_a_passage_of_the_excerpt_are_not(quote: str) -> None:
    assert not quoted_in(quote, EXCERPT)
