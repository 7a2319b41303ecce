"""A llama-server started as scripts/llama starts it (--api-key-file) answers only requests
carrying its key: a web page, which cannot know it, gets 401 whatever Host or Origin it sends;
Garage's client reads the key from its owner-only file and is served."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from garage.inference import EgressGuard, InferenceClient
from garage.inference.errors import InferenceError
from garage.inference.model_key import auth_headers
from tests.conftest import LlamaServers
from tests.servers import cached_model, llama_server


@pytest.fixture
def keyed_server(llama: LlamaServers, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A MiniLM embedding server of its own, with a key; (its URL, the key file)."""
    key_file = tmp_path / "llama.key"
    key_file.write_text(secrets.token_urlsafe(32) + "\n")
    key_file.chmod(0o600)
    args = ["--embeddings", "-c", "512", "--threads", "1", "--api-key-file", str(key_file)]
    model = cached_model("all-minilm-l6-v2-f16.gguf")
    with llama_server(model, llama.embed_model, args, tmp_path / "server.log") as url:
        yield url, key_file


def test_without_the_key_nothing_is_served(keyed_server: tuple[str, Path]) -> None:
    url, _ = keyed_server
    body = {"model": "all-minilm-l6-v2", "input": ["a page wants this"]}
    port = url.rsplit(":", 1)[1]
    with httpx.Client(base_url=url, trust_env=False, timeout=30) as http:
        for headers in (
            {},
            {"Origin": "http://attacker.example"},
            {"Host": f"attacker.example:{port}", "Origin": f"http://attacker.example:{port}"},
            {"Authorization": "Bearer not-the-key"},
        ):
            assert http.post("/v1/embeddings", json=body, headers=headers).status_code == 401
            assert http.get("/slots", headers=headers).status_code == 401


def test_garages_client_sends_the_key_from_its_file(
    keyed_server: tuple[str, Path], llama: LlamaServers, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, key_file = keyed_server
    monkeypatch.setenv("GARAGE_LLAMA_API_KEY_FILE", str(key_file))
    with InferenceClient(EgressGuard([url]), retries=0) as client:
        result = client.embed("llama_server", url, llama.embed_model, ["the night ferry"])
    assert len(result.vectors[0]) == llama.embed_dimensions

    monkeypatch.setenv("GARAGE_LLAMA_API_KEY_FILE", str(key_file.with_name("missing.key")))
    with InferenceClient(EgressGuard([url]), retries=0) as client:
        with pytest.raises(InferenceError):
            client.embed("llama_server", url, llama.embed_model, ["the night ferry"])


def test_the_key_goes_only_to_loopback_llama_servers() -> None:
    key = "k" * 40
    assert auth_headers("llama_server", "http://127.0.0.1:18080", key) == {
        "Authorization": f"Bearer {key}"
    }
    assert auth_headers("llama_server", "http://192.168.1.20:8080", key) == {}
    assert auth_headers("ollama", "http://127.0.0.1:11434", key) == {}
    assert auth_headers("llama_server", "http://127.0.0.1:18080", None) == {}
