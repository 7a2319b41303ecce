"""What a model is given to embed for a chunk: its embedding input.

``chunk`` is the chunk's text alone. ``context:v1`` carries the chunk's context: the
document's title and the chunk's heading, a line each above the text, so a passage deep in a
long document is still about that document (search returns the chunk's stored text and
offsets either way; only the vector changes). A chunk shorter than ``SHORT_CHUNK_CHARS`` — a
title or heading the splitter left on its own above a long paragraph — is given together with
the chunk after it, so it is not a lone vector for a few words.

The input's name is part of the model's embedding signature (``embedding_models.input``):
change it and the model's passage vectors are made again, never mixed. The backfill reuses a
known vector for the same *input* (its hash, ``emb_<slug>.input_sha256``), not merely for the
same chunk text, since one text under two titles is two inputs.
"""

from __future__ import annotations

import hashlib
from typing import Literal

InputKind = Literal["chunk", "context"]

# The signature stored per model; a deliberate change to what an input holds needs a new
# version here, so that existing vectors are re-embedded rather than silently mixed.
SIGNATURES: dict[str, str] = {"chunk": "chunk", "context": "context:v1"}
SHORT_CHUNK_CHARS = 200
# How much of the next chunk a short one borrows: about what MiniLM-sized models read anyway.
NEXT_CHUNK_CHARS = 1000


def embedding_input(
    signature: str,
    text: str,
    *,
    title: str | None = None,
    heading: str | None = None,
    next_text: str | None = None,
) -> str:
    """The text sent to the model for one content chunk under ``signature``."""
    if signature == "chunk":
        return text
    if signature != "context:v1":
        raise ValueError(f"unknown embedding input {signature!r}")
    lines = []
    title = " ".join((title or "").split())
    heading = " ".join((heading or "").split())
    if title:
        lines.append(title)
    if heading and heading != title:
        lines.append(heading)
    body = text
    if len(text.strip()) < SHORT_CHUNK_CHARS and next_text:
        body = text + "\n\n" + next_text[:NEXT_CHUNK_CHARS]
    return "\n".join(lines) + "\n\n" + body if lines else body


def input_sha256(text: str) -> str:
    """The reuse key of an embedding input (the same hash chunks.text_sha256 uses for text)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
