"""Stage 6, store: one document and its chunks, written in one transaction.

Replacing a document does not throw its chunks away. Each existing chunk whose ord, text hash,
text and chunker match the new set is kept — its offsets and heading updated in place — so it
keeps its row id, and with it its vectors in every ``emb_*`` table: an edit near the end of a
file re-embeds only what changed. The rest are deleted and only new ones inserted. Fact chunks
are left alone here: they belong to their fact, and a change of content drops the facts (and so
their chunks) in the database itself (migration 006's trigger), whoever writes the document.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from garage.chunk import Chunk


@dataclass(frozen=True)
class DocumentRecord:
    source_id: int
    uri: str
    corpus_class: str
    title: str | None
    content: str
    source_sha256: str
    content_sha256: str
    size_bytes: int
    mtime_ns: int
    extractor: str
    extractor_version: int
    metadata: dict[str, Any]
    author_id: int | None
    attribution: str
    attribution_signal: str | None
    attribution_evidence: dict[str, Any]


@dataclass(frozen=True)
class NewChunk:
    ord: int
    text: str
    start: int
    end: int
    heading: str | None
    chunker: str
    modality: str = "text"
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def text_sha256(self) -> str:
        return sha256_text(self.text)


@dataclass(frozen=True)
class StoreResult:
    document_id: int
    created: bool
    chunks_kept: int
    chunks_new: int
    chunks_deleted: int


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def new_chunks(chunks: Sequence[Chunk], chunker: str) -> list[NewChunk]:
    return [NewChunk(c.ord, c.text, c.start, c.end, c.heading, chunker) for c in chunks]


_UPSERT = """
INSERT INTO documents (source_id, uri, corpus_class, title, content, source_sha256,
    content_sha256, size_bytes, mtime_ns, extractor, extractor_version, metadata, author_id,
    attribution, attribution_signal, attribution_evidence)
VALUES (%(source_id)s, %(uri)s, %(corpus_class)s, %(title)s, %(content)s, %(source_sha256)s,
    %(content_sha256)s, %(size_bytes)s, %(mtime_ns)s, %(extractor)s, %(extractor_version)s,
    %(metadata)s, %(author_id)s, %(attribution)s, %(attribution_signal)s,
    %(attribution_evidence)s)
ON CONFLICT (source_id, uri) DO UPDATE SET
    corpus_class = EXCLUDED.corpus_class, title = EXCLUDED.title, content = EXCLUDED.content,
    source_sha256 = EXCLUDED.source_sha256, content_sha256 = EXCLUDED.content_sha256,
    size_bytes = EXCLUDED.size_bytes, mtime_ns = EXCLUDED.mtime_ns,
    extractor = EXCLUDED.extractor, extractor_version = EXCLUDED.extractor_version,
    metadata = EXCLUDED.metadata, author_id = EXCLUDED.author_id,
    attribution = EXCLUDED.attribution, attribution_signal = EXCLUDED.attribution_signal,
    attribution_evidence = EXCLUDED.attribution_evidence, updated_at = now()
RETURNING id, (xmax = 0) AS created
"""


def store_document(
    conn: psycopg.Connection[Any], document: DocumentRecord, chunks: Sequence[NewChunk]
) -> StoreResult:
    """Upsert the document and reconcile its chunks. The caller owns the transaction."""
    params = {**document.__dict__}
    params["metadata"] = Jsonb(document.metadata)
    params["attribution_evidence"] = Jsonb(document.attribution_evidence)
    row = conn.execute(_UPSERT, params).fetchone()
    assert row is not None
    document_id, created = _pair(row, "id", "created")

    # A document just created has no chunks to match against: skip the round trip.
    kept, stale = ({}, []) if created else _match_existing(conn, document_id, chunks)
    if stale:
        conn.execute("DELETE FROM chunks WHERE id = ANY(%s)", (stale,))
    updates = [(c.start, c.end, c.heading, kept[c.ord]) for c in chunks if c.ord in kept]
    if updates:
        with conn.cursor() as cur:
            cur.executemany(
                "UPDATE chunks SET start_offset = %s, end_offset = %s, heading = %s"
                " WHERE id = %s AND (start_offset, end_offset, heading)"
                " IS DISTINCT FROM (%s, %s, %s)",
                [(s, e, h, i, s, e, h) for s, e, h, i in updates],
            )
    inserts = [c for c in chunks if c.ord not in kept]
    if inserts:
        _copy_chunks(conn, document_id, inserts)
    return StoreResult(document_id, bool(created), len(kept), len(inserts), len(stale))


_COPY_CHUNKS = (
    "COPY chunks (document_id, ord, text, text_sha256, start_offset, end_offset, heading,"
    " chunker, modality, metadata) FROM STDIN"
)


def _copy_chunks(
    conn: psycopg.Connection[Any], document_id: int, chunks: Sequence[NewChunk]
) -> None:
    """Write a document's new chunks in one COPY: one statement, so the BM25 triggers (statement
    level, over the transition table) run once per document rather than once per chunk, and no
    round trip per row."""
    with conn.cursor() as cur, cur.copy(_COPY_CHUNKS) as copy:
        for c in chunks:
            copy.write_row(
                (
                    document_id,
                    c.ord,
                    c.text,
                    c.text_sha256,
                    c.start,
                    c.end,
                    c.heading,
                    c.chunker,
                    c.modality,
                    Jsonb(c.metadata),
                )
            )


def _match_existing(
    conn: psycopg.Connection[Any], document_id: int, chunks: Sequence[NewChunk]
) -> tuple[dict[int, int], list[int]]:
    """Map ord -> id of the chunks that survive; list the ids of those that do not."""
    wanted = {c.ord: c for c in chunks}
    kept: dict[int, int] = {}
    stale: list[int] = []
    rows = conn.execute(
        "SELECT id, ord, text_sha256, text, chunker, fact_id FROM chunks"
        " WHERE document_id = %s AND fact_id IS NULL",
        (document_id,),
    ).fetchall()
    for row in rows:
        chunk_id, ord_, text_sha, text, chunker, fact_id = _pair(
            row, "id", "ord", "text_sha256", "text", "chunker", "fact_id"
        )
        new = wanted.get(ord_)
        if (
            fact_id is None
            and new is not None
            and new.text_sha256 == text_sha
            and new.text == text
            and new.chunker == chunker
            and ord_ not in kept
        ):
            kept[ord_] = chunk_id
        else:
            stale.append(chunk_id)
    return kept, stale


def _pair(row: Any, *names: str) -> tuple[Any, ...]:
    """Read columns from a dict row or a tuple row alike."""
    if isinstance(row, dict):
        return tuple(row[name] for name in names)
    return tuple(row)


def refresh_stat(conn: psycopg.Connection[Any], document_id: int, size: int, mtime_ns: int) -> None:
    """The bytes are unchanged but the stat is not (a touch, a copy): remember the new stat."""
    conn.execute(
        "UPDATE documents SET size_bytes = %s, mtime_ns = %s, updated_at = now() WHERE id = %s",
        (size, mtime_ns, document_id),
    )


def delete_documents(conn: psycopg.Connection[Any], document_ids: Sequence[int]) -> int:
    if not document_ids:
        return 0
    cur = conn.execute("DELETE FROM documents WHERE id = ANY(%s)", (list(document_ids),))
    return cur.rowcount
