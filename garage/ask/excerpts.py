"""What the model is shown: each excerpt narrowed to the sentences around its best match,
numbered, trimmed (to ~1,200 characters), and as many of them as fit the model's context.

The prompt is fitted in tokens (the server counts them when it can): fewer excerpts are shown
rather than a prompt the server would refuse or cut, and a lone excerpt still too long is
shortened. Each excerpt shown becomes a Citation, so the answer's [n] resolves back to a
document and the offsets of the sentences shown.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import psycopg
from psycopg.rows import tuple_row

from garage.ask import prompts
from garage.ask.coverage import missing_words
from garage.ask.focus import Embed, focus_all
from garage.ask.types import Citation
from garage.config import GarageConfig
from garage.embed.registry import default_model
from garage.inference import InferenceClient, LocalChatModel
from garage.inference.client import Message
from garage.inference.egress import EgressGuard
from garage.search import SearchHit

EXCERPT_CHARS = 1200
MIN_EXCERPT_CHARS = 300
# Room left in the context for the chat template's own tokens around each message.
TEMPLATE_TOKENS = 64


def trim(text: str, limit: int = EXCERPT_CHARS) -> str:
    """``text`` cut to about ``limit`` characters at a word boundary."""
    text = text.strip()
    if len(text) <= limit:
        return text
    cut = text[:limit]
    space = cut.rfind(" ", limit * 3 // 4)
    return (cut[:space] if space > 0 else cut).rstrip() + " …"


def focus_hits(
    conn: psycopg.Connection[Any], config: GarageConfig, question: str, hits: list[SearchHit]
) -> list[SearchHit]:
    """Each chunk hit with its excerpt narrowed to the sentences around its best match
    (garage.ask.focus), and its offsets to theirs where the chunk is a verbatim span of its
    document. A fact hit is a sentence already, and stays as it is."""
    limit = config.ask.excerpt_chars
    chunk_ids = [h.chunk_id for h in hits if h.fact_id is None]
    if not chunk_ids:
        return hits
    # A tuple cursor: callers' connections may carry a dict row factory.
    with conn.cursor(row_factory=tuple_row) as cur:
        rows = cur.execute("SELECT id, text FROM chunks WHERE id = ANY(%s)", (chunk_ids,))
        texts: dict[int, str] = dict(rows.fetchall())
    wanted = [h for h in hits if h.fact_id is None and h.chunk_id in texts]
    classes = {h.corpus_class for h in wanted}
    with _embedder(conn, config, classes) as embed:
        focused = focus_all(question, [texts[h.chunk_id] for h in wanted], limit, embed)
    narrowed: dict[int, SearchHit] = {}
    for hit, part in zip(wanted, focused, strict=True):
        verbatim = hit.end_offset - hit.start_offset == len(texts[hit.chunk_id])
        narrowed[hit.chunk_id] = replace(
            hit,
            excerpt=part.text,
            start_offset=hit.start_offset + part.start if verbatim else hit.start_offset,
            end_offset=hit.start_offset + part.end if verbatim else hit.end_offset,
        )
    return [narrowed.get(h.chunk_id, h) if h.fact_id is None else h for h in hits]


@contextmanager
def _embedder(
    conn: psycopg.Connection[Any], config: GarageConfig, classes: set[str]
) -> Iterator[Embed | None]:
    """The index's default text model as a function, or None when there is none."""
    registered = default_model(conn, "text")
    if registered is None:
        yield None
        return
    client = InferenceClient(
        EgressGuard.from_config(config),
        timeout=config.search.embed_timeout_seconds,
        retries=1,
        backoff=0.2,
    )

    def embed(texts: list[str]) -> list[list[float]]:
        return client.embed(
            registered.provider,  # type: ignore[arg-type]
            registered.host,
            registered.model_id,
            texts,
            corpus_classes=classes,
        ).vectors

    try:
        yield embed
    finally:
        client.close()


def citations_for(hits: Sequence[SearchHit], excerpt_chars: int) -> list[Citation]:
    return [
        Citation(
            number=n,
            document_id=hit.document_id,
            chunk_id=hit.chunk_id,
            uri=hit.uri,
            title=hit.title,
            source=hit.source,
            corpus_class=hit.corpus_class,
            author=hit.author,
            start_offset=hit.start_offset,
            end_offset=hit.end_offset,
            excerpt=trim(hit.excerpt, excerpt_chars),
        )
        for n, hit in enumerate(hits, 1)
    ]


def ask_messages(
    question: str, citations: Sequence[Citation], rare: Sequence[str] = (), quote: bool = False
) -> list[Message]:
    """The prompt: the excerpts, the question, and the question's ``rare`` words (see
    garage.ask.coverage) that no excerpt contains."""
    blocks = []
    for c in citations:
        about = ", ".join(x for x in (c.source, c.corpus_class, c.author) if x)
        # "Excerpt [n]", not a bare "[n]" opening the line: a small model copies a bare one
        # to the front of its answer as a list marker, whatever it then says.
        blocks.append(f"Excerpt [{c.number}], from {c.title or c.uri} ({about}):\n{c.excerpt}")
    missing = missing_words(question, blocks, rare)
    coverage = prompts.ASK_COVERAGE.format(words=", ".join(missing)) if missing else ""
    user = prompts.ASK_USER.format(
        excerpts="\n\n".join(blocks), question=question.strip(), coverage=coverage
    )
    system = prompts.ASK_SYSTEM_QUOTE if quote else prompts.ASK_SYSTEM
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def prompt_tokens(model: LocalChatModel, messages: Sequence[Message], classes: set[str]) -> int:
    """The messages' length in the model's tokens, with room for the chat template."""
    text = "\n".join(m["content"] for m in messages)
    return model.count_tokens(text, corpus_classes=classes) + TEMPLATE_TOKENS


def fit_excerpts(
    model: LocalChatModel,
    question: str,
    hits: Sequence[SearchHit],
    answer_tokens: int,
    rare: Sequence[str] = (),
    quote: bool = False,
) -> list[Citation]:
    """As many of the best excerpts as fit the context with room for the answer: the
    lowest-ranked go first; a lone excerpt still too long is shortened."""
    budget = model.context_tokens() - answer_tokens
    count, excerpt_chars = len(hits), EXCERPT_CHARS
    while True:
        citations = citations_for(hits[:count], excerpt_chars)
        messages = ask_messages(question, citations, rare, quote)
        used = prompt_tokens(model, messages, {c.corpus_class for c in citations})
        if used <= budget:
            return citations
        if count > 1:
            count -= 1
        elif excerpt_chars > MIN_EXCERPT_CHARS:
            excerpt_chars = max(MIN_EXCERPT_CHARS, excerpt_chars * budget // used - 20)
        else:
            return citations  # the question alone is too long: let the server say so
