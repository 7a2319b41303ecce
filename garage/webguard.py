"""Who may talk to a web UI served on loopback: the guard in front of the Dagster webserver.

Binding to 127.0.0.1 keeps other machines out, but not web pages: any page the owner opens can
send requests to a loopback port. Two ways in are closed here.

- **DNS rebinding**: a page on ``attacker.example`` re-points that name at 127.0.0.1 and then
  reads responses as its own origin. Its requests carry ``Host: attacker.example:PORT``, so
  only the names of the bound address are answered (421, as the MCP server answers).
- **Cross-site requests**: a page can POST a form or open a WebSocket to 127.0.0.1:PORT with
  the right Host, and browsers send neither kind through CORS. They do send ``Origin``, so a
  request that can change something (any method but GET, HEAD and OPTIONS, and every
  WebSocket, which may read subscriptions) is refused (403) when its Origin is another site.
  Dagster runs a GraphQL query given in a GET's query string, mutations too, which an
  ``<img>`` tag could trigger: a mutation over GET is refused (405, as GraphQL over HTTP says).

Clients that are not browsers (curl, scripts) send no Origin and are let through: they can
open the port anyway, and what stops other accounts is the loopback binding, not this guard.
Dagster-free; the serving side is ``garage_assets.ui``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, MutableMapping
from typing import Any
from urllib.parse import parse_qs

Scope = MutableMapping[str, Any]
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def loopback_hosts(bind_host: str, port: int) -> frozenset[str]:
    """The Host header values a UI bound to ``bind_host:port`` answers: the loopback names
    (127.0.0.1, localhost, [::1]) and the bound address itself, each with the port; bare
    names too on port 80, where browsers leave the port out."""
    bound = bind_host.strip().strip("[]").lower()
    names = set(LOOPBACK_NAMES) | {f"[{bound}]" if ":" in bound else bound}
    hosts = {f"{name}:{port}" for name in names}
    if port == 80:
        hosts |= names
    return frozenset(hosts)


def is_graphql_mutation(query: str) -> bool:
    """Whether a GraphQL document holds a mutation (or cannot be read: then Dagster refuses
    it anyway, and refusing here too costs nothing)."""
    from graphql import OperationDefinitionNode, OperationType, parse
    from graphql.error import GraphQLError

    try:
        document = parse(query)
    except GraphQLError:
        return True
    return any(
        isinstance(node, OperationDefinitionNode) and node.operation is OperationType.MUTATION
        for node in document.definitions
    )


class LoopbackGuard:
    """ASGI middleware admitting only requests addressed to this machine, from its own pages."""

    def __init__(self, app: Any, allowed_hosts: Iterable[str], graphql_path: str = "/graphql"):
        self.app = app
        self.allowed_hosts = frozenset(host.lower() for host in allowed_hosts)
        self.allowed_origins = frozenset(f"http://{host}" for host in self.allowed_hosts)
        self.graphql_path = graphql_path

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] in ("http", "websocket"):
            refusal = self.refusal(scope)
            if refusal is not None:
                status, message = refusal
                if scope["type"] == "websocket":
                    # Closing before accepting makes the server answer the handshake with 403.
                    await send({"type": "websocket.close", "code": 1008, "reason": message})
                else:
                    await _refuse(send, status, message)
                return
        await self.app(scope, receive, send)

    def refusal(self, scope: Scope) -> tuple[int, str] | None:
        """(status, reason) when the request must be refused, None when it may go on."""
        headers = {name.lower(): value for name, value in scope.get("headers") or []}
        host = headers.get(b"host", b"").decode("latin-1").strip().lower()
        if host not in self.allowed_hosts:
            return 421, "misdirected request: this server answers only its loopback address"
        method = scope.get("method", "GET") if scope["type"] == "http" else "WEBSOCKET"
        origin = headers.get(b"origin")
        if method not in SAFE_METHODS and origin is not None:
            if origin.decode("latin-1").strip().lower() not in self.allowed_origins:
                return 403, "forbidden: a request from another site's page"
        if method == "GET" and scope.get("path") == self.graphql_path:
            query = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("query")
            if query and any(is_graphql_mutation(text) for text in query):
                return 405, "a GraphQL mutation must be sent with POST"
        return None


async def _refuse(send: Any, status: int, message: str) -> None:
    body = json.dumps({"error": message}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if status == 405:
        headers.append((b"allow", b"POST"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
