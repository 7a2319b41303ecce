"""An answer's support: the share of its own words (beyond the question's) its excerpts hold."""

from __future__ import annotations

import pytest

from garage.ask.support import content_words, support

EXCERPTS = [
    "git-stash - Stash the changes in a dirty working directory away. Use git stash when you "
    "want to record the current state of the working directory and the index.",
    "The switch command is experimental. The behavior may change.",
]


def test_an_answer_from_the_excerpts_is_supported() -> None:
    question = "How can I put my half-done edits aside and bring them back later?"
    answer = "Use `git stash` to record the state of the working directory [1]."
    assert support(question, answer, EXCERPTS) == pytest.approx(1.0)


def test_a_number_from_memory_is_not_supported() -> None:
    question = "In which git version did the switch command first appear?"
    answer = "The switch command first appeared in git version 1.7.0. [2]"
    assert support(question, answer, EXCERPTS) == 0.0


def test_an_answer_that_only_restates_the_question_has_no_support() -> None:
    question = "Is the sporty Withings watch waterproof enough to swim with?"
    answer = "Yes, the sporty Withings watch is waterproof enough to swim with. [1][2]"
    assert support(question, answer, EXCERPTS) == 0.0


def test_words_are_compared_on_stems_and_numbers_whole() -> None:
    assert content_words("Recording directories") == content_words("record the directory")
    assert "m16" in content_words("an M16 gland") and "1.7.0" in content_words("in 1.7.0")
    assert not content_words("the and of it")
