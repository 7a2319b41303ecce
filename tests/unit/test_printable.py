"""Strings PostgreSQL can store, from undecodable names and headers."""

from __future__ import annotations

import os

from garage.printable import printable, printable_tree


def test_surrogates_become_replacement_characters_one_for_one() -> None:
    name = os.fsdecode(b"caf\xe9 notes.md")  # what Python gives for a Latin-1 file name
    assert name == "caf\udce9 notes.md"
    assert printable(name) == "caf\ufffd notes.md" and len(printable(name)) == len(name)
    assert printable("caf\udce9").encode("utf-8") == "caf\ufffd".encode()
    assert printable("plain text, ü and 😀") == "plain text, ü and 😀"


def test_every_string_in_a_json_value() -> None:
    value = {"path": "/x/\udcff.md", "to": ["a\udc80@b.c", 3, None], "k\udcfe": {"n": 1.5}}
    assert printable_tree(value) == {
        "path": "/x/\ufffd.md", "to": ["a\ufffd@b.c", 3, None], "k\ufffd": {"n": 1.5},
    }  # fmt: skip
