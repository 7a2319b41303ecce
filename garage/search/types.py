"""What a search asks and what it returns: the contract shared by the CLI, the MCP tools and
``rag_ask``/``rag_agent``. Plain dataclasses so every front door maps them field for field."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

Mode = Literal["hybrid", "vector", "keyword"]
CorpusClass = Literal["document", "code", "communication"]
Direction = Literal["sent", "received"]

MAX_LIMIT = 100  # what any front door may ask for; the engines fetch their own 200 candidates


@dataclass(frozen=True)
class SearchQuery:
    text: str
    limit: int = 10
    mode: Mode = "hybrid"
    sources: tuple[str, ...] = ()
    corpus_classes: tuple[CorpusClass, ...] = ()
    authors: tuple[str, ...] = ()
    date_from: datetime | None = None
    date_to: datetime | None = None
    # Message chunks only: who sent it relative to the owner, and the sender's name/address.
    direction: Direction | None = None
    sender: str | None = None
    # An embedding model name from the registry; None means the registry's default text model.
    model: str | None = None


@dataclass(frozen=True)
class SearchHit:
    chunk_id: int
    document_id: int
    uri: str
    title: str | None
    source: str
    corpus_class: str
    author: str | None
    start_offset: int
    end_offset: int
    excerpt: str
    score: float  # the fused score (RRF or convex), or the single engine's score in its own mode
    vector_rank: int | None  # 1-based rank in that engine's candidates, None if absent
    keyword_rank: int | None
    metadata: dict[str, Any] = field(default_factory=dict)
    # Set when the hit is a potential fact: start/end_offset are then its grounding span in
    # the document, and the excerpt is the fact.
    fact_id: int | None = None
    fact_prompt: str | None = None
    fact_class: str | None = None


@dataclass(frozen=True)
class SearchResponse:
    query: str
    mode: Mode  # the mode actually run (hybrid degrades to keyword with no model reachable)
    hits: list[SearchHit]
    took_ms: float
    # Why the requested mode was not run as asked, e.g. "no embedding model reachable: …".
    degraded: str | None = None
    # The embedding model whose vectors the vector leg read; None when no vector leg ran.
    vector_model: str | None = None
    # When the vector leg ran: the chunks of the searched sources it could not see, having no
    # vector yet under its model (the keyword leg saw them). None when no vector leg ran.
    pending_chunks: int | None = None
    # The same, said: "partial: N chunks not yet embedded under <model>"; None when none wait.
    partial: str | None = None
