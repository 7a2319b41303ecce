"""rag_ask and rag_generate without MCP: the CLI and the MCP server share this code.

``ask`` runs the same retrieval as search, numbers the excerpts (each trimmed to ~1,200
characters) and asks the local chat model to answer from them citing [n]. The result carries
one Citation per excerpt the model was shown, so [n] resolves back to a document.

Privacy: every excerpt's corpus class passes the egress guard for the model's host before it
goes into the prompt, and the request itself carries the classes of what it holds, so a
communication (mail, chats) never reaches a model host that is not loopback. For such a host
the search is restricted to documents and code up front, so the excerpts it may see still
fill the limit.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import psycopg

from garage.ask import prompts
from garage.config import GarageConfig
from garage.inference import ContextExceeded, EgressRefused, LocalChatModel
from garage.inference.client import Message
from garage.search import SearchHit, SearchQuery, search
from garage.search.types import CorpusClass

EXCERPT_CHARS = 1200
DEFAULT_EXCERPTS = 6
MAX_EXCERPTS = 20
ANSWER_TOKENS = 400
MAX_ANSWER_TOKENS = 4096
# What a model host that is not this machine may be shown.
REMOTE_CLASSES: tuple[CorpusClass, ...] = ("document", "code")
ALL_CLASSES: tuple[CorpusClass, ...] = ("document", "code", "communication")


@dataclass(frozen=True)
class Citation:
    number: int  # the [n] the answer cites
    document_id: int
    chunk_id: int
    uri: str
    title: str | None
    source: str
    corpus_class: str
    author: str | None
    start_offset: int  # where the excerpt's chunk lies in the document's text
    end_offset: int
    excerpt: str  # exactly what the model was shown


@dataclass(frozen=True)
class AskResult:
    question: str
    answer: str
    citations: list[Citation]
    model: str
    search_mode: str  # hybrid, or keyword when no embedding model was reachable
    degraded: str | None = None
    # Excerpts the egress guard kept from the model (communications for a host elsewhere).
    withheld: int = 0
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class GenerateResult:
    text: str
    model: str


@contextmanager
def chat_model(config: GarageConfig) -> Iterator[LocalChatModel]:
    """The configured local chat model, its client closed afterwards."""
    model = LocalChatModel.from_config(config)
    try:
        yield model
    finally:
        model.client.close()


def trim(text: str, limit: int = EXCERPT_CHARS) -> str:
    """``text`` cut to about ``limit`` characters at a word boundary."""
    text = text.strip()
    if len(text) <= limit:
        return text
    cut = text[:limit]
    space = cut.rfind(" ", limit * 3 // 4)
    return (cut[:space] if space > 0 else cut).rstrip() + " …"


def allowed_classes(
    model: LocalChatModel, requested: Sequence[str]
) -> tuple[tuple[CorpusClass, ...], list[str]]:
    """The corpus classes a search for this model may return, and a note when narrowed."""
    for value in requested:
        if value not in ALL_CLASSES:
            raise ValueError(f"corpus_classes: {value!r} is not one of {', '.join(ALL_CLASSES)}")
    wanted = tuple(c for c in ALL_CLASSES if c in requested) or ALL_CLASSES
    if model.is_loopback:
        return wanted, []
    kept = tuple(c for c in wanted if c in REMOTE_CLASSES)
    if not kept:
        raise EgressRefused(
            f"the chat model's host {model.host} is not on this machine, and communications "
            "(mail, chats) only go to a model on this machine: nothing to search"
        )
    note = (
        []
        if kept == wanted
        else [f"communications were left out: the model host {model.host} is not on this machine"]
    )
    return kept, note


def ask(
    conn: psycopg.Connection[Any],
    config: GarageConfig,
    question: str,
    *,
    limit: int = DEFAULT_EXCERPTS,
    sources: Sequence[str] = (),
    corpus_classes: Sequence[str] = (),
    model: LocalChatModel,
    answer_tokens: int = ANSWER_TOKENS,
) -> AskResult:
    """Answer ``question`` from the index with the local chat model, citing [n]."""
    if not isinstance(question, str) or not question.strip():
        raise ValueError("question: is empty")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_EXCERPTS:
        raise ValueError(f"limit: must be between 1 and {MAX_EXCERPTS}, not {limit!r}")
    guard = model.client.guard
    # The host itself first: a model host the config does not name is refused outright.
    guard.check(model.host, model_id=model.model)
    classes, notes = allowed_classes(model, corpus_classes)
    response = search(
        conn,
        config,
        SearchQuery(
            text=question,
            limit=limit,
            sources=tuple(sources),
            corpus_classes=classes,
        ),
    )
    hits, withheld = [], 0
    for hit in response.hits:
        try:
            guard.check(model.host, corpus_classes=[hit.corpus_class], model_id=model.model)
        except EgressRefused:
            withheld += 1
            continue
        hits.append(hit)
    if withheld:
        notes.append(f"{withheld} excerpt(s) withheld from the model by the egress guard")
    if not hits:
        return AskResult(
            question,
            prompts.NO_EXCERPTS,
            [],
            model.model,
            response.mode,
            response.degraded,
            withheld,
            notes,
        )
    answer, shown = _answer(model, question, hits, answer_tokens)
    if len(shown) < len(hits):
        notes.append(f"{len(hits) - len(shown)} excerpt(s) left out to fit the model's context")
    return AskResult(
        question, answer, shown, model.model, response.mode, response.degraded, withheld, notes
    )


def _citations(hits: Sequence[SearchHit], excerpt_chars: int) -> list[Citation]:
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


def ask_messages(question: str, citations: Sequence[Citation]) -> list[Message]:
    blocks = []
    for c in citations:
        about = ", ".join(x for x in (c.source, c.corpus_class, c.author) if x)
        blocks.append(f"[{c.number}] {c.title or c.uri} ({about})\n{c.excerpt}")
    user = prompts.ASK_USER.format(excerpts="\n\n".join(blocks), question=question.strip())
    return [{"role": "system", "content": prompts.ASK_SYSTEM}, {"role": "user", "content": user}]


def _answer(
    model: LocalChatModel, question: str, hits: Sequence[SearchHit], answer_tokens: int
) -> tuple[str, list[Citation]]:
    """Ask the model; when the excerpts overflow its context, show fewer and try again."""
    count, excerpt_chars = len(hits), EXCERPT_CHARS
    while True:
        citations = _citations(hits[:count], excerpt_chars)
        try:
            answer = model.complete(
                ask_messages(question, citations),
                corpus_classes={c.corpus_class for c in citations},
                temperature=0.2,
                max_tokens=answer_tokens,
            )
            return answer.strip(), citations
        except ContextExceeded:
            if count > 1:
                count = max(1, count // 2)
            elif excerpt_chars > 300:
                excerpt_chars //= 2
            else:
                raise


def generate(
    model: LocalChatModel,
    prompt: str,
    *,
    system: str | None = None,
    max_tokens: int = ANSWER_TOKENS,
    temperature: float | None = None,
) -> GenerateResult:
    """The local chat model's reply to a raw prompt: no retrieval, nothing from the index."""
    if not isinstance(prompt, str) or not prompt.strip():
        raise ValueError("prompt: is empty")
    messages: list[Message] = []
    if system:
        messages.append({"role": "system", "content": system})
    messages.append({"role": "user", "content": prompt})
    text = model.complete(messages, temperature=temperature, max_tokens=max_tokens)
    return GenerateResult(text.strip(), model.model)
