"""A small real corpus for the MCP tests, with a config file a spawned garage-mcp can read:
Python tutorial pages (documents), a CPython test module (code), and a chat thread stored as
the Messages ingest stores one (communication), embedded by the real MiniLM server."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from garage.config import GarageConfig
from garage.embed import embed
from garage.inference import EgressGuard, InferenceClient
from tests.conftest import LlamaServers, _with_database, llama_config
from tests.integration.ingest_helpers import run_ingest
from tests.integration.search_helpers import code, insert_thread, tutorial

PAGES = ["appetite", "interpreter", "controlflow", "errors"]


@dataclass(frozen=True)
class McpCorpus:
    url: str
    config: GarageConfig
    config_file: Path
    thread_id: int  # the chat thread's document id

    def config_with(self, path: Path, **sections: Any) -> Path:
        """Another config file for the same database, with some sections replaced."""
        raw = json.loads(self.config_file.read_text())
        raw.update(sections)
        path.write_text(json.dumps(raw))
        return path


def write_config(config: GarageConfig, url: str, path: Path) -> Path:
    raw = config.model_dump(mode="json")
    raw["database"]["url"] = url
    path.write_text(json.dumps(raw))
    return path


@contextmanager
def mcp_corpus(pg_server_url: str, llama: LlamaServers, root: Path) -> Iterator[McpCorpus]:
    from garage.db.migrate import ensure_migrated

    name = f"garage_test_mcp_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_server_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    url = _with_database(pg_server_url, name)
    try:
        ensure_migrated(url)
        tutorial(root / "docs", PAGES)
        code(root / "code")
        sources = [
            {"name": "docs", "roots": [str(root / "docs")], "default_author": "Python Docs Team"},
            {"name": "code", "roots": [str(root / "code")], "corpus_class": "code"},
        ]
        config = llama_config(
            llama, sources=sources, identity={"self_name": "Jane Doe"}
        ).model_copy(deep=True)
        config.database.url = url
        run_ingest(url, config, "docs")
        run_ingest(url, config, "code")
        with psycopg.connect(url, autocommit=True) as conn:
            thread_id = insert_thread(conn)
            with InferenceClient(EgressGuard.from_config(config)) as client:
                embed(conn, client, config)
        config_file = write_config(config, url, root / "garage.json")
        yield McpCorpus(url, config, config_file, thread_id)
    finally:
        with psycopg.connect(pg_server_url, autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


# Every tool the server lists, by name: a new tool is added here on purpose.
TOOLS = {
    "rag_search",
    "rag_get_document",
    "rag_list_sources",
    "rag_list_authors",
    "rag_stats",
    "rag_ask",
    "rag_agent",
    "rag_generate",
    "rag_list_facts",
    "rag_fact_stats",
    "rag_graph_labels",
    "rag_graph_find",
    "rag_graph_neighbors",
}
