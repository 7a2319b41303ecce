"""What the fault suites share: a config for CLI runs against a database, running
`garage` to its end, and snapshots of everything ingest and embedding decide, compared as
sets against a clean run on a second database."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg

from tests.conftest import LlamaServers

ROOT = Path(__file__).resolve().parents[2]


def cli_env(tmp_path: Path, url: str, folder: Path, llama: LlamaServers | None) -> dict[str, str]:
    config: dict[str, Any] = {"sources": [{"name": "home", "roots": [str(folder)]}]}
    if llama is not None:
        config["embedding"] = {
            "default": llama.embed_model,
            "models": [
                {
                    "name": llama.embed_model,
                    "provider": "llama_server",
                    "host": llama.embed_url,
                    "model": llama.embed_model,
                    "dimensions": llama.embed_dimensions,
                }
            ],
        }
    return config_env(tmp_path, url, config, f"garage-{abs(hash(url))}.json")


def config_env(tmp_path: Path, url: str, config: dict[str, Any], name: str) -> dict[str, str]:
    """The environment of a `garage` process with ``config`` written to ``tmp_path/name``."""
    path = tmp_path / name
    path.write_text(json.dumps(config))
    return dict(
        os.environ,
        GARAGE_CONFIG=str(path),
        GARAGE_DATABASE_URL=url,
        GARAGE_DATA_DIR=str(tmp_path / "data"),
    )


def garage(*args: str) -> list[str]:
    return [sys.executable, "-m", "garage.cli", *args]


def run_to_end(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200)
    assert result.returncode in (0, 4), result.stderr[-3000:]  # 4: finished, some files failed
    return result


def scalar(url: str, query: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute(query).fetchone()
    return int(row[0]) if row and row[0] is not None else 0


def rows_so_far(url: str, table: str) -> int:
    """Rows in ``table``, 0 while it does not exist yet (embed creates a model's table on its
    first batch, which the first kill may come before)."""
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (table,)).fetchone()
        if not (row and row[0]):
            return 0
        counted = conn.execute(f"SELECT count(*) FROM {table}").fetchone()  # noqa: S608
    return int(counted[0]) if counted else 0


def snapshot(url: str) -> dict[str, Any]:
    """Everything ingest and embedding decide, as sets keyed on what survives a rebuild."""
    with psycopg.connect(url) as conn:

        def rows(query: str) -> set[tuple[Any, ...]]:
            return set(conn.execute(query).fetchall())

        return {
            "documents": rows(
                "SELECT uri, title, corpus_class, content_sha256, source_sha256, extractor,"
                " extractor_version, attribution, attribution_signal FROM documents"
            ),
            "chunks": rows(
                "SELECT d.uri, c.ord, c.text_sha256, c.start_offset, c.end_offset, c.heading,"
                " c.chunker, c.modality FROM chunks c JOIN documents d ON d.id = c.document_id"
            ),
            "postings": rows(
                "SELECT d.uri, c.ord, p.term, p.tf, p.dl FROM bm25_postings p"
                " JOIN chunks c ON c.id = p.chunk_id JOIN documents d ON d.id = c.document_id"
            ),
            "corpus": rows("SELECT sum(chunks), sum(tokens) FROM bm25_corpus"),
            "outcomes": rows("SELECT uri, outcome, reason FROM ingest_outcomes"),
            "orphans": rows(
                "SELECT d.uri FROM documents d WHERE NOT EXISTS"
                " (SELECT 1 FROM chunks c WHERE c.document_id = d.id)"
            ),
        }


def vectors(url: str, table: str) -> dict[tuple[str, int], list[float]]:
    with psycopg.connect(url) as conn:
        found = conn.execute(
            f"SELECT d.uri, c.ord, e.embedding::text FROM {table} e"  # noqa: S608 - a test's table
            " JOIN chunks c ON c.id = e.chunk_id JOIN documents d ON d.id = c.document_id"
        ).fetchall()
    return {(uri, ord_): json.loads(text) for uri, ord_, text in found}
