"""The local chat model behind rag_ask, rag_agent, rag_generate and fact distillation.

Built from ``inference.provider`` / ``inference.model`` (or ``facts.provider`` / ``facts.model``
while ``inference.model`` is empty), and always through the inference client, so every prompt
passes the egress guard with the classes of what it carries.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from garage.config import GarageConfig
from garage.inference.client import InferenceClient, Message, Provider
from garage.inference.egress import EgressGuard, is_loopback
from garage.inference.errors import InferenceError


@dataclass
class LocalChatModel:
    client: InferenceClient
    provider: Provider
    host: str
    model: str

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
        return cls(client, provider, inference.host_for(provider), model)

    @property
    def is_loopback(self) -> bool:
        return is_loopback(self.host)

    def complete(
        self,
        messages: Sequence[Message],
        *,
        corpus_classes: Iterable[str] = (),
        json_schema: dict[str, Any] | None = None,
        json_mode: bool = False,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> str:
        return self.client.chat(
            self.provider,
            self.host,
            self.model,
            messages,
            corpus_classes=corpus_classes,
            json_schema=json_schema,
            json_mode=json_mode,
            temperature=temperature,
            max_tokens=max_tokens,
        )
