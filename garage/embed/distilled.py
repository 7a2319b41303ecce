"""Distilled facts' vectors under the models that did not cluster them.

Under the clustering model a distilled fact's vector is its group's centroid, written by
clustering. Under every other text model nothing is embedded for it: its vector is the mean of
its potential facts' vectors there, so it changes when those do (the embedding backfill gave
them new ones) or when the groups do (clustering regrouped). Both call this, from below: it
reads and writes only the model's own tables, ``potential_fact_emb_<slug>`` and
``fact_emb_<slug>``.
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import sql

from garage.embed.model import RegisteredModel


def refresh_other_vectors(
    conn: psycopg.Connection[Any],
    model: RegisteredModel,
    group_ids: list[int] | None = None,
    *,
    clustered_elsewhere: bool = False,
) -> int:
    """Under a model that did not cluster, a distilled fact's vector is the normalized mean of
    its nodes' vectors there (an anchor's is its representative's): nothing is embedded.
    ``group_ids`` None refreshes every group; ``clustered_elsewhere`` only those another model
    grouped (what the embedding backfill asks for). Returns the rows written."""
    scope: sql.Composable = (
        sql.SQL("") if group_ids is None else sql.SQL(" AND g.id = ANY(%(ids)s)")
    )
    if clustered_elsewhere:
        scope += sql.SQL(" AND g.model <> %(model)s")
    statement = sql.SQL(
        "WITH means AS ("
        " SELECT g.id, l2_normalize(avg(p.embedding)) AS embedding"
        " FROM distilled_facts g JOIN facts f ON f.distilled_fact_id = g.id"
        " JOIN {pfe} p ON p.fact_id = f.id"
        " WHERE f.restates_fact_id IS NULL"
        " AND (g.anchor_key IS NULL OR f.id = g.representative_fact_id){scope}"
        " GROUP BY g.id)"
        " INSERT INTO {fe} (distilled_fact_id, embedding)"
        " SELECT id, embedding FROM means"
        " ON CONFLICT (distilled_fact_id) DO UPDATE SET embedding = EXCLUDED.embedding,"
        " seed = NULL, updated_at = now()"
    ).format(
        pfe=sql.Identifier(model.fact_table), fe=sql.Identifier(model.distilled_table), scope=scope
    )
    with conn.transaction():
        cur = conn.execute(statement, {"ids": group_ids, "model": model.name})
        return cur.rowcount
