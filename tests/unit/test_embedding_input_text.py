"""The embedding input of a chunk under each signature."""

from __future__ import annotations

import hashlib

import pytest

from garage.embed.inputs import SHORT_CHUNK_CHARS, embedding_input, input_sha256

LONG = "word " * 60


def test_chunk_input_is_the_text_alone() -> None:
    assert embedding_input("chunk", "x", title="T", heading="H", next_text=LONG) == "x"


def test_context_input_puts_title_and_heading_above_the_text() -> None:
    assert embedding_input("context:v1", LONG, title="Notes", heading="Setup") == (
        f"Notes\nSetup\n\n{LONG}"
    )
    # A heading that repeats the title is said once; no context at all leaves the text alone.
    assert embedding_input("context:v1", LONG, title="Notes", heading="Notes") == f"Notes\n\n{LONG}"
    assert embedding_input("context:v1", LONG) == LONG
    assert embedding_input("context:v1", LONG, title="  A\n title ") == f"A title\n\n{LONG}"


def test_a_short_chunk_is_embedded_with_the_next() -> None:
    title_line = "# Secure boot"
    assert len(title_line) < SHORT_CHUNK_CHARS
    got = embedding_input("context:v1", title_line, title="Secure boot", next_text=LONG)
    assert got == f"Secure boot\n\n{title_line}\n\n{LONG}"
    # The last chunk of a document has no next one; a long chunk never borrows.
    assert embedding_input("context:v1", title_line, next_text=None) == title_line
    assert embedding_input("context:v1", LONG, next_text="more") == LONG


def test_unknown_signature_and_the_hash() -> None:
    with pytest.raises(ValueError, match="unknown embedding input 'context:v9'"):
        embedding_input("context:v9", "x")
    assert input_sha256("é") == hashlib.sha256("é".encode()).hexdigest()
