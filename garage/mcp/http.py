"""``garage mcp-serve``: the MCP server over streamable HTTP.

Bound to 127.0.0.1 by default. Anywhere else needs a bearer token (``GARAGE_MCP_TOKEN``,
never the config file, which other tools read and back up): the index holds private mail
and chats, and a port on the network is open to every machine that can reach it. The token
is compared in constant time; a request without it gets 401 before it reaches the MCP layer.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
from typing import Any

from mcp.server.mcpserver import MCPServer

MIN_TOKEN_CHARS = 16
MCP_PATH = "/mcp"

Scope = dict[str, Any]


class TokenRequired(ValueError):
    """Serving beyond loopback without a bearer token (or with a weak one)."""


def is_loopback_address(host: str) -> bool:
    """Whether a bind address is this machine only (decided from the address, never DNS)."""
    host = host.strip().strip("[]").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_binding(host: str, token: str | None) -> None:
    """Refuse a binding the index should not be served on."""
    if token is not None and len(token) < MIN_TOKEN_CHARS:
        raise TokenRequired(f"the bearer token must be at least {MIN_TOKEN_CHARS} characters")
    if token is None and not is_loopback_address(host):
        raise TokenRequired(
            f"serving on {host}, beyond this machine, needs a bearer token: set GARAGE_MCP_TOKEN "
            "(e.g. `export GARAGE_MCP_TOKEN=$(python3 -c 'import secrets; "
            "print(secrets.token_urlsafe(32))')`) and send it as `Authorization: Bearer …`"
        )


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
