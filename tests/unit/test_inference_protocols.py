"""The inference client against FAKE Ollama and LM Studio servers (tests/fakes/model_servers.py:
neither can run here, so each is written from its public API documentation). llama-server, the
real peer, is exercised in tests/integration/test_inference_llama.py."""

from __future__ import annotations

import json
import socket
import threading

import pytest

from garage.inference import (
    EgressGuard,
    InferenceClient,
    InferenceError,
    ModelNotLoaded,
    ServerUnavailable,
)
from garage.inference.stream import GenerationStopped
from tests.fakes.model_servers import FakeState, fake_server, fake_vector

SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}


def _client(url: str, **kwargs: object) -> InferenceClient:
    return InferenceClient(EgressGuard([url]), backoff=0.01, **kwargs)  # type: ignore[arg-type]


def test_ollama_embed_and_chat_requests() -> None:
    state = FakeState(models={"bge-m3", "gemma2:2b"})
    with fake_server("ollama", state) as url, _client(url) as client:
        result = client.embed("ollama", url, "bge-m3", ["one", "two"])
        assert result.vectors == [fake_vector("one", 8), fake_vector("two", 8)]
        assert result.truncated == [False, False]
        reply = client.chat(
            "ollama",
            url,
            "gemma2:2b",
            [{"role": "user", "content": "q"}],
            json_schema=SCHEMA,
            temperature=0.1,
            max_tokens=64,
        )
        assert json.loads(reply) == {"answer": "42"}
        assert client.models("ollama", url) == ["bge-m3", "gemma2:2b"]
    (embed_path, embed_body), (chat_path, chat_body) = state.requests[:2]
    assert embed_path == "/api/embed"
    assert embed_body == {"model": "bge-m3", "input": ["one", "two"], "truncate": False}
    assert chat_path == "/api/chat"
    assert chat_body["stream"] is False
    assert chat_body["format"] == SCHEMA  # Ollama's JSON mode
    assert chat_body["options"] == {"temperature": 0.1, "num_predict": 64}


def test_lmstudio_json_is_a_json_schema_response_format() -> None:
    state = FakeState(models={"nomic-embed-text", "google/gemma-3-4b"})
    with fake_server("lmstudio", state) as url, _client(url) as client:
        # The fake answers in reverse order; the client must restore it by index.
        result = client.embed("lmstudio", url, "nomic-embed-text", ["a", "b", "c"])
        assert result.vectors == [fake_vector(t, 8) for t in "abc"]
        messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "q"}]
        reply = client.chat("lmstudio", url, "google/gemma-3-4b", messages, json_schema=SCHEMA)
        assert json.loads(reply) == {"answer": "42"}
        assert client.models("lmstudio", url) == ["google/gemma-3-4b", "nomic-embed-text"]
    chat_body = state.requests[1][1]
    # LM Studio refuses "json_object" (the fake answers 400 to it) but constrains output to a
    # JSON schema.
    assert chat_body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "reply", "strict": True, "schema": SCHEMA},
    }
    assert chat_body["messages"] == messages


@pytest.mark.parametrize("flavour", ["ollama", "lmstudio"])
def test_streamed_chat_arrives_piece_by_piece(flavour: str) -> None:
    # Ollama streams NDJSON, LM Studio Server-Sent Events (fakes from their public contracts).
    state = FakeState(models={"m"}, reply="Exceptions are raised [1] and caught [2].")
    provider = "ollama" if flavour == "ollama" else "lmstudio"
    with fake_server(flavour, state) as url, _client(url) as client:
        deltas = list(
            client.chat_stream(provider, url, "m", [{"role": "user", "content": "q"}],
                               json_schema=SCHEMA, max_tokens=32)
        )  # fmt: skip
    texts = [d.text for d in deltas if d.text]
    assert len(texts) == len(state.reply.split(" ")) and "".join(texts) == state.reply
    assert deltas[-1].finish_reason == "stop"
    body = state.requests[-1][1]
    assert body["stream"] is True
    if flavour == "ollama":
        assert body["format"] == SCHEMA and body["options"] == {"num_predict": 32}
    else:
        assert body["response_format"]["json_schema"]["schema"] == SCHEMA


@pytest.mark.parametrize("flavour", ["ollama", "lmstudio"])
@pytest.mark.parametrize("stop", ["cancel", "time_limit"])
def test_a_stopped_stream_closes_its_connection(flavour: str, stop: str) -> None:
    state = FakeState(models={"m"}, reply=" ".join(["word"] * 200), stream_delay=0.02)
    provider = "ollama" if flavour == "ollama" else "lmstudio"
    cancel = threading.Event()
    received: list[str] = []
    with fake_server(flavour, state) as url, _client(url) as client:
        stream = client.chat_stream(
            provider, url, "m", [{"role": "user", "content": "q"}],
            cancel=cancel, time_limit=0.3 if stop == "time_limit" else None,
        )  # fmt: skip
        with pytest.raises(GenerationStopped) as stopped:
            for delta in stream:
                received.append(delta.text)
                if stop == "cancel" and len(received) == 5:
                    cancel.set()
        # The server notices the client went away: its next write fails.
        assert state.disconnected.wait(5)
    assert stopped.value.reason == ("cancelled" if stop == "cancel" else "time_limit")
    assert 5 <= len(received) < 200
    assert stopped.value.partial == "".join(received)


@pytest.mark.parametrize("flavour", ["ollama", "lmstudio"])
def test_missing_model_says_how_to_load_it(flavour: str) -> None:
    state = FakeState(models=set())
    hint = "ollama pull nomic" if flavour == "ollama" else "lms load nomic"
    with fake_server(flavour, state) as url, _client(url) as client:
        with pytest.raises(ModelNotLoaded, match=hint):
            client.embed(flavour, url, "nomic", ["x"])  # type: ignore[arg-type]


@pytest.mark.parametrize("flavour", ["ollama", "lmstudio"])
def test_input_over_the_context_is_truncated_and_recorded(flavour: str) -> None:
    state = FakeState(models={"m"}, context_words=20)
    long_text = " ".join(f"word{i}" for i in range(200))
    batch = ["short one", long_text, "short two", "short three"]
    with fake_server(flavour, state) as url, _client(url) as client:
        result = client.embed(flavour, url, "m", batch)  # type: ignore[arg-type]
    assert result.truncated == [False, True, False, False]
    assert result.vectors[0] == fake_vector("short one", 8)
    assert result.vectors[2] == fake_vector("short two", 8)
    # The batch is split in halves until the long input is alone (3 failed requests for 4
    # inputs), then its length is bisected (at most 7 requests): never a retry per input.
    assert len(state.requests) <= 3 + 2 + 7


def test_fewer_vectors_than_inputs_is_an_error() -> None:
    state = FakeState(models={"m"}, drop_one_vector=True)
    with fake_server("ollama", state) as url, _client(url) as client:
        with pytest.raises(InferenceError, match="returned 2 vectors for 3 inputs"):
            client.embed("ollama", url, "m", ["a", "b", "c"])


def test_empty_input() -> None:
    state = FakeState(models={"m"})
    with fake_server("ollama", state) as url, _client(url) as client:
        assert client.embed("ollama", url, "m", []).vectors == []
        with pytest.raises(ValueError, match="input 1 is empty"):
            client.embed("ollama", url, "m", ["a", "  "])
    assert state.requests == []


def test_busy_server_is_retried() -> None:
    state = FakeState(models={"m"}, busy_responses=2)
    with fake_server("ollama", state) as url, _client(url) as client:
        assert len(client.embed("ollama", url, "m", ["a"]).vectors) == 1
    assert len(state.requests) == 3


def test_server_down_is_reported_with_how_to_start_it() -> None:
    with socket.socket() as probe:  # a loopback port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    with _client(url, retries=2) as client:
        with pytest.raises(ServerUnavailable, match="ollama serve"):
            client.embed("ollama", url, "m", ["a"])
        with pytest.raises(ServerUnavailable, match="scripts/llama start"):
            client.chat("llama_server", url, "m", [{"role": "user", "content": "q"}])
