"""``garage mcp-serve``: the MCP server over streamable HTTP.

Bound to 127.0.0.1 by default. Anywhere beyond loopback (as garage.loopback decides it) needs
a bearer token (``GARAGE_MCP_TOKEN``, never the config file, which other tools read and back
up): the index holds private mail and chats, and a port on the network is open to every
machine that can reach it. The token
is compared in constant time; a request without it gets 401 before it reaches the MCP layer.
"""

from __future__ import annotations

import hmac
import json
from typing import Any

from mcp.server.mcpserver import MCPServer

from garage import loopback

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
            if not hmac.compare_digest(given, self.expected):
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


def http_app(server: MCPServer, *, host: str, token: str | None) -> Any:
    """The ASGI app: the SDK's streamable HTTP app, behind the token when there is one."""
    check_binding(host, token)
    # On loopback the SDK also checks Host and Origin headers (DNS rebinding protection).
    app = server.streamable_http_app(streamable_http_path=MCP_PATH, host=host)
    return BearerAuth(app, token) if token is not None else app


def serve(server: MCPServer, *, host: str, port: int, token: str | None) -> None:
    import uvicorn

    app = http_app(server, host=host, token=token)
    uvicorn.run(app, host=host, port=port, log_level="warning")
