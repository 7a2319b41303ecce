"""One document's text, by id or URI, a bounded range at a time: what ``garage`` reads when a
caller asks for a whole document rather than a search hit (rag_get_document, rag_agent).

A read of the corpus like search, so it lives beside search rather than in a front door: the
MCP tool, rag_agent (``garage ask --agent`` too) and any page that shows a document call this
one function, and its bounds (``MAX_LENGTH``) hold whichever door asked.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import psycopg
from psycopg.rows import dict_row

# Large enough for a long note in one call, small enough for a client's context window.
DEFAULT_LENGTH = 20_000
MAX_LENGTH = 100_000


class DocumentNotFound(LookupError):
    """No document has that id or URI."""


class DocumentRefused(PermissionError):
    """The document exists but may not be shown to this caller (a communication)."""


@dataclass(frozen=True)
class DocumentText:
    document_id: int
    uri: str
    title: str | None
    source: str
    corpus_class: str
    author: str | None
    attribution: str  # authored | received | unknown
    modified_at: datetime | None
    indexed_at: datetime
    chunks: int
    total_chars: int
    start: int  # the range returned, in characters of the extracted text
    end: int
    truncated: bool  # more text follows `end`: ask again with start=end
    content: str
    metadata: dict[str, Any] = field(default_factory=dict)


_SELECT = """
SELECT d.id AS document_id, d.uri, d.title, s.name AS source, d.corpus_class,
       a.name AS author, d.attribution, to_timestamp(d.mtime_ns / 1e9) AS modified_at,
       d.indexed_at, d.metadata, char_length(d.content) AS total_chars,
       substr(d.content, %(start)s + 1, %(length)s) AS content,
       (SELECT count(*) FROM chunks c WHERE c.document_id = d.id) AS chunks
FROM documents d
JOIN sources s ON s.id = d.source_id
LEFT JOIN authors a ON a.id = d.author_id
"""


def get_document(
    conn: psycopg.Connection[Any],
    *,
    document_id: int | None = None,
    uri: str | None = None,
    source: str | None = None,
    start: int = 0,
    length: int = DEFAULT_LENGTH,
    allow_communications: bool = True,
) -> DocumentText:
    """The text of one document from character ``start``, at most ``length`` characters.

    A URI is unique within a source; when two sources hold the same URI, ``source`` picks one.
    """
    if (document_id is None) == (uri is None):
        raise ValueError("give either document_id or uri (one of them, not both)")
    if start < 0:
        raise ValueError(f"start: must be 0 or more, not {start}")
    if not 1 <= length <= MAX_LENGTH:
        raise ValueError(f"length: must be between 1 and {MAX_LENGTH}, not {length}")
    params: dict[str, Any] = {"start": start, "length": length}
    if document_id is not None:
        where = "WHERE d.id = %(id)s"
        params["id"] = document_id
    else:
        where = "WHERE d.uri = %(uri)s"
        params["uri"] = uri
        if source is not None:
            where += " AND s.name = %(source)s"
            params["source"] = source
    with conn.cursor(row_factory=dict_row) as cur:
        rows = cur.execute(_SELECT + where + " ORDER BY s.name LIMIT 10", params).fetchall()
    if not rows:
        what = f"id {document_id}" if document_id is not None else f"uri {uri!r}"
        raise DocumentNotFound(f"no document with {what}" + (f" in {source!r}" if source else ""))
    if len(rows) > 1:
        names = ", ".join(row["source"] for row in rows)
        raise ValueError(f"uri {uri!r} is in several sources ({names}): give source as well")
    row = rows[0]
    if not allow_communications and row["corpus_class"] == "communication":
        raise DocumentRefused(
            f"document {row['document_id']} is a communication (mail or chat), and the model "
            "host is not on this machine: communications are not shown to it"
        )
    total = row["total_chars"]
    if start > total:
        raise ValueError(f"start: {start} is past the end of the document ({total} characters)")
    end = start + len(row["content"])
    return DocumentText(
        document_id=row["document_id"],
        uri=row["uri"],
        title=row["title"],
        source=row["source"],
        corpus_class=row["corpus_class"],
        author=row["author"],
        attribution=row["attribution"],
        modified_at=row["modified_at"],
        indexed_at=row["indexed_at"],
        chunks=row["chunks"],
        total_chars=total,
        start=start,
        end=end,
        truncated=end < total,
        content=row["content"],
        metadata=dict(row["metadata"] or {}),
    )


@dataclass(frozen=True)
class ChunkText:
    chunk_id: int
    ord: int  # its place in the document, from 0
    start_offset: int  # where it lies in the document's extracted text
    end_offset: int
    heading: str | None
    text: str  # exactly what search matched and a model is shown


def document_chunks(conn: psycopg.Connection[Any], document_id: int) -> list[ChunkText]:
    """The document's content chunks in order, as search finds them: the pieces a hit's
    ``chunk_id`` and offsets point into. A distilled fact's chunk is not one of them."""
    with conn.cursor(row_factory=dict_row) as cur:
        rows = cur.execute(
            "SELECT c.id AS chunk_id, c.ord, c.start_offset, c.end_offset, c.heading, c.text"
            " FROM documents d LEFT JOIN chunks c ON c.document_id = d.id AND c.fact_id IS NULL"
            " WHERE d.id = %s ORDER BY c.ord",
            (document_id,),
        ).fetchall()
    if not rows:
        raise DocumentNotFound(f"no document with id {document_id}")
    return [ChunkText(**row) for row in rows if row["chunk_id"] is not None]
