"""Shorter, sharper excerpts for rag_ask: the sentences of a chunk around the part that best
matches the question.

A chunk is ~1–2 KB, and six of them are ~2,000 prompt tokens, which a 1.5B model on two cores
reads for most of the wait before its first word. Most of a chunk is beside the question, and
the sentence that answers may lie past the cut of a plain "first 1,200 characters". So each
chunk is cut into sentences (and lines: man pages, lists and headers are line-shaped), the
question and the sentences are embedded together with the index's own text model, and the
excerpt is the best-matching sentence with its neighbours, after then before, up to
``limit`` characters. Embedding matches meaning, so a question in other words than the page's
still finds its sentence; when no embedding model answers, shared words decide, and failing
those the chunk's opening is kept.

Privacy: the sentences go to the embedding host through the egress guard with the chunk's
corpus class, as the chunk itself did when it was indexed.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

log = logging.getLogger(__name__)

# A piece shorter than this ("Options:", "-v") is read with the next one, not scored alone.
MIN_PIECE_CHARS = 40
# Sentence ends, and line ends: a line of a manual or a list is a unit of its own.
_BREAK = re.compile(r"(?<=[.!?])\s+(?=\S)|\n+")
_WORD = re.compile(r"[^\W_]{3,}")

# Embeds texts, returns one vector each; raises when the model cannot be reached.
Embed = Callable[[list[str]], list[list[float]]]


@dataclass(frozen=True)
class Piece:
    start: int
    end: int


@dataclass(frozen=True)
class Focused:
    text: str
    start: int  # the excerpt's place in the chunk's text
    end: int


def pieces(text: str) -> list[Piece]:
    """The sentences and lines of ``text``, each short one joined to the next."""
    spans: list[Piece] = []
    position = 0
    for match in _BREAK.finditer(text):
        if match.start() > position:
            spans.append(Piece(position, match.start()))
        position = match.end()
    if position < len(text):
        spans.append(Piece(position, len(text)))
    merged: list[Piece] = []
    pending: Piece | None = None
    for span in spans:
        if pending is not None:
            span = Piece(pending.start, span.end)
            pending = None
        if span.end - span.start < MIN_PIECE_CHARS:
            pending = span
            continue
        merged.append(span)
    if pending is not None:
        if merged:
            merged[-1] = Piece(merged[-1].start, pending.end)
        else:
            merged.append(pending)
    return [p for p in merged if text[p.start : p.end].strip()]


def window(text: str, spans: Sequence[Piece], best: int, limit: int) -> Focused:
    """Piece ``best`` with its neighbours, the next before the previous, while they fit
    ``limit``; a lone piece longer than ``limit`` is cut at a word boundary."""
    first = last = best
    after = True  # neighbours join in turn: after, before, after, …
    while True:
        order = (last + 1, first - 1) if after else (first - 1, last + 1)
        for candidate in order:
            if not 0 <= candidate < len(spans):
                continue
            if (
                max(spans[last].end, spans[candidate].end)
                - min(spans[first].start, spans[candidate].start)
                <= limit
            ):
                first, last = min(first, candidate), max(last, candidate)
                after = not after
                break
        else:
            break
    start, end = spans[first].start, spans[last].end
    if end - start > limit:
        cut = text[start : start + limit]
        space = cut.rfind(" ", limit * 3 // 4)
        end = start + (space if space > 0 else limit)
    body = text[start:end].strip()
    lead = "… " if start > 0 and text[:start].strip() else ""
    tail = " …" if text[end:].strip() else ""
    return Focused(f"{lead}{body}{tail}", start, end)


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=False))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


def _word_scores(question: str, texts: Sequence[str]) -> list[float]:
    wanted = {w.casefold() for w in _WORD.findall(question)}
    return [len(wanted & {w.casefold() for w in _WORD.findall(t)}) for t in texts]


def focus_all(
    question: str, chunks: Sequence[str], limit: int, embed: Embed | None
) -> list[Focused]:
    """Each chunk's excerpt of at most ``limit`` characters around its best-matching piece;
    a chunk that fits is kept whole. One embedding request for all of them."""
    split = [pieces(text) if len(text) > limit else [] for text in chunks]
    texts = [
        text[p.start : p.end] for text, spans in zip(chunks, split, strict=True) for p in spans
    ]
    scores: list[float] | None = None
    if texts and embed is not None:
        try:
            vectors = embed([question, *texts])
            scores = [_cosine(vectors[0], v) for v in vectors[1:]]
        except Exception as error:  # noqa: BLE001 - any failure falls back to shared words
            log.warning("excerpts focused by shared words (embedding failed: %s)", error)
    if scores is None:
        scores = _word_scores(question, texts)
    out: list[Focused] = []
    at = 0
    for text, spans in zip(chunks, split, strict=True):
        if not spans:
            out.append(Focused(text.strip(), 0, len(text)))
            continue
        mine = scores[at : at + len(spans)]
        at += len(spans)
        best = max(range(len(spans)), key=lambda i: (mine[i], -i))
        out.append(window(text, spans, best, limit))
    return out
