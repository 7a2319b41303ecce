"""The egress guard decides before any connection: allowlist, loopback for communications,
no cloud model ids."""

from __future__ import annotations

import logging
from pathlib import Path

import httpx
import pytest

from garage.config import GarageConfig
from garage.inference import (
    EgressGuard,
    EgressRefused,
    InferenceClient,
    is_cloud_model,
    is_loopback,
)
from garage.inference.egress import configured_hosts, note_allowlist


def _never_called(request: httpx.Request) -> httpx.Response:
    pytest.fail(f"the guard let a request through to {request.url}")


NEVER = httpx.MockTransport(_never_called)


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080",
        "http://127.8.9.10",
        "http://localhost:11434",
        "http://[::1]:1234",
        "https://LOCALHOST./x",
    ],
)
def test_loopback(url: str) -> None:
    assert is_loopback(url)


@pytest.mark.parametrize(
    "url",
    [
        "http://10.0.0.5:11434",
        "http://192.168.1.2",
        "http://[::2]:80",
        "http://example.org",
        "http://localhost.example.org",
        "http://127.0.0.1.nip.io",
        # Reserved for loopback by RFC 6761, but only loopback where the resolver makes it so
        # (garage.loopback): never decided by a lookup.
        "http://api.localhost:1",
        "http://0.0.0.0:8080",
    ],
)
def test_not_loopback(url: str) -> None:
    assert not is_loopback(url)


@pytest.mark.parametrize(
    "model",
    [
        "gemini-1.5-pro",
        "gpt-4o",
        "GPT-4o-mini",
        "openai/gpt-4.1",
        "claude-3-opus",
        "o1-preview",
        "o3",
        "text-embedding-3-large",
        "text-embedding-ada-002",
    ],
)
def test_cloud_model_ids(model: str) -> None:
    assert is_cloud_model(model)


@pytest.mark.parametrize(
    "model",
    [
        "bge-m3",
        "nomic-embed-text",
        "gemma2:2b",
        "llama3.1:8b",
        "all-minilm-l6-v2",
        "google/gemma-3-4b",
        "smollm2-135m-instruct",
        "qwen2.5:7b",
        "ogpt",
    ],
)
def test_local_model_ids(model: str) -> None:
    assert not is_cloud_model(model)


def test_allowlist_is_the_configured_hosts() -> None:
    config = GarageConfig.model_validate(
        {
            "inference": {"ollama_host": "http://10.0.0.5:11434"},
            "egress": {"allowed_hosts": ["http://gpu-box.lan:8080"]},
        }
    )
    guard = EgressGuard.from_config(config)
    guard.check("http://10.0.0.5:11434/api/embed")
    guard.check("http://gpu-box.lan:8080")
    guard.check("http://127.0.0.1:8080")  # the default llama-server host
    with pytest.raises(EgressRefused, match="not a configured model host"):
        guard.check("http://10.0.0.6:11434")
    with pytest.raises(EgressRefused, match="not a configured model host"):
        guard.check("http://10.0.0.5:11435")  # same host, other port
    assert "http://gpu-box.lan:8080" in configured_hosts(config)


def test_communications_only_go_to_loopback() -> None:
    guard = EgressGuard(["http://10.0.0.5:11434", "http://127.0.0.1:11434"])
    guard.check("http://10.0.0.5:11434", corpus_classes=["document", "code"])
    guard.check("http://127.0.0.1:11434", corpus_classes=["communication"])
    with pytest.raises(EgressRefused, match="communication"):
        guard.check("http://10.0.0.5:11434", corpus_classes=["document", "communication"])


def test_cloud_ids_refused_even_on_loopback() -> None:
    guard = EgressGuard(["http://127.0.0.1:11434"])
    with pytest.raises(EgressRefused, match="cloud"):
        guard.check("http://127.0.0.1:11434", model_id="gpt-4o")


def test_malformed_host_is_refused_clearly() -> None:
    with pytest.raises(EgressRefused, match="not an http"):
        EgressGuard(["ftp://127.0.0.1"])
    guard = EgressGuard(["http://127.0.0.1:1"])
    with pytest.raises(EgressRefused, match="(?i)port"):
        guard.check("http://127.0.0.1:99999")


def test_client_refuses_before_any_connection() -> None:
    guard = EgressGuard(["http://10.0.0.5:11434", "http://127.0.0.1:8080"])
    with InferenceClient(guard, transport=NEVER) as client:
        with pytest.raises(EgressRefused, match="communication"):
            client.embed(
                "ollama",
                "http://10.0.0.5:11434",
                "bge-m3",
                ["a private mail"],
                corpus_classes={"communication"},
            )
        with pytest.raises(EgressRefused, match="communication"):
            client.chat(
                "ollama",
                "http://10.0.0.5:11434",
                "gemma2:2b",
                [{"role": "user", "content": "hi"}],
                corpus_classes={"communication"},
            )
        with pytest.raises(EgressRefused, match="not a configured"):
            client.embed("llama_server", "http://203.0.113.9:8080", "m", ["text"])
        with pytest.raises(EgressRefused, match="cloud"):
            client.chat(
                "lmstudio", "http://127.0.0.1:8080", "gpt-4o", [{"role": "user", "content": "x"}]
            )
        with pytest.raises(EgressRefused):
            client.models("ollama", "http://203.0.113.9:11434")


def test_client_requires_a_guard() -> None:
    with pytest.raises(TypeError, match="EgressGuard"):
        InferenceClient(None)  # type: ignore[arg-type]


def test_widening_the_allowlist_is_logged(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    state = tmp_path / "egress.json"
    caplog.set_level(logging.INFO, logger="garage.inference.egress")
    assert note_allowlist(EgressGuard(["http://127.0.0.1:8080"]), state) == []
    assert note_allowlist(EgressGuard(["http://127.0.0.1:8080"]), state) == []
    added = note_allowlist(EgressGuard(["http://127.0.0.1:8080", "http://10.0.0.5:11434"]), state)
    assert added == ["http://10.0.0.5:11434"]
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "10.0.0.5" in warnings[0].getMessage()
