"""How hybrid search merges its two legs into one ranking: the ``fused`` CTE.

Both legs hand over ``(chunk_id, rank, score)`` for at most ``candidates`` chunks (``vec``: a
similarity, higher is nearer; ``kw``: BM25 or ``ts_rank_cd``). Two ways to fuse them:

``rrf``
    Reciprocal Rank Fusion, the architecture guide's behaviour: Σ 1 / (k + rank) over the legs
    that returned the chunk (k = 60). It reads ranks only, so the two scales never meet; it
    also throws away how far ahead the leader of a leg is.

``convex``
    A convex combination of per-leg normalized scores, w_v · v + w_k · k with w_v + w_k = 1
    (Bruch et al., "An Analysis of Fusion Functions for Hybrid Retrieval", 2023). Each leg's
    scores are normalized over that leg's own candidates, by z-score ((s - mean) / stddev) or
    min–max ((s - min) / (max - min)), which puts a cosine similarity and a BM25 score on a
    common footing without a training set. A chunk one leg did not return gets that leg's
    lowest normalized score: it ranked below every candidate the leg kept, so the least the
    leg said of any candidate is the most it can be credited with.

Everything happens on at most 2 × ``candidates`` rows inside the one statement, so fusion adds
no round trip and no measurable time to the query.
"""

from __future__ import annotations

from typing import Any

from psycopg import sql

from garage.config.model import SearchConfig

FUSIONS = ("rrf", "convex")

_RRF = """
    fused AS (
        SELECT coalesce(v.chunk_id, k.chunk_id) AS chunk_id,
               v.rank AS vector_rank, k.rank AS keyword_rank,
               coalesce(1.0 / (%(rrf_k)s + v.rank), 0)
               + coalesce(1.0 / (%(rrf_k)s + k.rank), 0) AS score
        FROM vec v FULL OUTER JOIN kw k ON k.chunk_id = v.chunk_id
    )"""

# Per-leg normalization over the leg's candidates. A leg whose candidates all score alike
# (one candidate, or ties) says nothing to tell them apart: z-score 0, min–max 1 (each is as
# good as the best).
_NORMALIZED = {
    "zscore": "coalesce((score - avg(score) OVER ()) / nullif(stddev_pop(score) OVER (), 0), 0)",
    "minmax": (
        "coalesce((score - min(score) OVER ())"
        " / nullif(max(score) OVER () - min(score) OVER (), 0), 1)"
    ),
}

_CONVEX = """
    vec_norm AS (SELECT chunk_id, rank, ({normalized})::float8 AS norm FROM vec),
    kw_norm AS (SELECT chunk_id, rank, ({normalized})::float8 AS norm FROM kw),
    fused AS (
        SELECT coalesce(v.chunk_id, k.chunk_id) AS chunk_id,
               v.rank AS vector_rank, k.rank AS keyword_rank,
               %(vector_weight)s::float8
                   * coalesce(v.norm, (SELECT min(norm) FROM vec_norm), 0)
               + %(keyword_weight)s::float8
                   * coalesce(k.norm, (SELECT min(norm) FROM kw_norm), 0) AS score
        FROM vec_norm v FULL OUTER JOIN kw_norm k ON k.chunk_id = v.chunk_id
    )"""


def fused_cte(settings: SearchConfig) -> tuple[sql.Composable, dict[str, Any]]:
    """The ``fused(chunk_id, vector_rank, keyword_rank, score)`` CTE of a hybrid query, and
    its parameters."""
    if settings.fusion == "rrf":
        return sql.SQL(_RRF), {"rrf_k": settings.rrf_k}
    if settings.fusion == "convex":
        vector_weight, keyword_weight = settings.leg_weights
        statement = sql.SQL(_CONVEX).format(normalized=sql.SQL(_NORMALIZED[settings.normalization]))
        return statement, {"vector_weight": vector_weight, "keyword_weight": keyword_weight}
    raise ValueError(f"search.fusion: {settings.fusion!r} is not one of {', '.join(FUSIONS)}")
