"""The neighbour search of a full run, on real PostgreSQL: a generated set of facts (vectors
around a few directions at several spreads, texts in several guard buckets) is grouped by
``cluster-facts`` with small tiles, so every path of the tiled search is taken, and the groups
it writes equal those the same rules give with every pair compared directly."""

from __future__ import annotations

import random

import numpy as np
import psycopg
import pytest
from pgvector.psycopg import register_vector

from garage.clusters import cluster_facts, level1, neighbours, store
from garage.clusters.grow import full_groups
from garage.clusters.model import Settings
from garage.clusters.run import clustering_model
from garage.config import GarageConfig

DIMENSIONS = 384
# Texts of one bucket but for their numbers, so the guard splits a direction's facts.
TEXTS = ["The shop opens at nine.", "The shop opens at ten.", "The library keeps old maps."]


def _config() -> GarageConfig:
    model = {
        "name": "generated",
        "provider": "llama_server",
        "host": "http://127.0.0.1:18080",
        "model": "all-minilm-l6-v2",
        "dimensions": DIMENSIONS,
    }
    return GarageConfig.model_validate({"embedding": {"default": "generated", "models": [model]}})


def _store_generated(url: str, count: int, seed: int) -> None:
    rng = random.Random(seed)
    nrng = np.random.default_rng(seed)
    directions = nrng.normal(size=(count // 15, DIMENSIONS))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    # From tight to loose: thresholds cut through the looser directions, so which fact seeds
    # a group (the densest) decides what the group holds.
    spreads = nrng.uniform(0.008, 0.03, size=len(directions))
    picks = nrng.integers(0, len(directions), size=count)
    noise = nrng.normal(size=(count, DIMENSIONS)) * spreads[picks, None]
    vectors = (directions[picks] + noise).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    with psycopg.connect(url, autocommit=True) as conn:
        register_vector(conn)
        source = conn.execute(
            "INSERT INTO sources (name, kind, corpus_class) VALUES ('generated', 'files',"
            " 'document') RETURNING id"
        ).fetchone()[0]
        conn.execute(
            "INSERT INTO documents (source_id, uri, corpus_class, content, source_sha256,"
            " content_sha256, size_bytes, mtime_ns, extractor, extractor_version)"
            " SELECT %s, 'file:///generated/' || i, 'document', 'x', 's', 'c' || i, 1, 1,"
            " 'text', 1 FROM generate_series(1, %s) i",
            (source, count // 5),
        )
        documents = [r[0] for r in conn.execute("SELECT id FROM documents ORDER BY id")]
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO facts (document_id, prompt_name, prompt_sha256, model, fact_class,"
                " text, start_offset, end_offset, alignment, ord)"
                " VALUES (%s, 'default', 'generated', 'generated', 'fact', %s, 0, 1,"
                " 'match_exact', %s)",
                [(documents[i % len(documents)], rng.choice(TEXTS), i) for i in range(count)],
            )
        conn.execute(
            "INSERT INTO chunks (document_id, ord, text, text_sha256, start_offset, end_offset,"
            " chunker, fact_id) SELECT document_id, ord, text, md5(text), 0, 1,"
            " 'facts:generated', id FROM facts"
        )
        rows = conn.execute(
            "SELECT f.id, c.id FROM facts f JOIN chunks c ON c.fact_id = f.id ORDER BY f.id"
        ).fetchall()
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO potential_fact_emb_generated (fact_id, chunk_id, embedding)"
                " VALUES (%s, %s, %s)",
                [(f, c, v) for (f, c), v in zip(rows, vectors, strict=True)],
            )


def _every_pair(vectors: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Nearest neighbours the plain way: every similarity, in float64, sorted."""
    k = min(k, len(vectors) - 1)
    wide = vectors.astype(np.float64)
    sims = wide @ wide.T
    np.fill_diagonal(sims, -np.inf)
    order = np.argsort(-sims, axis=1, kind="stable")[:, :k]
    return order, np.take_along_axis(sims, order, axis=1).astype(np.float32)


def _stored_groups(url: str) -> set[frozenset[int]]:
    groups: dict[int, set[int]] = {}
    with psycopg.connect(url) as conn:
        for fact_id, group in conn.execute(
            "SELECT id, distilled_fact_id FROM facts WHERE restates_fact_id IS NULL"
        ):
            groups.setdefault(group, set()).add(fact_id)
    return {frozenset(members) for members in groups.values()}


def test_tiled_search_gives_the_groups_of_every_pair_compared(
    migrated_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = _config()
    with psycopg.connect(migrated_db, autocommit=True) as conn:
        model = clustering_model(conn, config)  # makes the model's tables
    _store_generated(migrated_db, 900, seed=17)
    # Tiles far smaller than the set: rows meet many tiles, first ones and later ones.
    monkeypatch.setattr(neighbours, "TILE", 64)
    monkeypatch.setattr(neighbours, "SAMPLE", 24)
    with psycopg.connect(migrated_db, autocommit=True) as conn:
        report = cluster_facts(conn, config, full=True)
    assert report.groups_of_several > 20  # there was grouping to get wrong
    stored = _stored_groups(migrated_db)

    settings = Settings.from_config(config)
    with psycopg.connect(migrated_db, autocommit=True) as conn:
        nodes, _ = store.load_nodes(conn, model)
    links = level1.restatements(nodes, settings.restate_threshold)
    representatives = [n for n in nodes if links[n.fact_id] is None]
    monkeypatch.setattr("garage.clusters.grow.nearest", _every_pair)
    reference = {
        frozenset(m.fact_id for m in g.members) for g in full_groups(representatives, settings)
    }
    assert stored == reference
