"""The vector leg: nearest chunks by the query's embedding, from the model's ``emb_<slug>``,
and nearest potential facts, from its ``potential_fact_emb_<slug>``.

pgvector's HNSW scan returns at most ``hnsw.ef_search`` rows (default 40), so a leg that asks
for 200 candidates gets 40 unless told otherwise. ``session_settings`` raises ``ef_search`` to
the candidate count and, when filters may discard rows the index returns, turns on iterative
scans (pgvector ≥ 0.8) so the scan keeps going until enough filtered rows come back, in exact
distance order.

The CTEs define ``vec(chunk_id, rank, score)``, score being a similarity (higher is nearer).
Parameters: ``qvec`` (the query vector as pgvector text) and ``candidates``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg import sql

from garage.embed.registry import RegisteredModel
from garage.search.filters import FILTER_JOINS, Filters

# A binary-quantized index ranks by Hamming distance over sign bits; this many times the
# candidates are re-ranked by full-precision distance.
BQ_OVERSAMPLE = 4
# How far an iterative scan may go looking for rows that pass the filters before it stops.
MAX_SCAN_TUPLES = 50_000

_SIMILARITY = {
    # Higher is nearer, whatever the operator: cosine similarity, negated L2, inner product.
    "cosine": "1 - {dist}",
    "l2": "-{dist}",
    "inner_product": "-{dist}",
}


def vector_literal(vector: Sequence[float]) -> str:
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


def session_settings(conn: psycopg.Connection[Any], candidates: int, *, filtered: bool) -> None:
    """SET LOCAL what the leg needs, in one statement; the caller holds the transaction.

    Iterative scans exist from pgvector 0.8 on (an older server only gets ``ef_search``,
    which is enough without filters).
    """
    settings = sql.SQL("set_config('hnsw.ef_search', {}, true)").format(
        sql.Literal(str(max(candidates, 40)))
    )
    if filtered:
        settings = sql.SQL(
            "{}, CASE WHEN (SELECT string_to_array(extversion, '.')::int[] >= '{{0,8}}'"
            " FROM pg_extension WHERE extname = 'vector') THEN"
            " set_config('hnsw.iterative_scan', 'strict_order', true)"
            " || set_config('hnsw.max_scan_tuples', {}, true) END"
        ).format(settings, sql.Literal(str(MAX_SCAN_TUPLES)))
    conn.execute(sql.SQL("SELECT {}").format(settings))


def _nearest(
    model: RegisteredModel, table: str, filters: Filters, *, facts: bool
) -> sql.Composable:
    """(chunk_id, dist) of the nearest rows of one vector table, on that table's own index."""
    operator = sql.SQL(model.operator)
    order: sql.Composable
    limit: sql.Composable
    if model.binary_quantization:
        # Nearest by Hamming distance on the index, then re-ranked by the full vectors.
        bits = sql.SQL("binary_quantize({col})::bit({dims})")
        order = sql.SQL("{} <~> {}").format(
            bits.format(col=sql.SQL("e.embedding"), dims=sql.Literal(model.dimensions)),
            bits.format(col=sql.SQL("%(qvec)s::vector"), dims=sql.Literal(model.dimensions)),
        )
        limit = sql.SQL("%(candidates)s * {}").format(sql.Literal(BQ_OVERSAMPLE))
    else:
        order = sql.SQL("e.embedding {op} %(qvec)s::vector").format(op=operator)
        limit = sql.SQL("%(candidates)s")
    distance = sql.SQL("e.embedding {op} %(qvec)s::vector").format(op=operator)
    # Filters reach a fact through its chunk's document, exactly as they reach a passage.
    joins, predicate = (
        (sql.SQL("JOIN chunks c ON c.id = e.chunk_id {}").format(FILTER_JOINS), filters.predicate)
        if filters.active
        else (sql.SQL(""), sql.SQL("true"))
    )
    return sql.SQL(
        "SELECT * FROM (SELECT e.chunk_id, {distance} AS dist FROM {table} e {joins}"
        " WHERE {predicate} ORDER BY {order} LIMIT {limit}) {alias}"
    ).format(
        distance=distance,
        table=sql.Identifier(table),
        joins=joins,
        predicate=predicate,
        order=order,
        limit=limit,
        alias=sql.Identifier("near_facts" if facts else "near_chunks"),
    )


def vector_ctes(model: RegisteredModel, filters: Filters) -> sql.Composable:
    """``vec``: the nearest content chunks (``emb_<slug>``) and the nearest potential facts
    (``potential_fact_emb_<slug>``), each taken on its own index, ranked as one list by
    distance — the architecture guide's rule, so a fact that states a query's answer outranks
    the passage around it only when it is nearer."""
    similarity = sql.SQL(_SIMILARITY[model.distance].format(dist="nn.dist"))
    return sql.SQL(
        """
        vec AS (
            SELECT nn.chunk_id, row_number() OVER (ORDER BY nn.dist, nn.chunk_id) AS rank,
                   ({similarity})::float8 AS score
            FROM (
                SELECT chunk_id, dist FROM ({content} UNION ALL {facts}) near
                ORDER BY dist, chunk_id
                LIMIT %(candidates)s
            ) nn
        )
        """
    ).format(
        similarity=similarity,
        content=_nearest(model, model.table, filters, facts=False),
        facts=_nearest(model, model.fact_table, filters, facts=True),
    )
