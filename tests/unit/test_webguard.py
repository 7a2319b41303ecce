"""The loopback guard in front of the Dagster UI, over a small ASGI app: which Host, Origin and
GraphQL-over-GET requests it lets through. The real webserver behind it is tested in
tests/dagster/test_ui_guard.py."""

from __future__ import annotations

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route, WebSocketRoute
from starlette.testclient import TestClient
from starlette.websockets import WebSocket, WebSocketDisconnect

from garage.loopback import is_loopback_address
from garage.webguard import LoopbackGuard, is_graphql_mutation, loopback_hosts

PORT = 3000


async def _echo(request: Request) -> PlainTextResponse:
    return PlainTextResponse(request.method)


async def _ws(websocket: WebSocket) -> None:
    await websocket.accept()
    await websocket.send_text("hello")
    await websocket.close()


def _client() -> TestClient:
    app = Starlette(
        routes=[
            Route("/graphql", _echo, methods=["GET", "POST"]),
            Route("/server_info", _echo, methods=["GET", "POST"]),
            WebSocketRoute("/graphql", _ws),
        ]
    )
    guarded = LoopbackGuard(app, loopback_hosts("127.0.0.1", PORT))
    return TestClient(guarded, base_url=f"http://127.0.0.1:{PORT}")


def test_loopback_hosts_are_the_bound_names_with_the_port() -> None:
    assert loopback_hosts("127.0.0.1", PORT) == {
        "127.0.0.1:3000",
        "localhost:3000",
        "[::1]:3000",
    }
    assert "[::1]:8080" in loopback_hosts("::1", 8080)
    assert "localhost" in loopback_hosts("127.0.0.1", 80)
    assert is_loopback_address("127.0.0.2") and is_loopback_address("[::1]")
    assert not is_loopback_address("0.0.0.0") and not is_loopback_address("192.168.1.2")


@pytest.mark.parametrize(
    "host", ["127.0.0.1:3000", "localhost:3000", "LOCALHOST:3000", "[::1]:3000"]
)
def test_the_bound_names_are_answered(host: str) -> None:
    response = _client().get("/server_info", headers={"Host": host})
    assert response.status_code == 200


@pytest.mark.parametrize(
    "host",
    [
        "attacker.example:3000",
        "attacker.example",
        "127.0.0.1",
        "localhost:3001",
        "127.0.0.1.nip.io:3000",
        "",
    ],
)
def test_a_forged_host_gets_421(host: str) -> None:
    client = _client()
    assert client.get("/server_info", headers={"Host": host}).status_code == 421
    assert (
        client.post("/graphql", headers={"Host": host}, json={"query": "{ a }"}).status_code == 421
    )


def test_state_changing_requests_from_another_site_get_403() -> None:
    client = _client()
    for origin in (
        "http://attacker.example",
        "null",
        "http://127.0.0.1:3001",
        "https://127.0.0.1:3000",
    ):
        response = client.post("/graphql", headers={"Origin": origin}, json={"query": "{ a }"})
        assert response.status_code == 403, origin
    for origin in ("http://127.0.0.1:3000", "http://localhost:3000"):
        response = client.post("/graphql", headers={"Origin": origin}, json={"query": "{ a }"})
        assert response.status_code == 200, origin
    # No Origin: not a browser page; the loopback binding is what keeps others out.
    assert client.post("/graphql", json={"query": "{ a }"}).status_code == 200
    # A cross-site page may still load what it cannot read (the same-origin policy stops it).
    assert (
        client.get("/server_info", headers={"Origin": "http://attacker.example"}).status_code == 200
    )


def test_a_websocket_from_another_site_is_refused() -> None:
    client = _client()
    own = {"Host": "localhost:3000"}
    with client.websocket_connect(
        "/graphql", headers=own | {"Origin": "http://localhost:3000"}
    ) as ws:
        assert ws.receive_text() == "hello"
    with pytest.raises(WebSocketDisconnect):
        with client.websocket_connect(
            "/graphql", headers=own | {"Origin": "http://attacker.example"}
        ):
            pass
    with pytest.raises(WebSocketDisconnect):
        with client.websocket_connect("/graphql", headers={"Host": "attacker.example:3000"}):
            pass


def test_a_graphql_mutation_over_get_gets_405() -> None:
    client = _client()
    mutation = "mutation { wipeAssets(assetPartitionRanges: []) { __typename } }"
    response = client.get("/graphql", params={"query": mutation})
    assert response.status_code == 405 and response.headers["allow"] == "POST"
    assert client.get("/graphql", params={"query": "{ version }"}).status_code == 200
    assert client.post("/graphql", json={"query": mutation}).status_code == 200
    assert is_graphql_mutation("query A { a } mutation B { b }")
    assert not is_graphql_mutation("query A { a }")
