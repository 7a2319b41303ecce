"""The connection every MCP tool call runs on: read-only, with a statement timeout, so no
argument can write to the corpus or hold a query open without end."""

from __future__ import annotations

import psycopg
import pytest

from garage.config import GarageConfig
from garage.db.runtime import STATEMENT_TIMEOUT_MS, Runtime


def test_tool_connections_are_read_only_and_time_limited(migrated_db: str) -> None:
    runtime = Runtime.from_config(GarageConfig.model_validate({"database": {"url": migrated_db}}))
    with runtime.reader() as conn:
        assert conn.execute("SHOW statement_timeout").fetchone() == {
            "statement_timeout": f"{STATEMENT_TIMEOUT_MS // 1000}s"
        }
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            conn.execute("DELETE FROM documents")
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            conn.execute(
                "INSERT INTO sources (name, kind, corpus_class) VALUES ('x', 'files', 'document')"
            )
        conn.execute("SET statement_timeout = 50")
        with pytest.raises(psycopg.errors.QueryCanceled):
            conn.execute("SELECT pg_sleep(2)")
