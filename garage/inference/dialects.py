"""How each local server spells a chat request and its reply (Ollama vs the OpenAI-compatible
LM Studio and llama-server)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

Provider = Literal["ollama", "lmstudio", "llama_server"]
Message = dict[str, str]


def chat_body(
    provider: Provider,
    model_id: str,
    messages: Sequence[Message],
    json_schema: dict[str, Any] | None,
    temperature: float | None,
    max_tokens: int | None,
    *,
    stream: bool,
) -> tuple[str, dict[str, Any]]:
    """The route and body of a chat request in the provider's dialect."""
    copied = [dict(m) for m in messages]
    if provider == "ollama":
        options: dict[str, Any] = {}
        if temperature is not None:
            options["temperature"] = temperature
        if max_tokens is not None:
            options["num_predict"] = max_tokens
        body: dict[str, Any] = {"model": model_id, "messages": copied, "stream": stream}
        if options:
            body["options"] = options
        if json_schema is not None:
            body["format"] = json_schema  # Ollama turns a schema into a grammar
        return "/api/chat", body
    body = {"model": model_id, "messages": copied, "stream": stream}
    if temperature is not None:
        body["temperature"] = temperature
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    if json_schema is not None:
        # Both OpenAI-compatible servers constrain output to a JSON schema (llama-server turns
        # it into a grammar); LM Studio refuses "json_object" but takes "json_schema".
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "reply", "strict": True, "schema": json_schema},
        }
    return "/v1/chat/completions", body


def content_of(provider: Provider, data: dict[str, Any]) -> Any:
    if provider == "ollama":
        return (data.get("message") or {}).get("content")
    choices = data.get("choices") or [{}]
    return (choices[0].get("message") or {}).get("content")
