"""The question's words that no excerpt contains: which words count, and how they are matched."""

from __future__ import annotations

from garage.ask.coverage import missing_words, question_words, stem


def test_stems_match_plurals_and_verb_forms() -> None:
    assert stem("players") == stem("player")
    assert stem("Libraries") == stem("library")
    assert stem("configuring") == stem("configured")
    assert stem("bus") == "bus"  # too short to lose its ending


def test_question_words_leave_out_the_words_of_asking() -> None:
    words = question_words("How do I configure Nginx as a reverse proxy? Why doesn't it work?")
    assert words == ["configure", "Nginx", "reverse", "proxy"]


def test_question_words_keep_compounds_and_each_word_once() -> None:
    words = question_words("Is two-factor login with C++ and Node.js like two-factor logins?")
    assert words == ["two-factor", "login", "C++", "Node.js"]


def test_only_rare_words_missing_from_every_excerpt_are_listed() -> None:
    excerpts = ["A reverse proxy forwards requests.", "Configuring the server: see above."]
    question = "How do I configure Nginx as a reverse proxy?"
    rare = ["Nginx", "proxy", "configure"]
    assert missing_words(question, excerpts, rare) == ["Nginx"]
    # A common word (not in ``rare``) is never listed, found or not.
    assert missing_words("How do I reset Nginx?", excerpts, ["Nginx"]) == ["Nginx"]
    assert missing_words(question, excerpts, []) == []


def test_a_compound_is_found_by_its_parts() -> None:
    question = "What is the worst-case time of quicksort?"
    excerpts = ["In the worst case the sort is quadratic."]
    assert missing_words(question, excerpts, ["worst-case", "quicksort"]) == ["quicksort"]
