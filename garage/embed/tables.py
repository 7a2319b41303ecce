"""The tables each embedding model owns, and where they are made: at its registration.

Per model: ``emb_<slug>`` (the vectors of content chunks), ``potential_fact_emb_<slug>`` (of
potential facts) and ``fact_emb_<slug>`` (of distilled facts), each with its HNSW index. The
models come from the config, not from the migrations, so no numbered file can create them:
they are made by ``register_models``, the first step of the stages that write vectors (the
embedding backfill from ``garage embed`` and from the vector assets, ``cluster-facts``) and of
``garage models``, so a model added to the config has its tables before anything writes them.

Made once, not re-issued at every registration: ``CREATE INDEX IF NOT EXISTS`` locks its table
against writers before it finds the index there, so a registration at the start of one run (a
Dagster materialization, say) would wait on, and stall, the batches another run is writing.
``ensure_tables`` looks in the catalog first and issues the DDL only for a model whose tables
or indexes are missing (a new model, or one registered before a table of its existed).
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import sql

from garage.db.connect import scalar
from garage.embed.model import RegisteredModel

_OPCLASS = {"cosine": "vector_cosine_ops", "l2": "vector_l2_ops", "inner_product": "vector_ip_ops"}


def ensure_tables(conn: psycopg.Connection[Any], model: RegisteredModel) -> None:
    """Create whatever of the model's tables and indexes is missing; nothing when all are
    there. The caller owns the transaction (registration's)."""
    if _complete(conn, model):
        return
    _create_table(conn, model)


def _relations(model: RegisteredModel) -> list[str]:
    """Every table and index ``_create_table`` makes for ``model``."""
    names = [model.table, model.fact_table, model.distilled_table, f"{model.table}_input_idx"]
    names.append(f"{model.table}_hnsw_bq" if model.binary_quantization else f"{model.table}_hnsw")
    names.append(f"pfe_{model.slug}_hnsw")
    if not model.binary_quantization:
        names.append(f"fe_{model.slug}_hnsw")
    return names


def _complete(conn: psycopg.Connection[Any], model: RegisteredModel) -> bool:
    relations = _relations(model)
    present = scalar(
        conn,
        "SELECT count(*) FILTER (WHERE to_regclass(name) IS NOT NULL)"
        " + (SELECT count(*) FROM pg_attribute WHERE attrelid = to_regclass(%s)"
        "    AND attname = 'input_sha256' AND NOT attisdropped)"
        " FROM unnest(%s::text[]) AS name",
        (model.table, relations),
    )
    return int(present) == len(relations) + 1


def _create_table(conn: psycopg.Connection[Any], model: RegisteredModel) -> None:
    table = sql.Identifier(model.table)
    conn.execute(
        sql.SQL(
            """
            CREATE TABLE IF NOT EXISTS {table} (
                chunk_id    bigint PRIMARY KEY REFERENCES chunks (id) ON DELETE CASCADE,
                embedding   vector({dims}) NOT NULL,
                -- The chunk was longer than the model's context and was cut to fit.
                truncated   boolean NOT NULL DEFAULT false,
                embedded_at timestamptz NOT NULL DEFAULT now()
            )
            """
        ).format(table=table, dims=sql.Literal(model.dimensions))
    )
    _add_input_hash(conn, model)
    opclass = sql.SQL(_OPCLASS[model.distance])
    if model.binary_quantization:
        # Hamming distance over the sign bits; search re-ranks the candidates by full vectors.
        index = sql.SQL(
            "CREATE INDEX IF NOT EXISTS {name} ON {table} USING hnsw "
            "((binary_quantize(embedding)::bit({dims})) bit_hamming_ops)"
        ).format(
            name=sql.Identifier(f"{model.table}_hnsw_bq"),
            table=table,
            dims=sql.Literal(model.dimensions),
        )
    else:
        index = sql.SQL(
            "CREATE INDEX IF NOT EXISTS {name} ON {table} USING hnsw (embedding {opclass})"
        ).format(name=sql.Identifier(f"{model.table}_hnsw"), table=table, opclass=opclass)
    conn.execute(index)
    _create_fact_table(conn, model)
    _create_distilled_table(conn, model)


def _create_distilled_table(conn: psycopg.Connection[Any], model: RegisteredModel) -> None:
    """``fact_emb_<slug>``: distilled facts' vectors (migration 008 makes it for the models
    registered before it). Nothing is embedded for them: the clustering model's row is the
    group's centroid (and seed), any other model's the mean of its nodes' vectors there."""
    table = sql.Identifier(model.distilled_table)
    conn.execute(
        sql.SQL(
            """
            CREATE TABLE IF NOT EXISTS {table} (
                distilled_fact_id bigint PRIMARY KEY
                    REFERENCES distilled_facts (id) ON DELETE CASCADE,
                embedding  vector({dims}) NOT NULL,
                seed       vector({dims}),
                updated_at timestamptz NOT NULL DEFAULT now()
            )
            """
        ).format(table=table, dims=sql.Literal(model.dimensions))
    )
    if not model.binary_quantization:
        conn.execute(
            sql.SQL(
                "CREATE INDEX IF NOT EXISTS {name} ON {table} USING hnsw (embedding {op})"
            ).format(
                name=sql.Identifier(f"fe_{model.slug}_hnsw"),
                table=table,
                op=sql.SQL(_OPCLASS[model.distance]),
            )
        )


def _add_input_hash(conn: psycopg.Connection[Any], model: RegisteredModel) -> None:
    """``input_sha256``: the hash of what was embedded, the key the backfill reuses a vector by.
    A table made before it gets the column here; its vectors were made from the chunk's text
    alone, so under the ``chunk`` input their key is the chunk's ``text_sha256``."""
    table = sql.Identifier(model.table)
    present = scalar(
        conn,
        "SELECT count(*) FROM pg_attribute WHERE attrelid = to_regclass(%s)"
        " AND attname = 'input_sha256' AND NOT attisdropped",
        (model.table,),
    )
    if not present:
        conn.execute(sql.SQL("ALTER TABLE {} ADD COLUMN input_sha256 text").format(table))
        if model.input == "chunk":
            conn.execute(
                sql.SQL(
                    "UPDATE {t} e SET input_sha256 = c.text_sha256 FROM chunks c"
                    " WHERE c.id = e.chunk_id"
                ).format(t=table)
            )
    conn.execute(
        sql.SQL("CREATE INDEX IF NOT EXISTS {} ON {} (input_sha256)").format(
            sql.Identifier(f"{model.table}_input_idx"), table
        )
    )


def _create_fact_table(conn: psycopg.Connection[Any], model: RegisteredModel) -> None:
    """``potential_fact_emb_<slug>``: the vectors of fact chunks, on an index of their own, so
    search takes the nearest facts and the nearest passages separately (migration 006 makes
    the same table for models registered before it)."""
    table = sql.Identifier(model.fact_table)
    conn.execute(
        sql.SQL(
            """
            CREATE TABLE IF NOT EXISTS {table} (
                fact_id     bigint PRIMARY KEY REFERENCES facts (id) ON DELETE CASCADE,
                chunk_id    bigint NOT NULL UNIQUE REFERENCES chunks (id) ON DELETE CASCADE,
                embedding   vector({dims}) NOT NULL,
                truncated   boolean NOT NULL DEFAULT false,
                embedded_at timestamptz NOT NULL DEFAULT now()
            )
            """
        ).format(table=table, dims=sql.Literal(model.dimensions))
    )
    # pfe_<slug>_hnsw: a long slug already brings the table's name to the 63-character limit.
    name = sql.Identifier(f"pfe_{model.slug}_hnsw")
    expression: sql.Composable
    if model.binary_quantization:
        expression = sql.SQL("((binary_quantize(embedding)::bit({dims})) bit_hamming_ops)").format(
            dims=sql.Literal(model.dimensions)
        )
    else:
        expression = sql.SQL("(embedding {})").format(sql.SQL(_OPCLASS[model.distance]))
    conn.execute(
        sql.SQL("CREATE INDEX IF NOT EXISTS {name} ON {table} USING hnsw {expression}").format(
            name=name, table=table, expression=expression
        )
    )
