"""How much of each source the index holds now: what a materialization reports and what
``garage sources list`` shows, from one query."""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg.rows import dict_row

_TOTALS = (
    "SELECT s.name,"
    " (SELECT count(*) FROM documents d WHERE d.source_id = s.id) AS documents,"
    " (SELECT count(*) FROM chunks c JOIN documents d ON d.id = c.document_id"
    "   WHERE d.source_id = s.id) AS chunks,"
    " (SELECT max(finished_at)::text FROM ingest_runs r WHERE r.source_id = s.id)"
    "   AS last_ingest"
    " FROM sources s"
)


def all_source_totals(conn: psycopg.Connection[Any]) -> dict[str, dict[str, object]]:
    """Every source's documents, chunks and last ingest's end, by source name."""
    with conn.cursor(row_factory=dict_row) as cur:
        rows = cur.execute(_TOTALS).fetchall()
    return {row["name"]: {k: v for k, v in row.items() if k != "name"} for row in rows}


def source_totals(conn: psycopg.Connection[Any], source: str) -> dict[str, int]:
    """One source's documents and chunks (none when the source was never ingested)."""
    with conn.cursor(row_factory=dict_row) as cur:
        row = cur.execute(_TOTALS + " WHERE s.name = %s", (source,)).fetchone()
    return {
        "documents": int(row["documents"]) if row else 0,
        "chunks": int(row["chunks"]) if row else 0,
    }
