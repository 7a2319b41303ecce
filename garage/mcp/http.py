"""``garage mcp-serve``: the MCP server over streamable HTTP.

Bound to 127.0.0.1 by default, and behind a bearer token always, loopback included: any
local account can connect to a loopback port, and the index holds the owner's mail and chats.
The token is the owner's (garage.tokens: made once into an owner-only file under the data
folder) unless ``GARAGE_MCP_TOKEN`` names another — never the config file, which other tools
read and back up. It is compared in constant time; a request without it gets 401 before it
reaches the MCP layer. A binding beyond loopback (as garage.loopback decides it) is refused
without a token long enough to guess at.
"""

from __future__ import annotations

import json
from typing import Any

from mcp.server.mcpserver import MCPServer

from garage import loopback, tokens

TOKEN_VARIABLE = "GARAGE_MCP_TOKEN"
MCP_PATH = "/mcp"

Scope = dict[str, Any]


def check_binding(host: str, token: str | None) -> None:
    """Refuse a binding the index should not be served on (garage.loopback's rule, with the
    token from GARAGE_MCP_TOKEN)."""
    loopback.check_binding(host, token, token_variable=TOKEN_VARIABLE)


class BearerAuth:
    """ASGI middleware: every HTTP request must carry ``Authorization: Bearer <token>``."""

    def __init__(self, app: Any, token: str):
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not tokens.matches(given, self.expected):
                await _unauthorized(send)
                return
        await self.app(scope, receive, send)


async def _unauthorized(send: Any) -> None:
    body = json.dumps({"error": "unauthorized: send Authorization: Bearer <token>"}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 401,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"www-authenticate", b'Bearer realm="garage"'),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def http_app(server: MCPServer, *, host: str, token: str) -> Any:
    """The ASGI app: the SDK's streamable HTTP app, behind the token."""
    check_binding(host, token)
    # On loopback the SDK also checks Host and Origin headers (DNS rebinding protection).
    app = server.streamable_http_app(streamable_http_path=MCP_PATH, host=host)
    return BearerAuth(app, token)


def serve(server: MCPServer, *, host: str, port: int, token: str) -> None:
    import uvicorn

    app = http_app(server, host=host, token=token)
    uvicorn.run(app, host=host, port=port, log_level="warning")
