"""The local chat model behind rag_ask, rag_agent, rag_generate and fact distillation.

Built from ``inference.provider`` / ``inference.model`` (or ``facts.provider`` / ``facts.model``
while ``inference.model`` is empty), and always through the inference client, so every prompt
passes the egress guard with the classes of what it carries.
"""

from __future__ import annotations

import threading
from collections.abc import Generator, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Unpack

from garage.config import GarageConfig
from garage.inference.client import InferenceClient, Message, Provider
from garage.inference.egress import EgressGuard, is_loopback
from garage.inference.errors import InferenceError
from garage.inference.options import ChatOptions
from garage.inference.stream import Delta

# Ollama's default context since 0.6; LM Studio loads models with 4,096 unless told otherwise.
FALLBACK_CONTEXT_TOKENS = 4096
# With no tokenizer to ask, a conservative count: English runs ~4 characters a token, code and
# other scripts fewer, so 3 over-counts a little rather than overflows.
CHARS_PER_TOKEN = 3


@dataclass
class LocalChatModel:
    client: InferenceClient
    provider: Provider
    host: str
    model: str
    time_limit: float | None = None  # seconds one generation may take
    context_override: int | None = None  # inference.context_tokens
    _context: int | None = field(default=None, repr=False)

    @classmethod
    def from_config(
        cls, config: GarageConfig, client: InferenceClient | None = None
    ) -> LocalChatModel:
        inference = config.inference
        provider, model = inference.provider, inference.model
        if not model:
            provider, model = config.facts.provider, config.facts.model
        if not model:
            raise InferenceError(
                "no chat model is configured: set inference.model (and inference.provider) "
                "in the config"
            )
        if client is None:
            client = InferenceClient(
                EgressGuard.from_config(config), timeout=inference.timeout_seconds
            )
        return cls(
            client,
            provider,
            inference.host_for(provider),
            model,
            time_limit=inference.generation_seconds,
            context_override=inference.context_tokens,
        )

    @property
    def is_loopback(self) -> bool:
        return is_loopback(self.host)

    def stream(
        self,
        messages: Sequence[Message],
        *,
        corpus_classes: Iterable[str] = (),
        cancel: threading.Event | None = None,
        **options: Unpack[ChatOptions],
    ) -> Generator[Delta, None, None]:
        """The reply piece by piece, under the wall-clock limit; ``cancel`` stops it.
        ``top_logprobs`` asks for each token's likeliest alternatives (``Delta.alternatives``;
        empty where the server does not give them)."""
        return self.client.chat_stream(
            self.provider,
            self.host,
            self.model,
            messages,
            corpus_classes=corpus_classes,
            time_limit=self.time_limit,
            cancel=cancel,
            **options,
        )

    def complete(
        self,
        messages: Sequence[Message],
        *,
        corpus_classes: Iterable[str] = (),
        cancel: threading.Event | None = None,
        **options: Unpack[ChatOptions],
    ) -> str:
        """The whole reply. Streamed underneath, so the time limit and ``cancel`` stop the
        server's work too, not only the wait for it."""
        if options.get("json_mode"):
            # Ollama's JSON mode (fact extraction): one plain request, no stream to cut short.
            return self.client.chat(
                self.provider, self.host, self.model, messages,
                corpus_classes=corpus_classes, **options,
            )  # fmt: skip
        return "".join(
            delta.text
            for delta in self.stream(
                messages, corpus_classes=corpus_classes, cancel=cancel, **options
            )
        )

    def context_tokens(self) -> int:
        """The tokens one request may fill: what the server says, else the config, else
        a common default."""
        if self._context is None:
            told = self.client.context_tokens(self.provider, self.host)
            self._context = told or self.context_override or FALLBACK_CONTEXT_TOKENS
        return self._context

    def count_tokens(self, text: str, *, corpus_classes: Iterable[str] = ()) -> int:
        """``text``'s length in the model's tokens: counted by the server when it can,
        otherwise estimated on the high side."""
        counted = self.client.tokens(
            self.provider, self.host, self.model, text, corpus_classes=corpus_classes
        )
        return counted if counted is not None else -(-len(text) // CHARS_PER_TOKEN)
