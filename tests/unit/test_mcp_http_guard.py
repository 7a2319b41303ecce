"""`garage mcp-serve` on loopback, as ``http_app`` builds it: the SDK's DNS-rebinding protection
answers a forged Host with 421 and another site's Origin with 403, before any tool runs, even
for a request that carries the token."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer
from starlette.testclient import TestClient

from garage.mcp.http import MCP_PATH, http_app

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
TOKEN = "t" * 43
# With the owner's token, so what answers is the rebinding protection behind it.
ACCEPT = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    "Authorization": f"Bearer {TOKEN}",
}


def test_a_forged_host_or_another_sites_origin_is_refused() -> None:
    app = http_app(MCPServer("probe"), host="127.0.0.1", token=TOKEN)
    with TestClient(app, base_url="http://127.0.0.1:8765") as client:
        forged = client.post(
            MCP_PATH, json=INITIALIZE, headers=ACCEPT | {"Host": "attacker.example:8765"}
        )
        assert forged.status_code == 421
        other = client.post(
            MCP_PATH, json=INITIALIZE, headers=ACCEPT | {"Origin": "http://attacker.example"}
        )
        assert other.status_code == 403
        own = client.post(MCP_PATH, json=INITIALIZE, headers=ACCEPT)
        assert own.status_code == 200
