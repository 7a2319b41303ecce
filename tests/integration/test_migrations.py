"""Migrations on a blank database of the real PostgreSQL 17 + pgvector + AGE server."""

from __future__ import annotations

import shutil
from pathlib import Path

import psycopg
import pytest

from garage.db import DatabaseError
from garage.db.graph import GRAPH_NAME
from garage.db.migrate import discover, migrate, schema_dir

EXPECTED_TABLES = {
    "authors",
    "bm25_corpus",
    "bm25_postings",
    "bm25_terms",
    "chunks",
    "cluster_runs",
    "distilled_facts",
    "documents",
    "embedding_backlog",
    "embedding_models",
    "embedding_runs",
    "fact_runs",
    "facts",
    "ingest_outcomes",
    "ingest_runs",
    "writer_locks",
    "ingest_seen",
    "schema_migrations",
    "sources",
}

EXPECTED_INDEXES = {
    "authors_name_email",
    "authors_pkey",
    "bm25_corpus_pkey",
    "bm25_postings_impact",
    "bm25_postings_pkey",
    "bm25_terms_pkey",
    "chunks_document_idx",
    "chunks_document_ord_idx",
    "chunks_fact_idx",
    "chunks_pkey",
    "chunks_text_sha256_idx",
    "chunks_tsv_idx",
    "cluster_runs_pkey",
    "distilled_facts_anchor_key_key",
    "distilled_facts_class_idx",
    "distilled_facts_pkey",
    "distilled_facts_statement_fts_idx",
    "documents_author_idx",
    "documents_corpus_class_idx",
    "documents_fts_idx",
    "documents_pkey",
    "documents_source_uri",
    "embedding_backlog_pkey",
    "embedding_models_name_key",
    "embedding_models_one_default_idx",
    "embedding_models_pkey",
    "embedding_models_slug_key",
    "embedding_runs_model_idx",
    "embedding_runs_pkey",
    "fact_runs_pkey",
    "facts_class_idx",
    "facts_distilled_idx",
    "facts_document_prompt_idx",
    "facts_key_idx",
    "facts_pkey",
    "facts_restates_idx",
    "facts_text_fts_idx",
    "ingest_outcomes_pkey",
    "ingest_runs_pkey",
    "ingest_runs_source_idx",
    "ingest_seen_pkey",
    "schema_migrations_pkey",
    "sources_name_key",
    "sources_pkey",
    "writer_locks_pkey",
}


def public_tables(conn: psycopg.Connection) -> set[str]:
    rows = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
    return {row[0] for row in rows}


def public_indexes(conn: psycopg.Connection) -> set[str]:
    rows = conn.execute("SELECT indexname FROM pg_indexes WHERE schemaname = 'public'")
    return {row[0] for row in rows}


def test_blank_database_gets_exact_tables_indexes_and_graph(blank_db: str) -> None:
    with psycopg.connect(blank_db, autocommit=True) as conn:
        assert public_tables(conn) == set()
        report = migrate(conn)  # type: ignore[arg-type]
        assert report.applied == [m.path.name for m in discover()]
        assert report.graph == "created"
        assert public_tables(conn) == EXPECTED_TABLES
        assert public_indexes(conn) == EXPECTED_INDEXES
        extensions = {row[0] for row in conn.execute("SELECT extname FROM pg_extension")}
        assert {"vector", "age"} <= extensions
        graphs = [row[0] for row in conn.execute("SELECT name FROM ag_catalog.ag_graph")]
        assert graphs == [GRAPH_NAME]
        recorded = conn.execute(
            "SELECT version, name, length(checksum) FROM schema_migrations ORDER BY version"
        ).fetchall()
        assert [(v, n) for v, n, _ in recorded] == [(m.version, m.name) for m in discover()]
        assert all(length == 64 for _, _, length in recorded)


def test_second_migrate_changes_nothing(migrated_db: str) -> None:
    with psycopg.connect(migrated_db, autocommit=True) as conn:
        before = conn.execute(
            "SELECT version, checksum, applied_at FROM schema_migrations ORDER BY version"
        ).fetchall()
        tables, indexes = public_tables(conn), public_indexes(conn)
        report = migrate(conn)  # type: ignore[arg-type]
        assert report.applied == []
        assert report.graph == "present"
        assert len(report.already) == len(before)
        after = conn.execute(
            "SELECT version, checksum, applied_at FROM schema_migrations ORDER BY version"
        ).fetchall()
        assert after == before
        assert public_tables(conn) == tables and public_indexes(conn) == indexes


def test_tampered_migration_is_refused(migrated_db: str, tmp_path: Path) -> None:
    copy = tmp_path / "schema"
    shutil.copytree(schema_dir(), copy)
    first = sorted(copy.glob("001_*.sql"))[0]
    first.write_text(first.read_text() + "\n-- edited after landing\n")
    with psycopg.connect(migrated_db, autocommit=True) as conn:
        with pytest.raises(DatabaseError, match=r"001_core\.sql: changed after it was applied"):
            migrate(conn, copy)  # type: ignore[arg-type]


def test_failing_migration_rolls_back_alone(migrated_db: str, tmp_path: Path) -> None:
    copy = tmp_path / "schema"
    shutil.copytree(schema_dir(), copy)
    (copy / "900_good.sql").write_text("CREATE TABLE probe_good (id int);")
    (copy / "901_bad.sql").write_text("CREATE TABLE probe_bad (id int); SELECT no_such_fn();")
    with psycopg.connect(migrated_db, autocommit=True) as conn:
        with pytest.raises(DatabaseError, match=r"901_bad\.sql: .*no_such_fn"):
            migrate(conn, copy)  # type: ignore[arg-type]
        tables = public_tables(conn)
        assert "probe_good" in tables and "probe_bad" not in tables
        versions = {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}
        assert 900 in versions and 901 not in versions
        # The lock was released: a later migrate (with the bad file gone) goes through.
        (copy / "901_bad.sql").unlink()
        assert migrate(conn, copy).applied == []  # type: ignore[arg-type]


def test_misnamed_migration_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "1_first.sql").write_text("SELECT 1;")
    with pytest.raises(DatabaseError, match="named NNN_name.sql"):
        discover(tmp_path)


def test_chunk_offsets_and_cascades_hold(migrated_db: str) -> None:
    with psycopg.connect(migrated_db, autocommit=True) as conn:
        source = conn.execute(
            "INSERT INTO sources (name, kind, corpus_class) VALUES ('s', 'files', 'document')"
            " RETURNING id"
        ).fetchone()[0]
        doc = conn.execute(
            "INSERT INTO documents (source_id, uri, corpus_class, content, source_sha256,"
            " content_sha256, size_bytes, mtime_ns, extractor, extractor_version)"
            " VALUES (%s, 'file:///a', 'document', 'hello world', 'x', 'y', 11, 1, 'text', 1)"
            " RETURNING id",
            (source,),
        ).fetchone()[0]
        conn.execute(
            "INSERT INTO chunks (document_id, ord, text, text_sha256, start_offset, end_offset,"
            " chunker) VALUES (%s, 0, 'hello world', 'h', 0, 11, 'recursive:1000/100')",
            (doc,),
        )
        matched = conn.execute(
            "SELECT count(*) FROM chunks WHERE tsv @@ to_tsquery('english', 'world')"
        ).fetchone()[0]
        assert matched == 1
        with pytest.raises(psycopg.errors.UniqueViolation):
            conn.execute(
                "INSERT INTO chunks (document_id, ord, text, text_sha256, start_offset,"
                " end_offset, chunker) VALUES (%s, 0, 'dup', 'd', 0, 3, 'recursive:1000/100')",
                (doc,),
            )
        conn.execute("DELETE FROM sources WHERE id = %s", (source,))
        assert conn.execute("SELECT count(*) FROM chunks").fetchone()[0] == 0


def test_models_registered_before_006_get_their_fact_vector_table(
    blank_db: str, tmp_path: Path
) -> None:
    """006 creates potential_fact_emb_<slug> (and its HNSW index) for every model registered
    before it; registration creates it for later ones."""
    before = tmp_path / "schema"
    before.mkdir()
    for migration in discover():
        if migration.version < 6:
            shutil.copy(migration.path, before / migration.path.name)
    with psycopg.connect(blank_db, autocommit=True) as conn:
        migrate(conn, before)  # type: ignore[arg-type]
        conn.execute(
            "INSERT INTO embedding_models (name, slug, provider, host, model_id, dimensions)"
            " VALUES ('old', 'old', 'llama_server', 'http://127.0.0.1:1', 'old', 8)"
        )
        migrate(conn)  # type: ignore[arg-type]
        assert "potential_fact_emb_old" in public_tables(conn)
        assert "pfe_old_hnsw" in public_indexes(conn)
        # 008 does the same for distilled facts' vectors.
        assert "fact_emb_old" in public_tables(conn)
        assert "fe_old_hnsw" in public_indexes(conn)
