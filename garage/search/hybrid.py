"""Hybrid search in one SQL statement per query: the vector leg, the keyword leg, and their
fusion (garage/search/fusion.py: Reciprocal Rank Fusion, k = 60, or a convex combination of
normalized scores), from 200 candidates per engine. Both legs are CTEs of the same statement,
joined with a full outer join, so a query is one round trip after its settings.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import dict_row

from garage.config.model import SearchConfig
from garage.embed.registry import RegisteredModel
from garage.search import fusion, keyword, vector
from garage.search.filters import CHUNK_DATE, FILTER_JOINS, Filters
from garage.search.types import Mode


@dataclass(frozen=True)
class Plan:
    mode: Mode
    statement: sql.Composed
    params: dict[str, Any]


_SINGLE = {
    "vector": """
        fused AS (
            SELECT chunk_id, rank AS vector_rank, NULL::bigint AS keyword_rank, score FROM vec
        )""",
    "keyword": """
        fused AS (
            SELECT chunk_id, NULL::bigint AS vector_rank, rank AS keyword_rank, score FROM kw
        )""",
}

_HITS = """
SELECT f.chunk_id, f.score::float8 AS score, f.vector_rank, f.keyword_rank,
       c.document_id, d.uri, d.title, s.name AS source, d.corpus_class, a.name AS author,
       c.start_offset, c.end_offset, c.text, c.heading, c.metadata AS chunk_metadata,
       {chunk_date} AS chunk_date,
       c.fact_id, fa.prompt_name AS fact_prompt, fa.fact_class
FROM (SELECT * FROM fused ORDER BY score DESC, chunk_id LIMIT %(limit)s) f
JOIN chunks c ON c.id = f.chunk_id {joins}
LEFT JOIN facts fa ON fa.id = c.fact_id
ORDER BY f.score DESC, f.chunk_id
"""


def plan(
    mode: Mode,
    *,
    text: str,
    limit: int,
    filters: Filters,
    settings: SearchConfig,
    model: RegisteredModel | None,
    query_vector: list[float] | None,
    keyword_ranking: str | None = None,
) -> Plan:
    """The one statement that answers ``mode``; vector modes need the model and the vector."""
    ctes: list[sql.Composable] = []
    params: dict[str, Any] = {
        "text": text,
        "limit": limit,
        "candidates": settings.candidates,
        **filters.params,
    }
    if mode in ("hybrid", "vector"):
        if model is None or query_vector is None:
            raise ValueError(f"{mode} search needs an embedding model and the query's vector")
        ctes.append(vector.vector_ctes(model, filters))
        params["qvec"] = vector.vector_literal(query_vector)
    if mode in ("hybrid", "keyword"):
        ctes.append(keyword.keyword_ctes(keyword_ranking or settings.keyword_ranking, filters))
        params["k1"] = settings.bm25_k1
        params["b"] = settings.bm25_b
        params["common_df"] = settings.bm25_common_df
    if mode == "hybrid":
        fused, fusion_params = fusion.fused_cte(settings)
        ctes.append(fused)
        params.update(fusion_params)
    else:
        ctes.append(sql.SQL(_SINGLE[mode]))
    statement = sql.SQL("WITH {ctes} {hits}").format(
        ctes=sql.SQL(",").join(ctes),
        hits=sql.SQL(_HITS).format(chunk_date=CHUNK_DATE, joins=FILTER_JOINS),
    )
    return Plan(mode, statement, params)


def run(
    conn: psycopg.Connection[Any],
    the_plan: Plan,
    *,
    candidates: int,
    filtered: bool,
) -> list[dict[str, Any]]:
    """Execute a plan in a transaction of its own, with the vector leg's settings."""
    with conn.transaction(), conn.cursor(row_factory=dict_row) as cur:
        if the_plan.mode in ("hybrid", "vector"):
            vector.session_settings(conn, candidates, filtered=filtered)
        return cur.execute(the_plan.statement, the_plan.params).fetchall()
