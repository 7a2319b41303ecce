"""The registry of embedding models, and the ``emb_<slug>`` table each one owns.

Chunks are model-agnostic; each model keeps its vectors in a table of its own, keyed on the
chunk (``ON DELETE CASCADE``, so a deleted chunk takes its vectors with it) and indexed with
HNSW. Registering a model creates its table — never by hand — and a model whose vectors would
no longer mean the same thing (other dimensions, distance or model id under the same name) is
refused rather than silently mixed with the old vectors.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import dict_row

from garage.config import EmbeddingModelConfig, GarageConfig
from garage.db.connect import scalar
from garage.embed.inputs import SIGNATURES

log = logging.getLogger(__name__)

# pgvector's HNSW indexes `vector` columns of at most 2,000 dimensions.
MAX_INDEXED_DIMENSIONS = 2000

_OPCLASS = {"cosine": "vector_cosine_ops", "l2": "vector_l2_ops", "inner_product": "vector_ip_ops"}
# The pgvector operator whose ascending order is "nearest first" for each distance.
DISTANCE_OPERATOR = {"cosine": "<=>", "l2": "<->", "inner_product": "<#>"}


class RegistryError(Exception):
    """A model cannot be registered as configured; the message names the model and the fix."""


@dataclass(frozen=True)
class RegisteredModel:
    name: str
    slug: str
    provider: str
    host: str
    model_id: str
    dimensions: int
    modality: str  # 'text' | 'image'
    distance: str
    binary_quantization: bool
    is_default: bool
    # The embedding input's signature (garage/embed/inputs.py): "chunk" or "context:v1".
    input: str = "chunk"

    @property
    def table(self) -> str:
        return f"emb_{self.slug}"

    @property
    def fact_table(self) -> str:
        """Where this model keeps the vectors of potential facts' chunks, keyed on the fact.
        Cut to PostgreSQL's 63-character identifier limit, as the server would cut it."""
        return f"potential_fact_emb_{self.slug}"[:63]

    @property
    def distilled_table(self) -> str:
        """Where this model keeps the vectors of distilled facts (``fact_emb_<slug>``)."""
        return f"fact_emb_{self.slug}"[:63]

    @property
    def operator(self) -> str:
        return DISTANCE_OPERATOR[self.distance]


def slugify(name: str) -> str:
    """``bge-m3`` → ``bge_m3``; what follows ``emb_`` in the model's table name."""
    slug = re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")[:48].rstrip("_")
    if not slug:
        raise RegistryError(f"model name {name!r} has no letters or digits to name a table with")
    return slug


def _from_config(model: EmbeddingModelConfig, config: GarageConfig) -> RegisteredModel:
    return RegisteredModel(
        name=model.name,
        slug=slugify(model.name),
        provider=model.provider,
        host=model.host or config.inference.host_for(model.provider),
        model_id=model.model,
        dimensions=model.dimensions,
        modality=model.modality,
        distance=model.distance,
        binary_quantization=model.binary_quantization,
        is_default=model.name == config.embedding.default,
        input=SIGNATURES[model.input],
    )


def configured_models(config: GarageConfig) -> list[RegisteredModel]:
    """The models the config names, as they would be registered (no database needed)."""
    models = [_from_config(m, config) for m in config.embedding.models]
    slugs: dict[str, str] = {}
    for model in models:
        if model.slug in slugs:
            raise RegistryError(
                f"embedding models {slugs[model.slug]!r} and {model.name!r} would share the "
                f"table emb_{model.slug}; rename one"
            )
        slugs[model.slug] = model.name
        if model.dimensions > MAX_INDEXED_DIMENSIONS:
            raise RegistryError(
                f"embedding model {model.name!r}: {model.dimensions} dimensions, but an HNSW "
                f"index holds at most {MAX_INDEXED_DIMENSIONS}"
            )
    return models


def register_models(conn: psycopg.Connection[Any], config: GarageConfig) -> list[RegisteredModel]:
    """Upsert every configured model and create its table and index; return them.

    Idempotent. One transaction: either every model is registered or none is.
    """
    models = configured_models(config)
    with conn.transaction():
        existing = {m.name: m for m in registered_models(conn)}
        for model in models:
            old = existing.get(model.name)
            if old is not None:
                _check_compatible(old, model)
        # Clear the old default first: the partial unique index admits one default at a time.
        conn.execute("UPDATE embedding_models SET is_default = false WHERE is_default")
        for model in models:
            old = existing.get(model.name)
            if old is not None and old.input != model.input:
                _forget_passage_vectors(conn, old, model)
            conn.execute(
                """
                INSERT INTO embedding_models (name, slug, provider, host, model_id, dimensions,
                    modality, distance, binary_quantization, is_default, input)
                VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
                ON CONFLICT (name) DO UPDATE SET provider = EXCLUDED.provider,
                    host = EXCLUDED.host, is_default = EXCLUDED.is_default,
                    input = EXCLUDED.input
                """,
                (
                    model.name,
                    model.slug,
                    model.provider,
                    model.host,
                    model.model_id,
                    model.dimensions,
                    model.modality,
                    model.distance,
                    model.binary_quantization,
                    model.is_default,
                    model.input,
                ),
            )
            _create_table(conn, model)
    return models


def _forget_passage_vectors(
    conn: psycopg.Connection[Any], old: RegisteredModel, new: RegisteredModel
) -> None:
    """The model now embeds something else for a chunk: its passage vectors were made from the
    old input, so they go, in the registration's transaction, and the next backfill makes them
    again. Fact vectors stay: a fact is embedded as its own text under every input."""
    log.warning(
        "embedding model %s: input %s -> %s, its passage vectors in %s are dropped and will be "
        "embedded again",
        new.name,
        old.input,
        new.input,
        old.table,
    )
    conn.execute(sql.SQL("TRUNCATE {}").format(sql.Identifier(old.table)))


def _check_compatible(old: RegisteredModel, new: RegisteredModel) -> None:
    for field, what in (
        ("model_id", "model id"),
        ("dimensions", "dimensions"),
        ("distance", "distance"),
        ("modality", "modality"),
        ("binary_quantization", "binary quantization"),
    ):
        if getattr(old, field) != getattr(new, field):
            raise RegistryError(
                f"embedding model {new.name!r} is registered with {what} "
                f"{getattr(old, field)!r}, but the config now says {getattr(new, field)!r}: "
                f"its vectors in {old.table} would no longer match. Give the changed model a "
                "new name (it gets a new table), or remove the old one with "
                f"`garage models remove {new.name}`"
            )


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


def registered_models(conn: psycopg.Connection[Any]) -> list[RegisteredModel]:
    with conn.cursor(row_factory=dict_row) as cur:
        rows = cur.execute(
            "SELECT name, slug, provider, host, model_id, dimensions, modality, distance,"
            " binary_quantization, is_default, input FROM embedding_models ORDER BY id"
        ).fetchall()
    return [RegisteredModel(**row) for row in rows]


def default_model(conn: psycopg.Connection[Any], modality: str = "text") -> RegisteredModel | None:
    """The default model, or else the first registered model of that modality."""
    models = [m for m in registered_models(conn) if m.modality == modality]
    for model in models:
        if model.is_default:
            return model
    return models[0] if models else None


def find_model(conn: psycopg.Connection[Any], name: str) -> RegisteredModel:
    for model in registered_models(conn):
        if model.name == name or model.slug == name:
            return model
    known = ", ".join(m.name for m in registered_models(conn)) or "none registered"
    raise RegistryError(f"no embedding model named {name!r} (models: {known})")


def remove_model(conn: psycopg.Connection[Any], name: str) -> RegisteredModel:
    """Drop a model's table and its registry row (its vectors are gone)."""
    model = find_model(conn, name)
    with conn.transaction():
        conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(model.table)))
        conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(model.fact_table)))
        conn.execute(
            sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(model.distilled_table))
        )
        conn.execute("DELETE FROM embedding_models WHERE name = %s", (model.name,))
    return model


def table_dimensions(conn: psycopg.Connection[Any], model: RegisteredModel) -> int | None:
    """The dimension the table's vector column actually has (pgvector keeps it in atttypmod)."""
    value = scalar(
        conn,
        "SELECT a.atttypmod FROM pg_attribute a WHERE a.attrelid = to_regclass(%s)"
        " AND a.attname = 'embedding'",
        (model.table,),
    )
    return None if value is None else int(value)


def vector_count(conn: psycopg.Connection[Any], model: RegisteredModel) -> int:
    """Vectors of content chunks and of fact chunks together."""
    return int(
        scalar(
            conn,
            sql.SQL("SELECT (SELECT count(*) FROM {}) + (SELECT count(*) FROM {})").format(
                sql.Identifier(model.table), sql.Identifier(model.fact_table)
            ),
        )
    )
