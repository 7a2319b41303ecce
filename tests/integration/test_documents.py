"""Reading one document and its chunks over a real database: a long note, ingested as the CLI
ingests it (no model needed)."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from garage.config import GarageConfig
from garage.ingest import ingest_source
from garage.search.documents import DocumentNotFound, document_chunks, get_document

PARAGRAPH = (
    "The harbour office keeps the ferry timetable for the winter months, and the crew checks "
    "the moorings every morning before the first crossing leaves the quay. "
)


def test_a_document_and_its_chunks(migrated_db: str, tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "harbour.md").write_text("# Harbour\n\n" + "\n\n".join([PARAGRAPH * 3] * 12))
    config = GarageConfig.model_validate(
        {"database": {"url": migrated_db}, "sources": [{"name": "notes", "roots": [str(folder)]}]}
    )
    with psycopg.connect(migrated_db, autocommit=True) as conn:
        ingest_source(conn, config, config.source("notes"))
        [document_id] = [row[0] for row in conn.execute("SELECT id FROM documents")]
        document = get_document(conn, document_id=document_id, length=100_000)
        assert get_document(conn, uri=document.uri).document_id == document_id
        chunks = document_chunks(conn, document_id)
        # Every content chunk, in order, each where its offsets say in the document's text.
        assert document.chunks == len(chunks) > 1
        assert [c.ord for c in chunks] == list(range(len(chunks)))
        for chunk in chunks:
            assert 0 <= chunk.start_offset < chunk.end_offset <= document.total_chars
            assert chunk.text.strip()[:40] in document.content
        with pytest.raises(DocumentNotFound):
            document_chunks(conn, document_id + 1000)
