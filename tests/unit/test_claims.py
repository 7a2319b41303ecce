"""The default prompt's spans that state nothing are told from claims, and an entity class's
spans that name nothing (a pronoun, a sentence) from names. The cases are spans a 1.5B model
quoted from real mail, Python documentation pages and Word files."""

from __future__ import annotations

import pytest

from garage.facts.claims import is_claim, is_entity_mention


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


@pytest.mark.parametrize(
    ("fact_class", "text"),
    [
        ("person", "He"),
        ("person", "them"),
        ("Person", "She"),
        ("person", "He left."),
        # Organization spans a 1.5B model quoted from held-out mail: whole sentences.
        ("organization", "The office opens on Monday and everyone is invited."),
        ("organization", "We moved the release to the new build farm last week"),
        ("person", "the new head of marketing"),
        ("place", "where we met last year"),
        ("event", "The meeting was moved to Friday."),
        ("event", "They"),
    ],
)
def test_entity_spans_that_name_nothing(fact_class: str, text: str) -> None:
    assert not is_entity_mention(fact_class, text)


@pytest.mark.parametrize(
    ("fact_class", "text"),
    [
        ("person", "Jane Doe"),
        ("person", "Fred L. Drake, Jr."),
        ("person", "Jane\nDoe"),  # a name across a hard-wrapped line
        ("organization", "Acme Corp."),
        ("organization", "the University of California"),
        ("organization", "Python Software Foundation (PSF)"),
        ("organization", "3M"),
        ("place", "Ministère de l'Économie"),
        ("place", "Austin Convention Center"),
        # An event or a project is often a verb phrase or a description.
        ("event", "presented the Q2 roadmap"),
        ("project", "rewrite of the billing system"),
        # Any other class is kept as it is.
        ("relation", "He"),
        ("fact", "It rained."),
    ],
)
def test_entity_spans_that_name_something(fact_class: str, text: str) -> None:
    assert is_entity_mention(fact_class, text)
