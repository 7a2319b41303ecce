"""`garage mcp-serve`: the MCP server over streamable HTTP on loopback, behind a bearer token,
reached by the SDK's own streamable HTTP client; and the bindings it refuses."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from click.testing import CliRunner
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from garage.cli import cli
from garage.loopback import TokenRequired
from garage.mcp.http import check_binding
from tests.conftest import LlamaServers
from tests.integration.mcp_helpers import TOOLS, McpCorpus, mcp_corpus
from tests.servers import free_port

GARAGE = Path(sys.executable).with_name("garage")
TOKEN = "test-token-0123456789abcdef"


@pytest.fixture(scope="module")
def corpus(
    pg_server_url: str, llama: LlamaServers, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[McpCorpus]:
    with mcp_corpus(pg_server_url, llama, tmp_path_factory.mktemp("mcp-http")) as built:
        yield built


@pytest.fixture
def served(corpus: McpCorpus, tmp_path: Path) -> Iterator[str]:
    """`garage mcp-serve` on a free loopback port with a token; yields the endpoint URL."""
    port = free_port()
    env = os.environ | {"GARAGE_CONFIG": str(corpus.config_file), "GARAGE_MCP_TOKEN": TOKEN}
    log = (tmp_path / "serve.log").open("w")
    process = subprocess.Popen(
        [str(GARAGE), "mcp-serve", "--port", str(port)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"mcp-serve did not start:\n{(tmp_path / 'serve.log').read_text()}")
                time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


def test_requests_without_the_token_get_401(served: str) -> None:
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"},
        },
    }
    headers = {"Accept": "application/json, text/event-stream"}
    with httpx.Client(trust_env=False) as http:
        for auth in (None, "Bearer wrong-token-0123456789", f"Basic {TOKEN}", TOKEN):
            sent = headers | ({"Authorization": auth} if auth else {})
            response = http.post(served, json=initialize, headers=sent)
            assert response.status_code == 401, auth
            assert response.headers["www-authenticate"].startswith("Bearer")
        response = http.post(
            served, json=initialize, headers=headers | {"Authorization": f"Bearer {TOKEN}"}
        )
        assert response.status_code == 200


def test_sdk_client_with_the_token_lists_and_calls_tools(served: str, corpus: McpCorpus) -> None:
    async def main() -> dict[str, Any]:
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}) as http:
            async with streamable_http_client(served, http_client=http) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    tools = [tool.name for tool in (await session.list_tools()).tools]
                    search = await session.call_tool(
                        "rag_search", {"query": "night train Madrid", "limit": 3}
                    )
                    refused = await session.call_tool("rag_get_document", {"document_id": 0})
                    return {"tools": tools, "search": search, "refused": refused}

    out = anyio.run(main)
    assert set(out["tools"]) == TOOLS
    assert not out["search"].is_error
    assert out["search"].structured_content["hits"][0]["document_id"] == corpus.thread_id
    assert out["refused"].is_error


def test_bindings_beyond_loopback_need_a_token(tmp_path: Path) -> None:
    check_binding("127.0.0.1", None)
    check_binding("::1", None)
    check_binding("0.0.0.0", TOKEN)
    for host, token in (("0.0.0.0", None), ("192.168.1.20", None), ("127.0.0.1", "short")):
        with pytest.raises(TokenRequired):
            check_binding(host, token)
    env = {"GARAGE_CONFIG": str(tmp_path / "none.json")}
    result = CliRunner().invoke(cli, ["mcp-serve", "--host", "0.0.0.0"], env=env)
    assert result.exit_code == 1 and "needs a bearer token" in result.output
    result = CliRunner().invoke(
        cli, ["mcp-serve", "--host", "0.0.0.0"], env=env | {"GARAGE_MCP_TOKEN": "abc"}
    )
    assert result.exit_code == 1 and "at least 16 characters" in result.output
