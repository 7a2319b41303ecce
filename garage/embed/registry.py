"""The registry of embedding models, and the ``emb_<slug>`` table each one owns.

Chunks are model-agnostic; each model keeps its vectors in a table of its own, keyed on the
chunk (``ON DELETE CASCADE``, so a deleted chunk takes its vectors with it) and indexed with
HNSW. Registering a model creates its tables (``tables.py``) — never by hand — and a model whose
vectors would no longer mean the same thing (other dimensions, distance or model id under the
same name) is refused rather than silently mixed with the old vectors.
"""

from __future__ import annotations

import logging
import re
from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import dict_row

from garage.config import EmbeddingModelConfig, GarageConfig
from garage.db.connect import scalar
from garage.embed import backlog
from garage.embed.inputs import SIGNATURES
from garage.embed.model import RegisteredModel
from garage.embed.tables import ensure_tables
from garage.locks import CORPUS, Waiting, source_names, writing

log = logging.getLogger(__name__)

# pgvector's HNSW indexes `vector` columns of at most 2,000 dimensions.
MAX_INDEXED_DIMENSIONS = 2000


class RegistryError(Exception):
    """A model cannot be registered as configured; the message names the model and the fix."""


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
            ensure_tables(conn, model)
            if old is None or old.input != model.input or not backlog.has_rows(conn, model):
                # New, or its passage vectors just went: what waits for it is counted once
                # here, and kept from then on (embed/backlog.py). Not under the sources' writer
                # locks: a document an ingest commits during this count can go uncounted until
                # its source's next backfill, which counts again under the lock.
                backlog.count(conn, model)
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


def remove_model(
    conn: psycopg.Connection[Any], name: str, waiting: Waiting | None = None
) -> RegisteredModel:
    """Drop a model's table and its registry row (its vectors are gone).

    Every source's vectors and the distilled facts' go with it: it is a writer of every source
    and of the corpus, and waits for the writers of each rather than drop the table from under
    an embed writing into it."""
    model = find_model(conn, name)
    scopes = [*source_names(conn), CORPUS]
    with writing(conn, scopes, "models remove", waiting), conn.transaction():
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
