"""Chunks written with COPY, and the BM25 statistics their statement-level trigger keeps, are the
same chunk for chunk as the rows the per-row INSERT path wrote under migration 004's trigger.

The reference is that older path, kept here: one INSERT per chunk (``executemany``), with 004's
``bm25_chunks_inserted`` put back in its database. Both databases ingest the same real files
(the Python documentation's reStructuredText sources and standard-library modules), then the
same edits and a deletion, and every chunk column, every posting and the corpus totals must
match after each run.
"""

from __future__ import annotations

import re
import shutil
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.types.json import Jsonb

from garage.db.migrate import ensure_migrated, schema_dir
from garage.ingest import store
from tests.conftest import _with_database
from tests.integration.ingest_helpers import make_config, run_ingest
from tests.material import material

SOURCES = "usr/share/doc/python3.11-doc/html/_sources"


def _per_row_insert(
    conn: psycopg.Connection[Any], document_id: int, chunks: Sequence[store.NewChunk]
) -> None:
    """What store_document did before COPY: one INSERT statement per chunk."""
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO chunks (document_id, ord, text, text_sha256, start_offset,"
            " end_offset, heading, chunker, modality, metadata)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
            [
                (
                    document_id,
                    c.ord,
                    c.text,
                    c.text_sha256,
                    c.start,
                    c.end,
                    c.heading,
                    c.chunker,
                    c.modality,
                    Jsonb(c.metadata),
                )
                for c in chunks
            ],
        )


def _trigger_of_004() -> str:
    """Migration 004's ``bm25_chunks_inserted``, exactly as that file defines it."""
    text = (schema_dir() / "004_bm25.sql").read_text()
    found = re.search(r"CREATE FUNCTION bm25_chunks_inserted\(\).*?\n\$\$;", text, flags=re.DOTALL)
    assert found is not None
    return found.group(0).replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1)


@pytest.fixture
def reference_db(pg_server_url: str) -> Iterator[str]:
    name = f"garage_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_server_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    url = _with_database(pg_server_url, name)
    try:
        ensure_migrated(url)
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(_trigger_of_004())  # type: ignore[arg-type]
        yield url
    finally:
        with psycopg.connect(pg_server_url, autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


def _chunks(url: str) -> dict[tuple[str, int], tuple[Any, ...]]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT d.uri, c.ord, c.text, c.text_sha256, c.start_offset, c.end_offset,"
            " c.heading, c.chunker, c.modality, c.metadata, c.tsv::text"
            " FROM chunks c JOIN documents d ON d.id = c.document_id"
        ).fetchall()
    return {(row[0], row[1]): row[2:] for row in rows}


def _postings(url: str) -> dict[tuple[str, int, str], tuple[int, int]]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT d.uri, c.ord, p.term, p.tf, p.dl FROM bm25_postings p"
            " JOIN chunks c ON c.id = p.chunk_id JOIN documents d ON d.id = c.document_id"
        ).fetchall()
        orphans = conn.execute(
            "SELECT count(*) FROM bm25_postings p"
            " WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.id = p.chunk_id)"
        ).fetchone()
    assert orphans == (0,)
    return {(uri, ord_, term): (tf, dl) for uri, ord_, term, tf, dl in rows}


def _corpus(url: str) -> tuple[int, int]:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT sum(chunks), sum(tokens) FROM bm25_corpus").fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def _same(copy_url: str, reference_url: str) -> int:
    chunks = _chunks(copy_url)
    assert chunks == _chunks(reference_url)
    assert _postings(copy_url) == _postings(reference_url)
    assert _corpus(copy_url) == _corpus(reference_url) == (len(chunks), _corpus(copy_url)[1])
    return len(chunks)


def _tree(root: Path) -> Path:
    root.mkdir()
    docs = sorted((material("python3.11-doc") / SOURCES / "library").glob("*.rst.txt"))[:40]
    for path in docs:
        shutil.copyfile(path, root / (path.name.removesuffix(".rst.txt") + ".md"))
    for name in ("json/decoder.py", "json/encoder.py", "textwrap.py", "shlex.py", "csv.py"):
        shutil.copyfile(Path(shutil.__file__).parent / name, root / Path(name).name)
    # The same text twice: equal chunks in two documents.
    (root / "copy-of-textwrap.py").write_bytes((root / "textwrap.py").read_bytes())
    return root


def test_copy_writes_the_chunks_and_statistics_the_per_row_path_wrote(
    migrated_db: str, reference_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = _tree(tmp_path / "tree")
    config = make_config(tmp_path, [{"name": "docs", "roots": [str(tree)]}])

    def same_after_ingest() -> int:
        for url in (migrated_db, reference_db):
            with monkeypatch.context() as patch:
                if url == reference_db:
                    patch.setattr(store, "_copy_chunks", _per_row_insert)
                report = run_ingest(url, config, "docs")
            assert report.failed == 0, report.summary()
        return _same(migrated_db, reference_db)

    first = same_after_ingest()
    assert first > 500

    # Edits that keep most chunks and replace some, a file gone, a file new.
    pages = sorted(tree.glob("*.md"))
    for page in pages[:5]:
        text = page.read_text()
        middle = len(text) // 2
        page.write_text(text[:middle] + "\n\nA paragraph written in between.\n\n" + text[middle:])
    pages[5].unlink()
    (tree / "notes.md").write_text("# Notes\n\n" + pages[6].read_text()[:3000])
    second = same_after_ingest()
    assert second != first
