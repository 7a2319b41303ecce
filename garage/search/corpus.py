"""What the corpus holds: its sources, its authors, and its totals.

Read-only summaries for ``rag_list_sources``, ``rag_list_authors`` and ``rag_stats`` (and the
CLI), as frozen dataclasses so every front door maps them field for field.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import dict_row

from garage.embed.registry import registered_models

MAX_AUTHORS = 1000


@dataclass(frozen=True)
class SourceSummary:
    name: str
    kind: str  # files | mail | messages
    corpus_class: str
    roots: list[str]
    documents: int
    chunks: int
    last_indexed_at: datetime | None  # the newest document's indexing time
    last_run_at: datetime | None  # when the last ingest run finished (None: never finished)


@dataclass(frozen=True)
class AuthorSummary:
    name: str
    email: str | None
    is_self: bool
    documents: int
    authored: int  # of those, attributed as written by this person
    received: int


@dataclass(frozen=True)
class ModelSummary:
    name: str
    dimensions: int
    modality: str
    is_default: bool
    vectors: int


@dataclass(frozen=True)
class CorpusStats:
    sources: int
    documents: int
    chunks: int
    authors: int
    documents_by_class: dict[str, int] = field(default_factory=dict)
    chunks_by_class: dict[str, int] = field(default_factory=dict)
    embedding_models: list[ModelSummary] = field(default_factory=list)
    oldest_document: datetime | None = None  # by file modification time
    newest_document: datetime | None = None
    last_indexed_at: datetime | None = None


def list_sources(conn: psycopg.Connection[Any]) -> list[SourceSummary]:
    with conn.cursor(row_factory=dict_row) as cur:
        rows = cur.execute(
            """
            SELECT s.name, s.kind, s.corpus_class, s.roots,
                   coalesce(dc.documents, 0) AS documents, coalesce(cc.chunks, 0) AS chunks,
                   dc.last_indexed_at, r.last_run_at
            FROM sources s
            LEFT JOIN (SELECT source_id, count(*) AS documents, max(indexed_at) AS last_indexed_at
                       FROM documents GROUP BY source_id) dc ON dc.source_id = s.id
            LEFT JOIN (SELECT d.source_id, count(*) AS chunks FROM chunks c
                       JOIN documents d ON d.id = c.document_id GROUP BY d.source_id) cc
                   ON cc.source_id = s.id
            LEFT JOIN (SELECT source_id, max(finished_at) AS last_run_at FROM ingest_runs
                       GROUP BY source_id) r ON r.source_id = s.id
            ORDER BY s.name
            """
        ).fetchall()
    return [SourceSummary(**{**row, "roots": list(row["roots"])}) for row in rows]


def list_authors(conn: psycopg.Connection[Any], limit: int = 100) -> list[AuthorSummary]:
    """Authors with the most documents first (at most ``limit``, capped at 1,000)."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError(f"limit: must be a positive whole number, not {limit!r}")
    limit = min(limit, MAX_AUTHORS)
    with conn.cursor(row_factory=dict_row) as cur:
        rows = cur.execute(
            """
            SELECT a.name, a.email, a.is_self, count(d.id) AS documents,
                   count(d.id) FILTER (WHERE d.attribution = 'authored') AS authored,
                   count(d.id) FILTER (WHERE d.attribution = 'received') AS received
            FROM authors a LEFT JOIN documents d ON d.author_id = a.id
            GROUP BY a.id
            ORDER BY count(d.id) DESC, a.name, a.email NULLS FIRST
            LIMIT %s
            """,
            (limit,),
        ).fetchall()
    return [AuthorSummary(**row) for row in rows]


def corpus_stats(conn: psycopg.Connection[Any]) -> CorpusStats:
    with conn.cursor(row_factory=dict_row) as cur:
        totals = cur.execute(
            """
            SELECT (SELECT count(*) FROM sources) AS sources,
                   (SELECT count(*) FROM documents) AS documents,
                   (SELECT count(*) FROM chunks) AS chunks,
                   (SELECT count(*) FROM authors) AS authors,
                   (SELECT to_timestamp(min(mtime_ns) / 1e9) FROM documents) AS oldest_document,
                   (SELECT to_timestamp(max(mtime_ns) / 1e9) FROM documents) AS newest_document,
                   (SELECT max(indexed_at) FROM documents) AS last_indexed_at
            """
        ).fetchone()
        assert totals is not None
        by_class = cur.execute(
            """
            SELECT d.corpus_class, count(DISTINCT d.id) AS documents, count(c.id) AS chunks
            FROM documents d LEFT JOIN chunks c ON c.document_id = d.id
            GROUP BY d.corpus_class ORDER BY d.corpus_class
            """
        ).fetchall()
        models = []
        for model in registered_models(conn):
            count = cur.execute(
                sql.SQL("SELECT count(*) AS n FROM {}").format(sql.Identifier(model.table))
            ).fetchone()
            models.append(
                ModelSummary(
                    name=model.name,
                    dimensions=model.dimensions,
                    modality=model.modality,
                    is_default=model.is_default,
                    vectors=int(count["n"]) if count else 0,
                )
            )
    return CorpusStats(
        **totals,
        documents_by_class={r["corpus_class"]: r["documents"] for r in by_class},
        chunks_by_class={r["corpus_class"]: r["chunks"] for r in by_class},
        embedding_models=models,
    )
