"""`garage mcp-serve`: the MCP server over streamable HTTP on loopback, behind a bearer token,
reached by the SDK's own streamable HTTP client; and the bindings it refuses."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
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


@contextmanager
def serving(env: dict[str, str], log_file: Path) -> Iterator[str]:
    """`garage mcp-serve` on a free loopback port with ``env``; yields the endpoint URL."""
    port = free_port()
    with log_file.open("w") as log:
        process = subprocess.Popen(
            [str(GARAGE), "mcp-serve", "--port", str(port)],
            env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        url = f"http://127.0.0.1:{port}/mcp"
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    with socket.create_connection(("127.0.0.1", port), timeout=1):
                        break
                except OSError:
                    if process.poll() is not None or time.monotonic() > deadline:
                        pytest.fail(f"mcp-serve did not start:\n{log_file.read_text()}")
                    time.sleep(0.2)
            yield url
        finally:
            process.terminate()
            process.wait(timeout=30)


@pytest.fixture
def served(corpus: McpCorpus, tmp_path: Path) -> Iterator[str]:
    """`garage mcp-serve` with the token given in GARAGE_MCP_TOKEN."""
    env = os.environ | {"GARAGE_CONFIG": str(corpus.config_file), "GARAGE_MCP_TOKEN": TOKEN}
    with serving(env, tmp_path / "serve.log") as url:
        yield url


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


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"},
    },
}

# Run as another local account: read the owner's token file, then ask the server without it.
PROBE = """
import json, sys, urllib.error, urllib.request
token_file, url = sys.argv[1], sys.argv[2]
try:
    open(token_file).read()
    print("READ")
except PermissionError:
    print("unreadable")
request = urllib.request.Request(url, data=sys.argv[3].encode(), method="POST", headers={
    "Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
try:
    print(urllib.request.urlopen(request, timeout=30).status)
except urllib.error.HTTPError as error:
    print(error.code)
"""


@pytest.fixture
def open_data_dir() -> Iterator[Path]:
    """A data folder every account may pass through (pytest's tmp_path is 0700, which would
    hide the token from other accounts whatever the token file's own mode)."""
    folder = Path(tempfile.mkdtemp(prefix="garage-mcp-", dir="/tmp"))
    folder.chmod(0o755)
    yield folder / "data"
    shutil.rmtree(folder, ignore_errors=True)


def test_on_loopback_too_only_the_owners_token_is_served(
    corpus: McpCorpus, open_data_dir: Path, tmp_path: Path, other_account: str
) -> None:
    env = os.environ | {
        "GARAGE_CONFIG": str(corpus.config_file),
        "GARAGE_DATA_DIR": str(open_data_dir),
    }
    env.pop("GARAGE_MCP_TOKEN", None)
    with serving(env, tmp_path / "serve.log") as url:
        token_file = open_data_dir / "secrets" / "mcp.token"
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        assert stat.S_IMODE(token_file.parent.stat().st_mode) == 0o700
        assert stat.S_IMODE(open_data_dir.stat().st_mode) & 0o005  # others pass the data folder
        token = token_file.read_text().strip()
        assert len(token) >= 43  # 32 random bytes
        assert token not in (tmp_path / "serve.log").read_text()  # named by its file, not shown
        printed = subprocess.run(
            [str(GARAGE), "mcp", "token"], env=env, capture_output=True, text=True, check=True
        ).stdout.strip()
        assert printed == token

        headers = {"Accept": "application/json, text/event-stream"}
        wrong = token[:-1] + ("A" if token[-1] != "A" else "B")
        with httpx.Client(trust_env=False) as http:
            for auth in (None, f"Bearer {wrong}", token):
                sent = headers | ({"Authorization": auth} if auth else {})
                assert http.post(url, json=INITIALIZE, headers=sent).status_code == 401, auth
            sent = headers | {"Authorization": f"Bearer {token}"}
            assert http.post(url, json=INITIALIZE, headers=sent).status_code == 200

        account = pwd.getpwnam(other_account)
        probe = subprocess.run(
            ["setpriv", f"--reuid={account.pw_uid}", f"--regid={account.pw_gid}", "--clear-groups",
             sys.executable, "-c", PROBE, str(token_file), url, json.dumps(INITIALIZE)],
            capture_output=True, text=True, timeout=60, cwd="/",
            env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"},
        )  # fmt: skip
        assert probe.returncode == 0, probe.stderr[-2000:]
        assert probe.stdout.split() == ["unreadable", "401"]

    # A new token: the file's changes, and the old one is no longer what a new server asks for.
    rotated = subprocess.run(
        [str(GARAGE), "mcp", "token", "--rotate"], env=env, capture_output=True, text=True,
        check=True,
    ).stdout.strip()  # fmt: skip
    assert rotated != token and token_file.read_text().strip() == rotated
    with serving(env, tmp_path / "serve2.log") as url, httpx.Client(trust_env=False) as http:
        for given, status in ((token, 401), (rotated, 200)):
            sent = headers | {"Authorization": f"Bearer {given}"}
            assert http.post(url, json=INITIALIZE, headers=sent).status_code == status


def test_a_token_file_others_could_read_is_refused(corpus: McpCorpus, tmp_path: Path) -> None:
    token_file = tmp_path / "data" / "secrets" / "mcp.token"
    token_file.parent.mkdir(parents=True, mode=0o700)
    token_file.write_text("x" * 43 + "\n")
    token_file.chmod(0o644)
    env = {"GARAGE_CONFIG": str(corpus.config_file), "GARAGE_DATA_DIR": str(tmp_path / "data")}
    result = CliRunner().invoke(cli, ["mcp", "token"], env=env)
    assert result.exit_code == 1
    assert str(token_file) in result.output and "readable by other accounts" in result.output
