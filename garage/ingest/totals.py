"""How much of a source the index holds now: the totals a materialization reports."""

from __future__ import annotations

from typing import Any

import psycopg


def source_totals(conn: psycopg.Connection[Any], source: str) -> dict[str, int]:
    row = conn.execute(
        "SELECT (SELECT count(*) FROM documents d WHERE d.source_id = s.id) AS documents,"
        " (SELECT count(*) FROM chunks c JOIN documents d ON d.id = c.document_id"
        "   WHERE d.source_id = s.id) AS chunks"
        " FROM sources s WHERE s.name = %s",
        (source,),
    ).fetchone()
    values = list(row.values()) if isinstance(row, dict) else list(row or (0, 0))
    return {"documents": int(values[0]), "chunks": int(values[1])}
