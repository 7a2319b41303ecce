"""The index's invariants, each one query: what the asset checks guard.

Foreign keys with ``ON DELETE CASCADE`` already forbid most of these states; the checks are
there for what keys cannot see (a restore from a partial dump, a table created by hand, a
replica with triggers off) and to say so in the UI, where a person looks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql

from garage.embed.registry import RegisteredModel


@dataclass(frozen=True)
class Finding:
    passed: bool
    count: int  # offending rows (or models)
    detail: str  # one line a person can act on
    examples: list[str]


def orphan_chunks(conn: psycopg.Connection[Any]) -> Finding:
    """No chunk without its document."""
    rows = conn.execute(
        "SELECT c.id, c.document_id FROM chunks c"
        " WHERE NOT EXISTS (SELECT 1 FROM documents d WHERE d.id = c.document_id)"
        " ORDER BY c.id LIMIT 1000"
    ).fetchall()
    examples = [f"chunk {_at(r, 0)} -> missing document {_at(r, 1)}" for r in rows[:10]]
    return Finding(
        not rows,
        len(rows),
        f"{len(rows)} chunk(s) without a document" if rows else "every chunk has its document",
        examples,
    )


def _at(row: Any, index: int) -> Any:
    # Works for tuple rows and dict rows alike.
    return row[index] if isinstance(row, tuple) else list(row.values())[index]


def _registry(conn: psycopg.Connection[Any]) -> list[tuple[str, str, int]]:
    rows = conn.execute("SELECT name, slug, dimensions FROM embedding_models ORDER BY name")
    return [(_at(r, 0), _at(r, 1), int(_at(r, 2))) for r in rows.fetchall()]


def _table_exists(conn: psycopg.Connection[Any], table: str) -> bool:
    row = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (table,)).fetchone()
    return bool(row and _at(row, 0))


def orphan_vectors(conn: psycopg.Connection[Any]) -> Finding:
    """No vector, in any registered model's table, for a chunk that no longer exists."""
    problems: list[str] = []
    total = 0
    for name, slug, _ in _registry(conn):
        table = f"emb_{slug}"
        if not _table_exists(conn, table):
            continue  # the dimension check reports a missing table
        row = conn.execute(
            sql.SQL(
                "SELECT count(*) FROM {} e WHERE NOT EXISTS"
                " (SELECT 1 FROM chunks c WHERE c.id = e.chunk_id)"
            ).format(sql.Identifier(table))
        ).fetchone()
        count = int(_at(row, 0)) if row else 0
        if count:
            total += count
            problems.append(f"{table} ({name}): {count} vector(s) for missing chunks")
    return Finding(
        not problems,
        total,
        "; ".join(problems) if problems else "every vector belongs to a chunk",
        problems,
    )


def table_dimensions(conn: psycopg.Connection[Any], table: str) -> int | None:
    """The declared dimension of ``table.embedding`` (pgvector keeps it as the type modifier)."""
    row = conn.execute(
        "SELECT a.atttypmod FROM pg_attribute a"
        " WHERE a.attrelid = to_regclass(%s) AND a.attname = 'embedding' AND NOT a.attisdropped",
        (table,),
    ).fetchone()
    if row is None:
        return None
    typmod = int(_at(row, 0))
    return typmod if typmod > 0 else None


def embedding_dimensions(conn: psycopg.Connection[Any]) -> Finding:
    """Each registered model's ``emb_<slug>.embedding`` has the registry's dimension."""
    problems: list[str] = []
    for name, slug, dimensions in _registry(conn):
        table = f"emb_{slug}"
        if not _table_exists(conn, table):
            problems.append(f"{name}: table {table} is missing")
            continue
        declared = table_dimensions(conn, table)
        if declared != dimensions:
            problems.append(
                f"{name}: {table}.embedding is vector({declared}), the registry says {dimensions}"
            )
    return Finding(
        not problems,
        len(problems),
        "; ".join(problems) if problems else "every embedding table matches the registry",
        problems,
    )


def last_run_completed(conn: psycopg.Connection[Any], source: str) -> Finding:
    """The source's latest ingest run finished and walked the whole source."""
    row = conn.execute(
        "SELECT r.id, r.completed, r.finished_at, r.note FROM ingest_runs r"
        " JOIN sources s ON s.id = r.source_id WHERE s.name = %s"
        " ORDER BY r.started_at DESC, r.id DESC LIMIT 1",
        (source,),
    ).fetchone()
    if row is None:
        return Finding(False, 0, f"source {source!r} has no ingest run yet", [])
    run_id, completed, finished_at, note = (_at(row, i) for i in range(4))
    if finished_at is None:
        return Finding(False, 1, f"ingest run {run_id} of {source!r} never finished", [])
    if not completed:
        why = f" ({note})" if note else " (a --limit, or an interrupted walk)"
        return Finding(False, 1, f"ingest run {run_id} of {source!r} did not complete{why}", [])
    if note:
        return Finding(False, 1, f"ingest run {run_id} of {source!r}: {note}", [])
    return Finding(True, 0, f"ingest run {run_id} of {source!r} completed", [])


def facts_without_vectors(conn: psycopg.Connection[Any], model: RegisteredModel) -> Finding:
    """Every potential fact has a vector under ``model``, the clustering model. Clustering
    reads only the facts that have one, so a fact without is missing from the distilled facts
    and the graph, and nothing else says so."""
    if not _table_exists(conn, model.fact_table):
        row = conn.execute("SELECT count(*) FROM facts").fetchone()
        count = int(_at(row, 0)) if row else 0
        detail = f"{model.fact_table} is missing: register {model.name} (`garage models list` does)"
        return Finding(False, count, f"{count} potential fact(s) have no vector; {detail}", [])
    rows = conn.execute(
        sql.SQL(
            "SELECT s.name, count(*) FROM facts f JOIN documents d ON d.id = f.document_id"
            " JOIN sources s ON s.id = d.source_id"
            " WHERE NOT EXISTS (SELECT 1 FROM {} p WHERE p.fact_id = f.id)"
            " GROUP BY s.name ORDER BY s.name"
        ).format(sql.Identifier(model.fact_table))
    ).fetchall()
    by_source = {str(_at(r, 0)): int(_at(r, 1)) for r in rows}
    total = sum(by_source.values())
    if not total:
        return Finding(
            True, 0, f"every potential fact has a vector in {model.fact_table} ({model.name})", []
        )
    sources = ", ".join(f"{name}: {count}" for name, count in by_source.items())
    return Finding(
        False,
        total,
        f"{total} potential fact(s) have no vector in {model.fact_table} ({model.name}, the "
        f"clustering model), so clustering would leave them out; materialize "
        f"{model.fact_table} for their sources ({sources})",
        [f"{name}: {count} fact(s) without a vector" for name, count in by_source.items()],
    )
