"""One client for the local inference servers: Ollama, LM Studio and llama-server.

Built on httpx, with no ollama or openai SDK: each request is built by Garage and sent only
after the egress guard approved its destination (``EgressGuard.check`` runs before the
transport is touched). One class written in three parts, each in garage.inference: the
connection (``transport``), embeddings (``embeddings``) and chat (``chat_requests``), whose
options travel as one record (``options``). The three dialects:

- **Ollama**: ``/api/embed`` and ``/api/chat``; JSON mode is ``format`` (a schema or "json"),
  and extraction runs at temperature 0.1, as LangExtract's own Ollama provider sends.
- **LM Studio**: the OpenAI-compatible ``/v1/embeddings`` and ``/v1/chat/completions``; JSON is
  ``response_format`` with a JSON schema (it refuses ``json_object``).
- **llama-server** (this port's counterpart of the app's llama_xpc provider): the same OpenAI
  routes, and ``response_format`` with a JSON schema, which it turns into a grammar; its
  ``/tokenize`` counts a prompt's tokens and ``/props`` tells a slot's context.

Replies can also be streamed (``chat_stream``: SSE, or NDJSON for Ollama) under a wall-clock
limit and a cancel flag; see ``garage.inference.stream``.

Connection failures are retried with backoff; a server that stays down, or a model it has not
loaded, is reported with what to do about it. An input longer than the model's context never
fails its batch: the batch is split until the culprit is alone, which is then cut down until it
fits and recorded as truncated.
"""

from __future__ import annotations

from garage.inference.chat_requests import ChatRequests
from garage.inference.dialects import Message, Provider
from garage.inference.embeddings import EmbeddingRequests, EmbedResult
from garage.inference.errors import (
    ContextExceeded,
    EgressRefused,
    InferenceError,
    ModelNotLoaded,
    ServerUnavailable,
)

EXTRACTION_TEMPERATURE = 0.1

__all__ = [
    "EXTRACTION_TEMPERATURE",
    "ContextExceeded",
    "EgressRefused",
    "EmbedResult",
    "InferenceClient",
    "InferenceError",
    "Message",
    "ModelNotLoaded",
    "Provider",
    "ServerUnavailable",
]


class InferenceClient(EmbeddingRequests, ChatRequests):
    """The one client for Ollama, LM Studio and llama-server: embeddings, chat, and what a
    server offers, every request through the egress guard (garage.inference.transport)."""
