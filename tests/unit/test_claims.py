"""The default prompt's spans that state nothing are told from claims. The cases are spans a
1.5B model quoted from real mail, Python documentation pages and Word files."""

from __future__ import annotations

import pytest

from garage.facts.claims import is_claim


@pytest.mark.parametrize(
    "text",
    [
        "One",
        "The Crazy",
        "A subject",
        "Outer body",
        "Subject: bar",
        "From: aperson@dom.ain",
        "To: Dingus Lovers <cravindogs@cravindogs.com>",
        "Content-Type: text/plain; charset=us-ascii",
        ".. exception:: GetPassWarning",
        ".. function:: getuser()",
        ".. _reStructuredText: https://docutils.sourceforge.io/rst.html",
        "   ",
    ],
)
def test_spans_that_state_nothing(text: str) -> None:
    assert not is_claim(text)


@pytest.mark.parametrize(
    "text",
    [
        'Return the "login name" of the user.',
        "A :exc:`UserWarning` subclass issued when password input may be echoed.",
        "* :mod:`random` shouldn't be used for security purposes, use :mod:`secrets`\n  instead",
        "Send Ppp mailing list submissions to\n\tppp@zzz.org",
        "This is a 7bit encoded message.",
        "Costs rose 12%",
        "Die Sitzung beginnt morgen.",
        "Maria Santos will lead the team of twelve engineers.",
        # A header name inside a sentence is not a header line.
        "Subject: the meeting moved to Friday, said Ana, and nobody objected.\nWe agreed.",
    ],
)
def test_claims_are_kept(text: str) -> None:
    assert is_claim(text)
