"""Stage 8, search: hybrid (vectors and BM25, fused per `search.fusion`), vector or keyword.

``search`` is the one entry point the CLI, the MCP tools and ``rag_ask``/``rag_agent`` share.
It embeds the query with the registry's default text model (or ``query.model``) through the
inference client and its egress guard, and when no model is registered or reachable it runs
keyword-only and says why in ``SearchResponse.degraded`` instead of failing.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

import psycopg

from garage.config import GarageConfig
from garage.embed import backlog
from garage.embed.registry import (
    RegisteredModel,
    RegistryError,
    default_model,
    find_model,
    registered_models,
)
from garage.inference import EgressGuard, InferenceClient, InferenceError
from garage.search import filters as search_filters
from garage.search import hybrid
from garage.search.corpus import (
    AuthorSummary,
    CorpusStats,
    ModelSummary,
    SourceSummary,
    corpus_stats,
    list_authors,
    list_sources,
)
from garage.search.filters import SearchError
from garage.search.types import MAX_LIMIT, SearchHit, SearchQuery, SearchResponse

log = logging.getLogger(__name__)

__all__ = [
    "MAX_LIMIT",
    "AuthorSummary",
    "CorpusStats",
    "ModelSummary",
    "SearchError",
    "SearchHit",
    "SearchQuery",
    "SearchResponse",
    "SourceSummary",
    "corpus_stats",
    "list_authors",
    "list_sources",
    "search",
]


@dataclass(frozen=True)
class _Embedded:
    model: RegisteredModel | None
    vector: list[float] | None
    degraded: str | None


def search(
    conn: psycopg.Connection[Any],
    config: GarageConfig,
    query: SearchQuery,
    *,
    client: InferenceClient | None = None,
) -> SearchResponse:
    """Run ``query``; raises ``SearchError`` for a query no engine can answer as asked."""
    started = time.perf_counter()
    search_filters.validate(query)
    filters = search_filters.build(query)
    mode = query.mode
    degraded = None
    model = vector = None
    if mode in ("hybrid", "vector"):
        embedded = _embed_query(conn, config, query, client)
        model, vector, degraded = embedded.model, embedded.vector, embedded.degraded
        if vector is None:
            mode = "keyword"
    the_plan = hybrid.plan(
        mode,
        text=query.text,
        limit=query.limit,
        filters=filters,
        settings=config.search,
        model=model,
        query_vector=vector,
    )
    rows = hybrid.run(conn, the_plan, candidates=config.search.candidates, filtered=filters.active)
    hits = [_hit(row, config.search.excerpt_chars) for row in rows]
    pending = partial = None
    if model is not None and mode in ("hybrid", "vector"):
        # What the vector leg could not see. A kept count, one row per source, not a count of
        # the chunks without a vector, which grows with the index (embed/backlog.py). It
        # covers the query's sources; its other filters narrow what it ranked, not the count.
        pending = backlog.pending(conn, model.name, query.sources)
        if pending:
            partial = f"partial: {pending:,} chunks not yet embedded under {model.name}"
    took_ms = (time.perf_counter() - started) * 1000
    return SearchResponse(
        query.text,
        mode,
        hits,
        took_ms,
        degraded,
        vector_model=model.name if model is not None else None,
        pending_chunks=pending,
        partial=partial,
    )


def _embed_query(
    conn: psycopg.Connection[Any],
    config: GarageConfig,
    query: SearchQuery,
    client: InferenceClient | None,
) -> _Embedded:
    model: RegisteredModel | None
    if query.model is not None:
        # A model asked for by name must exist: that is a mistake to report, not to hide.
        try:
            model = find_model(conn, query.model)
        except RegistryError as error:
            raise SearchError(f"model: {error}") from None
        if model.modality != "text":
            raise SearchError(f"model: {model.name!r} embeds {model.modality}, not text")
    else:
        model = default_model(conn, "text")
        if model is None:
            known = registered_models(conn)
            why = (
                "no text embedding model is registered (run `garage embed`)"
                if not known
                else "no registered embedding model embeds text"
            )
            return _Embedded(None, None, f"keyword-only: {why}")
    own_client = client is None
    if client is None:
        client = InferenceClient(
            EgressGuard.from_config(config),
            timeout=config.search.embed_timeout_seconds,
            retries=1,
            backoff=0.2,
        )
    try:
        result = client.embed(model.provider, model.host, model.model_id, [query.text])  # type: ignore[arg-type]
    except InferenceError as error:
        # EgressRefused is an InferenceError too: a model host the guard no longer allows is
        # as unreachable as a stopped server.
        log.warning("search falls back to keyword only: %s", error)
        return _Embedded(None, None, f"keyword-only: embedding model {model.name!r}: {error}")
    finally:
        if own_client:
            client.close()
    [vector] = result.vectors
    if len(vector) != model.dimensions:
        return _Embedded(
            None,
            None,
            f"keyword-only: embedding model {model.name!r} returned {len(vector)} dimensions, "
            f"its table holds {model.dimensions}",
        )
    return _Embedded(model, vector, None)


def _excerpt(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text[:limit]
    space = cut.rfind(" ", limit * 3 // 4)
    return (cut[:space] if space > 0 else cut).rstrip() + "…"


def _hit(row: dict[str, Any], excerpt_chars: int) -> SearchHit:
    metadata = dict(row["chunk_metadata"] or {})
    if row["heading"]:
        metadata.setdefault("heading", row["heading"])
    if row["chunk_date"] is not None:
        metadata.setdefault("date", row["chunk_date"].isoformat())
    return SearchHit(
        chunk_id=row["chunk_id"],
        document_id=row["document_id"],
        uri=row["uri"],
        title=row["title"],
        source=row["source"],
        corpus_class=row["corpus_class"],
        author=row["author"],
        start_offset=row["start_offset"],
        end_offset=row["end_offset"],
        excerpt=_excerpt(row["text"], excerpt_chars),
        score=float(row["score"]),
        vector_rank=row["vector_rank"],
        keyword_rank=row["keyword_rank"],
        metadata=metadata,
        fact_id=row.get("fact_id"),
        fact_prompt=row.get("fact_prompt"),
        fact_class=row.get("fact_class"),
    )
