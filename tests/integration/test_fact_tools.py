"""rag_list_facts and rag_fact_stats over a real database: header facts of a real mail (no
model needed) and the schema's bounds."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest
from mcp.server.mcpserver.exceptions import ToolError

from garage.ask.agent_protocol import AgentTool
from garage.config import GarageConfig
from garage.db.runtime import Runtime
from garage.facts import enrich_facts
from garage.ingest import ingest_source
from garage.mcp.facts import FactTools
from tests.integration.facts_helpers import write_folder


@pytest.fixture
def tools(migrated_db: str, tmp_path: Path) -> FactTools:
    folder = write_folder(tmp_path / "mixed")
    config = GarageConfig.model_validate(
        {"database": {"url": migrated_db}, "sources": [{"name": "mixed", "roots": [str(folder)]}]}
    )
    with psycopg.connect(migrated_db, autocommit=True) as conn:
        ingest_source(conn, config, config.source("mixed"))
        enrich_facts(conn, config, prompt_names=["metadata"])
    return FactTools(Runtime(config, migrated_db))


def test_list_and_stats(tools: FactTools) -> None:
    listed = tools.rag_list_facts(classes=["recipient"], context_chars=10)
    assert listed.total == 2 and {f.fact_class for f in listed.facts} == {"recipient"}
    fact = listed.facts[0]
    assert fact.corpus_class == "communication" and len(fact.before) <= 10
    assert tools.rag_list_facts(text="Lisbon").facts[0].fact_class == "subject"
    assert tools.rag_list_facts(text="example.co", substring=True).total == 1
    stats = tools.rag_fact_stats()
    assert stats.facts == 4 and stats.by_prompt == {"metadata": 4}
    assert {(c.fact_class, c.facts) for c in stats.by_source_and_class} == {
        ("sender", 1),
        ("recipient", 2),
        ("subject", 1),
    }


def test_bounds_are_in_the_schema(tools: FactTools) -> None:
    # Validated as tools/call validates them: out-of-range arguments never reach a query.
    tool = AgentTool.of(tools.rag_list_facts)
    with pytest.raises(ToolError):
        tool.call({"limit": 100_000})
    with pytest.raises(ToolError):
        tool.call({"classes": ["x"] * 21})
