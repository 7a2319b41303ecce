"""What the database already knows about a source, loaded once per run: its documents (and
the parts of multipart files), and the outcomes remembered for files that have none.

Ingest decides most files from this snapshot and a stat alone: a no-change run over 100k files
must not cost 100k queries, let alone 100k reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg

from garage.config import SourceConfig


@dataclass(frozen=True)
class KnownDocument:
    id: int
    size_bytes: int
    mtime_ns: int
    source_sha256: str
    extractor: str
    extractor_version: int
    chunker: str | None  # of its first chunk: a text chunk when it has any (see pictures)
    content_sha256: str = ""


@dataclass(frozen=True)
class KnownOutcome:
    outcome: str
    size_bytes: int | None
    mtime_ns: int | None
    source_sha256: str | None
    extractor: str | None
    extractor_version: int | None


def upsert_source(conn: psycopg.Connection[Any], source: SourceConfig) -> int:
    row = conn.execute(
        "INSERT INTO sources (name, kind, corpus_class, roots) VALUES (%s, %s, %s, %s)"
        " ON CONFLICT (name) DO UPDATE SET kind = EXCLUDED.kind,"
        " corpus_class = EXCLUDED.corpus_class, roots = EXCLUDED.roots, updated_at = now()"
        " RETURNING id",
        (source.name, source.kind, source.corpus_class, [str(p) for p in source.root_paths()]),
    ).fetchone()
    assert row is not None
    return int(row["id"] if isinstance(row, dict) else row[0])


def known_documents(conn: psycopg.Connection[Any], source_id: int) -> dict[str, KnownDocument]:
    rows = conn.execute(
        "SELECT d.uri, d.id, d.size_bytes, d.mtime_ns, d.source_sha256, d.extractor,"
        " d.extractor_version, c.chunker, d.content_sha256"
        " FROM documents d LEFT JOIN LATERAL ("
        # The first by ord: text chunks come before a picture's image chunk.
        "   SELECT chunker FROM chunks WHERE document_id = d.id AND fact_id IS NULL"
        "   ORDER BY ord LIMIT 1"
        " ) c ON true WHERE d.source_id = %s",
        (source_id,),
    ).fetchall()
    known = {}
    for row in rows:
        values = list(row.values()) if isinstance(row, dict) else list(row)
        known[values[0]] = KnownDocument(*values[1:])
    return known


def known_outcomes(conn: psycopg.Connection[Any], source_id: int) -> dict[str, KnownOutcome]:
    rows = conn.execute(
        "SELECT uri, outcome, size_bytes, mtime_ns, source_sha256, extractor, extractor_version"
        " FROM ingest_outcomes WHERE source_id = %s",
        (source_id,),
    ).fetchall()
    known = {}
    for row in rows:
        values = list(row.values()) if isinstance(row, dict) else list(row)
        known[values[0]] = KnownOutcome(*values[1:])
    return known


def group_parts(known: dict[str, KnownDocument]) -> dict[str, dict[str, KnownDocument]]:
    """The documents of multipart files (mbox messages), by the file's URI."""
    groups: dict[str, dict[str, KnownDocument]] = {}
    for uri, document in known.items():
        file_uri, hash_, _key = uri.partition("#")
        if hash_ and file_uri.startswith("file:"):
            groups.setdefault(file_uri, {})[uri] = document
    return groups
