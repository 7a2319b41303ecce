"""How many chunks of each source wait for a vector under each model: ``embedding_backlog``.

Search asks on every query that uses the vector leg (to say how much of the index that leg
could not see), so the answer is kept, not counted: a count of the chunks without a vector is
an anti-join over every chunk in scope, which grows with the index (migration 012 says how the
count is kept). Here: the exact count the backfill takes when it starts, what it takes off as
each batch lands, and the read search makes, a sum over at most one row per source.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql

from garage.embed.model import RegisteredModel


@dataclass(frozen=True)
class Pending:
    """One source's chunks without a vector under one model, content and fact chunks apart."""

    content: int = 0
    facts: int = 0

    @property
    def total(self) -> int:
        return self.content + self.facts


def _values(row: Any) -> tuple[Any, ...]:
    """A row's values in column order, from a dict row or a tuple row (columns named apart)."""
    return tuple(row.values()) if isinstance(row, dict) else tuple(row)


def count(
    conn: psycopg.Connection[Any], model: RegisteredModel, source: str | None = None
) -> dict[int, Pending]:
    """Count exactly, by source id, the chunks of ``model``'s modality without its vector (of
    ``source``, or of every source), and record the counts as the backlog. Every source in
    scope gets its row, those with nothing pending too.

    Exact only while nobody writes those sources' chunks: the backfill calls it holding their
    writer locks."""
    # Two anti-joins, one per kind of chunk, so the planner can hash each (a NOT EXISTS
    # inside a CASE or a FILTER is probed chunk by chunk).
    in_source = (
        sql.SQL("")
        if source is None
        else sql.SQL(" AND d.source_id = (SELECT id FROM sources WHERE name = %(source)s)")
    )
    missing = sql.SQL(
        "SELECT d.source_id, false AS fact FROM chunks c JOIN documents d ON d.id = c.document_id"
        " WHERE c.modality = %(modality)s AND c.fact_id IS NULL{in_source}"
        " AND NOT EXISTS (SELECT 1 FROM {content} e WHERE e.chunk_id = c.id)"
        " UNION ALL"
        " SELECT d.source_id, true FROM chunks c JOIN documents d ON d.id = c.document_id"
        " WHERE c.modality = %(modality)s AND c.fact_id IS NOT NULL{in_source}"
        " AND NOT EXISTS (SELECT 1 FROM {facts} p WHERE p.fact_id = c.fact_id)"
    ).format(
        in_source=in_source,
        content=sql.Identifier(model.table),
        facts=sql.Identifier(model.fact_table),
    )
    counted = sql.SQL(
        "SELECT s.id, coalesce(n.content, 0) AS content, coalesce(n.facts, 0) AS facts"
        " FROM sources s LEFT JOIN"
        " (SELECT source_id, count(*) FILTER (WHERE NOT fact) AS content,"
        "  count(*) FILTER (WHERE fact) AS facts FROM ({missing}) x GROUP BY source_id) n"
        " ON n.source_id = s.id{where}"
    ).format(
        missing=missing,
        where=sql.SQL("") if source is None else sql.SQL(" WHERE s.name = %(source)s"),
    )
    params = {"modality": model.modality, "source": source}
    with conn.transaction():
        rows = [_values(row) for row in conn.execute(counted, params).fetchall()]
        found = {int(row[0]): Pending(int(row[1]), int(row[2])) for row in rows}
        conn.execute(
            "INSERT INTO embedding_backlog AS b (model_id, source_id, pending, counted_at)"
            " SELECT m.id, x.source_id, x.pending, now() FROM embedding_models m,"
            " unnest(%s::bigint[], %s::bigint[]) AS x(source_id, pending) WHERE m.name = %s"
            " ON CONFLICT (model_id, source_id) DO UPDATE"
            " SET pending = EXCLUDED.pending, counted_at = EXCLUDED.counted_at",
            (list(found), [p.total for p in found.values()], model.name),
        )
    return found


def embedded(
    conn: psycopg.Connection[Any], model: RegisteredModel, by_source: Mapping[int, int]
) -> None:
    """Take off the chunks just given a vector, by source id; in the caller's transaction,
    the one that wrote the vectors."""
    if not by_source:
        return
    conn.execute(
        "UPDATE embedding_backlog b SET pending = greatest(b.pending - x.n, 0)"
        " FROM embedding_models m, unnest(%s::bigint[], %s::bigint[]) AS x(source_id, n)"
        " WHERE m.name = %s AND b.model_id = m.id AND b.source_id = x.source_id",
        (list(by_source), list(by_source.values()), model.name),
    )


def pending(conn: psycopg.Connection[Any], model: str, sources: Sequence[str] = ()) -> int:
    """The chunks waiting for a vector under ``model`` (a name), in ``sources`` (default every
    source): one indexed row per source, whatever the size of the index."""
    query = (
        "SELECT coalesce(sum(greatest(b.pending, 0)), 0) FROM embedding_backlog b"
        " JOIN embedding_models m ON m.id = b.model_id"
    )
    params: list[Any] = [model]
    if sources:
        query += " JOIN sources s ON s.id = b.source_id AND s.name = ANY(%s)"
        params.insert(0, list(sources))
    # One round trip on an autocommit connection (every door's); otherwise in a transaction of
    # its own, so none is left open on the caller's connection.
    if conn.autocommit:
        row = conn.execute(query + " WHERE m.name = %s", params).fetchone()
    else:
        with conn.transaction():
            row = conn.execute(query + " WHERE m.name = %s", params).fetchone()
    return int(_values(row)[0]) if row is not None else 0


def by_source(conn: psycopg.Connection[Any]) -> dict[tuple[str, str], int]:
    """Every backlog row: (model name, source name) -> chunks waiting."""
    rows = conn.execute(
        "SELECT m.name AS model, s.name AS source, greatest(b.pending, 0) AS pending"
        " FROM embedding_backlog b"
        " JOIN embedding_models m ON m.id = b.model_id JOIN sources s ON s.id = b.source_id"
    ).fetchall()
    return {(str(r[0]), str(r[1])): int(r[2]) for r in map(_values, rows)}


def has_rows(conn: psycopg.Connection[Any], model: RegisteredModel) -> bool:
    row = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM embedding_backlog b JOIN embedding_models m"
        " ON m.id = b.model_id WHERE m.name = %s)",
        (model.name,),
    ).fetchone()
    return bool(_values(row)[0]) if row is not None else False
