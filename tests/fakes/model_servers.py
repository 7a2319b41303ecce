"""FAKE Ollama and LM Studio servers on 127.0.0.1, written from their public API docs.

Neither server can be installed here; llama-server is the real peer in the integration tests.
These reproduce the contracts Garage's client depends on, and record every request so tests
can check what was sent:

- Ollama (docs.ollama.com/api): ``POST /api/embed`` {model, input, truncate} → {model,
  embeddings}; an input over the context with truncate=false → 400 {"error": "the input length
  exceeds the context length"}; ``POST /api/chat`` {model, messages, stream, format, options} →
  {model, message: {role, content}, done}; with ``stream`` (Ollama's default) the reply is
  NDJSON (``application/x-ndjson``), one {model, message: {role, content}, done: false} object
  per piece, then one with done: true and done_reason; an unknown model → 404 {"error": "model
  \"x\" not found, try pulling it first"}; ``GET /api/tags`` → {models: [{name}]}.
- LM Studio (OpenAI-compatible REST): ``/v1/embeddings`` → {data: [{index, embedding}]},
  ``/v1/chat/completions`` → {choices: [{message}]}, or with ``stream: true`` Server-Sent Events
  (``text/event-stream``): ``data: {"choices": [{"delta": {"content": ...}}]}`` per piece, a
  last chunk with finish_reason, then ``data: [DONE]``; ``/v1/models``. It refuses
  ``response_format: {"type": "json_object"}`` with a 400 and takes ``{"type": "json_schema",
  "json_schema": {"name", "strict", "schema"}}``.

The fakes' "model" is deterministic: a text's vector is derived from its characters, and its
length in "tokens" is its number of whitespace-separated words. A streamed reply is sent one
word at a time, ``stream_delay`` seconds apart; a client that goes away mid-stream is noticed
(``disconnected``), as a real server notices it when its next write fails.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def fake_vector(text: str, dims: int) -> list[float]:
    digest = hashlib.sha256(text.encode()).digest()
    return [((digest[i % 32] + i) % 17 - 8) / 8.0 for i in range(dims)]


@dataclass
class FakeState:
    models: set[str]
    dims: int = 8
    context_words: int = 50
    reply: str = '{"answer": "42"}'
    # Faults to inject: drop one vector from each answer; answer 503 this many times first.
    drop_one_vector: bool = False
    busy_responses: int = 0
    stream_delay: float = 0.0
    disconnected: threading.Event = field(default_factory=threading.Event)
    requests: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


class _Handler(BaseHTTPRequestHandler):
    flavour = "ollama"
    state: FakeState

    def log_message(self, *args: object) -> None:  # keep test output quiet
        pass

    def _send(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, kind: str, events: list[bytes]) -> None:
        """One event at a time; HTTP/1.0 framing, so the body ends when the server closes."""
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.end_headers()
        try:
            for event in events:
                self.wfile.write(event)
                self.wfile.flush()
                if self.state.stream_delay:
                    time.sleep(self.state.stream_delay)
        except (BrokenPipeError, ConnectionResetError):
            self.state.disconnected.set()

    def _pieces(self) -> list[str]:
        words = self.state.reply.split(" ")
        return [w if i == 0 else " " + w for i, w in enumerate(words)]

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        self.state.requests.append((self.path, {}))
        if self.flavour == "ollama" and self.path == "/api/tags":
            return self._send(200, {"models": [{"name": m} for m in sorted(self.state.models)]})
        if self.flavour == "lmstudio" and self.path == "/v1/models":
            return self._send(
                200, {"data": [{"id": m, "object": "model"} for m in sorted(self.state.models)]}
            )
        self._send(404, {"error": "not found"})

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length", 0))
        body = json.loads(self.rfile.read(length) or b"{}")
        self.state.requests.append((self.path, body))
        if self.state.busy_responses > 0:
            self.state.busy_responses -= 1
            return self._send(503, {"error": "server busy"})
        if self.flavour == "ollama":
            return self._ollama(body)
        return self._lmstudio(body)

    def _missing_model(self, model: str) -> bool:
        if model in self.state.models:
            return False
        if self.flavour == "ollama":
            self._send(404, {"error": f'model "{model}" not found, try pulling it first'})
        else:
            self._send(
                404,
                {
                    "error": {
                        "message": f"model '{model}' not found",
                        "type": "invalid_request_error",
                    }
                },
            )
        return True

    def _vectors(self, inputs: list[str]) -> list[list[float]]:
        vectors = [fake_vector(text, self.state.dims) for text in inputs]
        return vectors[:-1] if self.state.drop_one_vector else vectors

    def _too_long(self, inputs: list[str]) -> bool:
        return any(len(text.split()) > self.state.context_words for text in inputs)

    def _ollama(self, body: dict[str, Any]) -> None:
        if self._missing_model(body.get("model", "")):
            return
        if self.path == "/api/embed":
            inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
            if self._too_long(inputs):
                if body.get("truncate", True) is False:
                    return self._send(400, {"error": "the input length exceeds the context length"})
                inputs = [" ".join(t.split()[: self.state.context_words]) for t in inputs]
            return self._send(200, {"model": body["model"], "embeddings": self._vectors(inputs)})
        if self.path == "/api/chat" and body.get("stream", True):
            events = [
                json.dumps(
                    {"model": body["model"], "message": {"role": "assistant", "content": piece},
                     "done": False}
                ).encode() + b"\n"
                for piece in self._pieces()
            ]  # fmt: skip
            events.append(
                json.dumps(
                    {"model": body["model"], "message": {"role": "assistant", "content": ""},
                     "done": True, "done_reason": "stop"}
                ).encode() + b"\n"
            )  # fmt: skip
            return self._stream("application/x-ndjson", events)
        if self.path == "/api/chat":
            return self._send(
                200,
                {
                    "model": body["model"],
                    "message": {"role": "assistant", "content": self.state.reply},
                    "done": True,
                },
            )
        self._send(404, {"error": "404 page not found"})

    def _lmstudio(self, body: dict[str, Any]) -> None:
        if self._missing_model(body.get("model", "")):
            return
        if self.path == "/v1/embeddings":
            inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
            if self._too_long(inputs):
                return self._send(
                    400,
                    {
                        "error": {
                            "message": "Input length exceeds the model's context length",
                            "type": "invalid_request_error",
                        }
                    },
                )
            data = [
                {"object": "embedding", "index": i, "embedding": v}
                for i, v in enumerate(self._vectors(inputs))
            ]
            # Deliberately reversed: clients must order by "index", not by position.
            return self._send(
                200, {"object": "list", "data": list(reversed(data)), "model": body["model"]}
            )
        if self.path == "/v1/chat/completions":
            fmt = (body.get("response_format") or {}).get("type")
            if fmt == "json_object":
                return self._send(
                    400, {"error": "'response_format.type' must be 'json_schema' or 'text'"}
                )
            if fmt == "json_schema" and "schema" not in body["response_format"].get(
                "json_schema", {}
            ):
                return self._send(400, {"error": "'response_format.json_schema.schema' missing"})
            if body.get("stream"):
                chunks = [
                    {"object": "chat.completion.chunk",
                     "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}
                    for piece in self._pieces()
                ]  # fmt: skip
                chunks.append(
                    {"object": "chat.completion.chunk",
                     "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
                )  # fmt: skip
                events = [b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks]
                return self._stream("text/event-stream", [*events, b"data: [DONE]\n\n"])
            return self._send(
                200,
                {
                    "object": "chat.completion",
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": self.state.reply},
                            "finish_reason": "stop",
                        }
                    ],
                },
            )
        self._send(
            404, {"error": {"message": "Unexpected endpoint", "type": "invalid_request_error"}}
        )


@contextmanager
def fake_server(flavour: str, state: FakeState) -> Iterator[str]:
    """Serve the FAKE ``flavour`` ('ollama' or 'lmstudio') on 127.0.0.1; yield its base URL."""
    handler = type(
        f"Fake{flavour.title()}Handler", (_Handler,), {"flavour": flavour, "state": state}
    )
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
