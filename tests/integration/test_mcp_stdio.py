"""The MCP server as a client sees it: the SDK's own client spawns `garage-mcp` over stdio,
against a real PostgreSQL corpus embedded by the real MiniLM server, with SmolLM2 as the chat
model. Lists the tools, calls each, checks results against the published output schemas, and
sends hostile arguments that must come back as MCP errors while the server keeps serving."""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import psycopg
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.conftest import LlamaServers
from tests.integration.mcp_helpers import TOOLS, McpCorpus, mcp_corpus

GARAGE_MCP = Path(sys.executable).with_name("garage-mcp")


@pytest.fixture(scope="module")
def corpus(
    pg_server_url: str, llama: LlamaServers, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[McpCorpus]:
    with mcp_corpus(pg_server_url, llama, tmp_path_factory.mktemp("mcp")) as built:
        yield built


def run_session(
    config_file: Path, log: Path, body: Callable[[ClientSession], Awaitable[Any]]
) -> Any:
    """Spawn garage-mcp as an MCP client would, and run ``body`` in an initialized session."""
    params = StdioServerParameters(command=str(GARAGE_MCP), env={"GARAGE_CONFIG": str(config_file)})

    async def main() -> Any:
        with log.open("w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    return await body(session)

    return anyio.run(main)


def _text(result: Any) -> str:
    """The first text block of a tool result ("" when there is none)."""
    return next((block.text for block in result.content if block.type == "text"), "")


def _validate(tool: Any, result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert result.structured_content is not None
    jsonschema.validate(result.structured_content, tool.output_schema)
    # The text content carries the same result for clients that read only text.
    assert json.loads(_text(result)) == result.structured_content
    return result.structured_content


def test_tools_are_listed_with_schemas_and_each_answers(corpus: McpCorpus, tmp_path: Path) -> None:
    async def body(session: ClientSession) -> dict[str, Any]:
        listed = {tool.name: tool for tool in (await session.list_tools()).tools}
        out: dict[str, Any] = {"tools": listed}
        calls: dict[str, tuple[str, dict[str, Any]]] = {
            "search": ("rag_search", {"query": "train tickets to Lisbon", "limit": 5}),
            "code": ("rag_search", {"query": "bisect insort", "corpus_classes": ["code"]}),
            "sources": ("rag_list_sources", {}),
            "authors": ("rag_list_authors", {"limit": 5}),
            "stats": ("rag_stats", {}),
            "generate": ("rag_generate", {"prompt": "Say hello.", "max_tokens": 16}),
            "ask": ("rag_ask", {"question": "What are exceptions?", "limit": 2, "max_tokens": 48}),
            "agent": ("rag_agent", {"question": "What is an exception?", "max_steps": 1}),
        }
        for key, (name, arguments) in calls.items():
            out[key] = _validate(listed[name], await session.call_tool(name, arguments))
        hit = out["code"]["hits"][0]
        document = await session.call_tool(
            "rag_get_document", {"document_id": hit["document_id"], "start": 10, "length": 50}
        )
        out["document"] = _validate(listed["rag_get_document"], document)
        by_uri = await session.call_tool("rag_get_document", {"uri": hit["uri"], "length": 5})
        out["by_uri"] = _validate(listed["rag_get_document"], by_uri)
        return out

    out = run_session(corpus.config_file, tmp_path / "stderr.log", body)
    tools = out["tools"]
    assert set(tools) == TOOLS
    for tool in tools.values():
        # Written for small models: the description opens with one sentence saying what it does.
        first = tool.description.split("\n")[0]
        assert first.endswith(".") and len(first) < 120, first
        assert tool.input_schema["type"] == "object"
        assert tool.output_schema["type"] == "object"
        assert tool.annotations.read_only_hint is True
    # Every size a caller controls has a bound in the schema.
    assert tools["rag_search"].input_schema["properties"]["limit"]["maximum"] == 100
    assert tools["rag_get_document"].input_schema["properties"]["length"]["maximum"] == 100_000
    assert tools["rag_list_authors"].input_schema["properties"]["limit"]["maximum"] == 1000
    assert tools["rag_search"].input_schema["required"] == ["query"]

    hits = out["search"]["hits"]
    assert out["search"]["mode"] == "hybrid" and hits
    assert hits[0]["document_id"] == corpus.thread_id
    assert {h["corpus_class"] for h in out["code"]["hits"]} == {"code"}
    assert {s["name"] for s in out["sources"]["sources"]} == {"docs", "code", "chats"}
    assert out["authors"]["authors"][0]["name"] == "Python Docs Team"
    assert out["stats"]["documents"] == 7
    assert out["stats"]["embedding_models"][0]["vectors"] == out["stats"]["chunks"]

    document = out["document"]
    with psycopg.connect(corpus.url) as conn:
        row = conn.execute(
            "SELECT content FROM documents WHERE id = %s", (document["document_id"],)
        ).fetchone()
    assert row is not None
    assert document["content"] == row[0][10:60]
    assert (document["start"], document["end"], document["total_chars"]) == (10, 60, len(row[0]))
    assert document["truncated"] is True and document["corpus_class"] == "code"
    assert out["by_uri"]["document_id"] == document["document_id"]
    assert out["by_uri"]["content"] == row[0][:5]

    assert out["generate"]["text"] and out["generate"]["model"] == "smollm2-135m-instruct"
    ask = out["ask"]
    assert ask["answer"] and 1 <= len(ask["citations"]) <= 2
    assert [c["number"] for c in ask["citations"]] == list(range(1, len(ask["citations"]) + 1))
    agent = out["agent"]
    assert agent["steps"][0]["tool"] == "rag_search" and agent["steps"][0]["preset"] is True
    assert agent["citations"] and agent["answer"]


HOSTILE: list[tuple[str, dict[str, Any], str]] = [
    ("rag_search", {"query": "x", "limit": 10**9}, "less than or equal to 100"),
    ("rag_search", {"query": "x", "limit": -1}, "greater than or equal to 1"),
    ("rag_search", {"query": "x", "limit": "ten"}, "valid integer"),
    ("rag_search", {"query": ""}, "at least 1 character"),
    ("rag_search", {"query": "x" * 20_000}, "at most 10000 characters"),
    ("rag_search", {"limit": 5}, "query"),
    ("rag_search", {"query": "x", "sources": "docs"}, "valid list"),
    ("rag_search", {"query": "x", "corpus_classes": ["secrets"]}, "corpus_classes"),
    ("rag_search", {"query": "x", "date_from": "last tuesday"}, "not a date"),
    ("rag_search", {"query": "x", "mode": "sql"}, "mode"),
    ("rag_search", {"query": "x", "sources": ["d"] * 51}, "at most 50 items"),
    ("rag_get_document", {"document_id": -5}, "greater than or equal to 1"),
    ("rag_get_document", {"document_id": 2**70}, "less than or equal to"),
    ("rag_get_document", {"document_id": 987654321}, "no document with id 987654321"),
    ("rag_get_document", {"document_id": "1; DROP TABLE documents"}, "valid integer"),
    ("rag_get_document", {"uri": "' OR 1=1 --"}, "no document with uri"),
    ("rag_get_document", {}, "either document_id or uri"),
    ("rag_get_document", {"document_id": 1, "uri": "x"}, "either document_id or uri"),
    ("rag_get_document", {"document_id": 1, "start": -1}, "greater than or equal to 0"),
    ("rag_get_document", {"document_id": 1, "start": 10**12}, "less than or equal to"),
    ("rag_get_document", {"document_id": 1, "length": 10**9}, "less than or equal to 100000"),
    ("rag_list_authors", {"limit": 10**6}, "less than or equal to 1000"),
    ("rag_list_authors", {"limit": 0}, "greater than or equal to 1"),
    ("rag_generate", {"prompt": "x" * 60_000}, "at most 50000 characters"),
    ("rag_ask", {"question": "x", "limit": 500}, "less than or equal to 20"),
    ("rag_agent", {"question": "x", "max_steps": 10**6}, "less than or equal to 20"),
    ("rag_agent", {"question": "x", "search_first": "maybe"}, "valid boolean"),
    ("rag_no_such_tool", {}, "rag_no_such_tool"),
]


def test_hostile_arguments_are_mcp_errors_and_the_server_keeps_serving(
    corpus: McpCorpus, tmp_path: Path
) -> None:
    async def body(session: ClientSession) -> dict[str, Any]:
        errors = []
        for name, arguments, _ in HOSTILE:
            result = await session.call_tool(name, arguments)
            errors.append((result.is_error, _text(result)))
        injected = await session.call_tool(
            "rag_search", {"query": "'; DROP TABLE documents; --", "sources": ["docs' OR '1'='1"]}
        )
        past_end = await session.call_tool(
            "rag_get_document", {"document_id": corpus.thread_id, "start": 10_000}
        )
        stats = await session.call_tool("rag_stats", {})
        return {"errors": errors, "injected": injected, "past_end": past_end, "stats": stats}

    out = run_session(corpus.config_file, tmp_path / "stderr.log", body)
    for (name, arguments, expected), (is_error, text) in zip(HOSTILE, out["errors"], strict=True):
        assert is_error, (name, arguments, text)
        assert expected in text, (name, arguments, text)
    # SQL in strings is data: it matches nothing and changes nothing.
    assert not out["injected"].is_error
    assert out["injected"].structured_content["hits"] == []
    assert out["past_end"].is_error and "past the end" in _text(out["past_end"])
    assert out["stats"].structured_content["documents"] == 7
    # No traceback reached the client's stderr log: every refusal was an answer, not a crash.
    assert "Traceback" not in (tmp_path / "stderr.log").read_text()


def test_garage_mcp_without_a_usable_database_says_so(tmp_path: Path) -> None:
    config = tmp_path / "garage.json"
    config.write_text(json.dumps({"database": {"url": "postgresql://nobody@127.0.0.1:9/none"}}))
    import subprocess

    done = subprocess.run(
        [str(GARAGE_MCP)],
        env={"GARAGE_CONFIG": str(config), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1
    assert done.stderr.startswith("garage-mcp: cannot connect to PostgreSQL")
    assert done.stdout == ""  # stdout belongs to the protocol
